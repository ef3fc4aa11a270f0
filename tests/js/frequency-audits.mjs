// Audit set-ups of the frequency oracles the browser ships (OUE, multi-select per bit and sampled,
// subset selection): for each, the inputs, the support of its reports numbered 0..outputs-1 (index
// maps a report to its number, undefined outside the support), a draw of the shipped randomizer
// mapped to that number, and the distribution its integer parameters declare. Shared by
// tests/js/frequency.test.mjs, tests/js/mechanism-conformance.test.mjs and bench/audit/frequency.mjs
// (docs/explanation/privacy.md, audits).

import { randomizeOUE } from '../../client_js/mechanisms/oue.js';
import { randomizeSubset } from '../../client_js/mechanisms/subset.js';
import { randomizeMulti } from '../../client_js/mechanisms/multi-bits.js';
import { randomizeMultiSampled } from '../../client_js/mechanisms/multi-sampled.js';

import { comparisonCount, drawsToDetect } from './epsilon-audit.mjs';

const TWO_53 = 2 ** 53;

/**
 * Return the draws per input an audit needs to catch an excess `delta` of epsilon with the
 * audit's power, at the most likely report whose declared ratio is ε′ (the easiest place to see it).
 */
export function auditSize(setup, delta) {
  const tables = setup.inputs.map(setup.declared);
  let best = null;
  tables.forEach((first, i) => tables.forEach((second, j) => {
    if (i === j) return;
    first.forEach((p, y) => {
      const q = second[y];
      if (Math.abs(Math.log(p / q) - setup.epsilon) < 1e-9 && (best === null || p > best.p)) best = { p, q };
    });
  }));
  return drawsToDetect({ delta, ...best, comparisons: comparisonCount(setup.inputs.length, setup.outputs) });
}

function bitsToNumber(bits) {
  return bits.reduce((acc, bit, i) => acc + bit * 2 ** i, 0);
}

function allBitVectors(d) {
  return Array.from({ length: 2 ** d }, (_, mask) => Array.from({ length: d }, (__, i) => (mask >> i) & 1));
}

function subsets(d, k) {
  const out = [];
  const walk = (start, chosen) => {
    if (chosen.length === k) { out.push([...chosen]); return; }
    for (let v = start; v < d; v += 1) walk(v + 1, [...chosen, v]);
  };
  walk(0, []);
  return out;
}

function binomial(n, k) {
  let value = 1;
  for (let i = 1; i <= k; i += 1) value = (value * (n - k + i)) / i;
  return value;
}

/** OUE on d options: every one of the 2^d bit vectors is a possible report; ε′ = ln((1−q)/q). */
export function oueAudit({ d, qThreshold, rnd }) {
  const q = qThreshold / TWO_53;
  const vectors = allBitVectors(d);
  return {
    name: `OUE d=${d}`,
    epsilon: Math.log((1 - q) / q),
    inputs: [...Array(d).keys()],
    outputs: vectors.length,
    index: bitsToNumber,
    draw: (x) => bitsToNumber(randomizeOUE(x, { d, qThreshold }, rnd)),
    declared: (x) => vectors.map((bits) => bits.reduce(
      (acc, bit, i) => acc * (i === x ? 0.5 : (bit ? q : 1 - q)), 1)),
  };
}

/** Multi-select, every bit through RR: inputs are all 2^d answers; ε′ = d·ln((1−f)/f). */
export function multiRRAudit({ d, flipThreshold, rnd }) {
  const f = flipThreshold / TWO_53;
  const vectors = allBitVectors(d);
  return {
    name: `multi per bit d=${d}`,
    epsilon: d * Math.log((1 - f) / f),
    inputs: vectors,
    outputs: vectors.length,
    index: bitsToNumber,
    draw: (answer) => bitsToNumber(randomizeMulti(answer, { flipThreshold }, rnd)),
    declared: (answer) => vectors.map((bits) => bits.reduce(
      (acc, bit, i) => acc * (bit === answer[i] ? 1 - f : f), 1)),
  };
}

/** Multi-select, one option drawn and its bit through RR: reports are all-zero (0) or one-hot j (j+1). */
export function multiSampledAudit({ d, flipThreshold, rnd }) {
  const f = flipThreshold / TWO_53;
  return {
    name: `multi sampled d=${d}`,
    epsilon: Math.log((1 - f) / f),
    inputs: allBitVectors(d),
    outputs: d + 1,
    index: (report) => report.indexOf(1) + 1,
    draw: (answer) => randomizeMultiSampled(answer, { flipThreshold }, rnd).indexOf(1) + 1,
    declared: (answer) => {
      const one = answer.map((bit) => (bit ? 1 - f : f) / d);
      return [one.reduce((acc, p) => acc + 1 / d - p, 0), ...one];
    },
  };
}

/** Subset selection of k of d: the C(d, k) subsets are the reports; ε′ = ln(p/(1−p)·(d−k)/k). */
export function subsetAudit({ d, k, keepThreshold, rnd }) {
  const p = keepThreshold / TWO_53;
  const all = subsets(d, k);
  const index = new Map(all.map((members, i) => [bitsToNumber(Array.from({ length: d }, (_, v) => (members.includes(v) ? 1 : 0))), i]));
  const inside = p / binomial(d - 1, k - 1);
  const outside = (1 - p) / binomial(d - 1, k);
  return {
    name: `subset selection d=${d} k=${k}`,
    epsilon: Math.log((p / (1 - p)) * ((d - k) / k)),
    inputs: [...Array(d).keys()],
    outputs: all.length,
    index: (report) => index.get(bitsToNumber(report)),
    draw: (x) => index.get(bitsToNumber(randomizeSubset(x, { d, k, keepThreshold }, rnd))),
    declared: (x) => all.map((members) => (members.includes(x) ? inside : outside)),
  };
}
