// Output frequencies of every randomizer in client_js/mechanisms/ against its integer
// thresholds: Pearson chi-square at alpha = 1e-4 per test, seeded word source.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import { randomizeQuestion } from '../../client_js/mechanisms/index.js';
import { randomizeRR } from '../../client_js/mechanisms/warner.js';
import { randomizeGRR } from '../../client_js/mechanisms/grr.js';
import { randomizeOUE } from '../../client_js/mechanisms/oue.js';
import { randomizeMulti } from '../../client_js/mechanisms/multi-bits.js';
import { randomizeDuchi } from '../../client_js/mechanisms/duchi.js';
import { randomizePiecewise } from '../../client_js/mechanisms/piecewise.js';
import { randomizeHybrid } from '../../client_js/mechanisms/hybrid.js';
import { chiSquare, chiSquareCritical, readVectors, seededFill, TWO_53 } from './helpers.mjs';

const ROWS = readVectors().thresholds;
const row = (epsilon, d) => ROWS.find((r) => r.epsilon === epsilon && r.d === d);
const N = 100000;

function assertFits(counts, probabilities, label) {
  const df = probabilities.length - 1;
  const stat = chiSquare(counts, probabilities);
  assert.ok(stat < chiSquareCritical(df), `${label}: chi-square ${stat.toFixed(2)} >= ${chiSquareCritical(df).toFixed(2)} (df ${df})`);
}

/** Sum of squared z-scores of independent bits: chi-square with one df per bit. */
function assertBitsFit(ones, n, probabilities, label) {
  let stat = 0;
  probabilities.forEach((p, i) => { stat += (ones[i] - n * p) ** 2 / (n * p * (1 - p)); });
  const df = probabilities.length;
  assert.ok(stat < chiSquareCritical(df), `${label}: chi-square ${stat.toFixed(2)} >= ${chiSquareCritical(df).toFixed(2)} (df ${df})`);
}

test('RR at epsilon 1 flips with probability T/2^53, for both inputs', () => {
  const { rr_flip_threshold: flipThreshold } = row(1, 2);
  const f = flipThreshold / TWO_53;
  const rnd = makeRandom(seededFill(101));
  for (const bit of [0, 1]) {
    const counts = [0, 0];
    for (let i = 0; i < N; i += 1) counts[randomizeRR(bit, { flipThreshold }, rnd)] += 1;
    assertFits(counts, bit === 1 ? [f, 1 - f] : [1 - f, f], `RR(${bit})`);
  }
});

test('GRR at epsilon 1, d = 5 keeps w.p. T/2^53 and spreads the rest evenly', () => {
  const d = 5;
  const { grr_keep_threshold: keepThreshold } = row(1, d);
  const p = keepThreshold / TWO_53;
  const rnd = makeRandom(seededFill(102));
  for (const x of [0, 2, 4]) {
    const counts = new Array(d).fill(0);
    for (let i = 0; i < N; i += 1) counts[randomizeGRR(x, { d, keepThreshold }, rnd)] += 1;
    const expected = Array.from({ length: d }, (_, v) => (v === x ? p : (1 - p) / (d - 1)));
    assertFits(counts, expected, `GRR(${x})`);
  }
});

test('OUE at epsilon 1, d = 20: true bit 1 w.p. 1/2, others w.p. T/2^53', () => {
  const d = 20;
  const { oue_q_threshold: qThreshold } = row(1, d);
  const q = qThreshold / TWO_53;
  const rnd = makeRandom(seededFill(103));
  for (const x of [0, 19]) {
    const ones = new Array(d).fill(0);
    const n = 50000;
    for (let i = 0; i < n; i += 1) {
      const bits = randomizeOUE(x, { d, qThreshold }, rnd);
      assert.equal(bits.length, d);
      bits.forEach((b, j) => { ones[j] += b; });
    }
    assertBitsFit(ones, n, Array.from({ length: d }, (_, j) => (j === x ? 0.5 : q)), `OUE(${x})`);
  }
});

test('multi flips every option bit independently with the per-option threshold', () => {
  const { rr_flip_threshold: flipThreshold } = row(0.5, 2);
  const f = flipThreshold / TWO_53;
  const truth = [1, 0, 1, 1, 0];
  const rnd = makeRandom(seededFill(104));
  const ones = new Array(truth.length).fill(0);
  const n = 50000;
  for (let i = 0; i < n; i += 1) {
    randomizeMulti(truth, { flipThreshold }, rnd).forEach((b, j) => { ones[j] += b; });
  }
  assertBitsFit(ones, n, truth.map((t) => (t ? 1 - f : f)), 'multi');
});

test('Duchi reports 1 w.p. r(1-f) + (1-r)f with r = (x-min)/(max-min)', () => {
  const { rr_flip_threshold: flipThreshold } = row(1, 2);
  const f = flipThreshold / TWO_53;
  const rnd = makeRandom(seededFill(105));
  for (const value of [18, 40, 90]) {
    const r = (value - 18) / 72;
    const counts = [0, 0];
    for (let i = 0; i < N; i += 1) counts[randomizeDuchi(value, { min: 18, max: 90, flipThreshold }, rnd)] += 1;
    const one = r * (1 - f) + (1 - r) * f;
    assertFits(counts, [1 - one, one], `Duchi(${value})`);
  }
});

test('randomizeQuestion dispatches on kind and mechanism', () => {
  const rnd = makeRandom(seededFill(106));
  const options = ['a', 'b', 'c'];
  assert.ok([0, 1].includes(randomizeQuestion({ id: 'y', kind: 'yes_no', mechanism: 'rr', flip_threshold: 0 }, 1, rnd)));
  assert.equal(randomizeQuestion({ id: 'y', kind: 'yes_no', mechanism: 'rr', flip_threshold: 0 }, 1, rnd), 1);
  assert.equal(randomizeQuestion({ id: 'c', kind: 'choice', mechanism: 'grr', options, keep_threshold: TWO_53 }, 2, rnd), 2);
  assert.equal(randomizeQuestion({ id: 'o', kind: 'choice', mechanism: 'oue', options, q_threshold: 0 }, 1, rnd).length, 3);
  assert.deepEqual(randomizeQuestion({ id: 'm', kind: 'multi', mechanism: 'rr', options, flip_threshold: 0 }, [1, 0, 1], rnd), [1, 0, 1]);
  assert.equal(randomizeQuestion({ id: 'n', kind: 'number', mechanism: 'duchi', min: 0, max: 10, flip_threshold: 0 }, 10, rnd), 1);
  assert.equal(randomizeQuestion({ id: 'n', kind: 'number', mechanism: 'duchi', min: 0, max: 10, flip_threshold: 0 }, 0, rnd), 0);
});

test('randomizers reject bad input and name the bad value', () => {
  const rnd = makeRandom(seededFill(107));
  const flipThreshold = 1000;
  assert.throws(() => randomizeRR(2, { flipThreshold }, rnd), (e) => e instanceof RangeError && /got 2/.test(e.message));
  assert.throws(() => randomizeRR(true, { flipThreshold }, rnd), /got true/);
  assert.throws(() => randomizeRR(1, { flipThreshold: 2 ** 54 }, rnd), (e) => e instanceof RangeError && /flipThreshold/.test(e.message));
  assert.throws(() => randomizeRR(1, {}, rnd), (e) => e instanceof TypeError && /got undefined/.test(e.message));
  assert.throws(() => randomizeGRR(5, { d: 5, keepThreshold: 1 }, rnd), (e) => e instanceof RangeError && /index .* got 5/.test(e.message));
  assert.throws(() => randomizeGRR(0, { d: 1, keepThreshold: 1 }, rnd), /d must be .* got 1/);
  assert.throws(() => randomizeOUE(-1, { d: 4, qThreshold: 1 }, rnd), /got -1/);
  assert.throws(() => randomizeMulti([1, 2], { flipThreshold }, rnd), /bits\[1\] must be 0 or 1, got 2/);
  assert.throws(() => randomizeMulti([], { flipThreshold }, rnd), TypeError);
  assert.throws(() => randomizeDuchi(91, { min: 18, max: 90, flipThreshold }, rnd), /value must be an integer from 18 to 90, got 91/);
  assert.throws(() => randomizeDuchi(40.5, { min: 18, max: 90, flipThreshold }, rnd), (e) => e instanceof TypeError && /40\.5/.test(e.message));
  assert.throws(() => randomizeDuchi(5, { min: 5, max: 5, flipThreshold }, rnd), /max must be/);
  assert.throws(() => randomizeQuestion({ id: 'q', kind: 'choice', mechanism: 'laplace' }, 0, rnd), /unsupported kind\/mechanism choice\/laplace/);
  assert.throws(() => randomizeQuestion({ id: 'm', kind: 'multi', mechanism: 'rr', options: ['a', 'b'], flip_threshold: 1 }, [1], rnd), /array of 2 bits/);
  assert.throws(() => randomizeQuestion(null, 0, rnd), TypeError);
});

test('piecewise levels stay in 0..a+b-1 and the band follows the answer (seeded)', () => {
  const rnd = makeRandom(seededFill(108));
  for (const [ratioA, ratioB] of [[4095, 1], [2564, 347], [217, 169], [3, 2]]) {
    const levels = ratioA + ratioB;
    for (const value of [0, 1, 49, 99, 100]) {
      let inBand = 0;
      const grid = Math.floor((value * ratioA) / 100);
      for (let i = 0; i < 2000; i += 1) {
        const level = randomizePiecewise(value, { min: 0, max: 100, ratioA, ratioB }, rnd);
        assert.ok(Number.isInteger(level) && level >= 0 && level < levels, `level ${level} of ${levels}`);
        if (level >= grid && level <= grid + ratioB) inBand += 1;
      }
      // The band (with the grid point above) holds at least a/(a+b) of the draws on average.
      assert.ok(inBand / 2000 > ratioA / levels - 0.05, `a=${ratioA} b=${ratioB} value ${value}: ${inBand}`);
    }
  }
  assert.ok([0, 1, 2, 3, 4].includes(randomizeQuestion(
    { id: 'n', kind: 'number', mechanism: 'piecewise', min: 0, max: 1, ratio_a: 3, ratio_b: 2, bins: 5 }, 1, rnd)));
});

test('randomizePiecewise rejects bad input and names the bad value', () => {
  const rnd = makeRandom(seededFill(109));
  const ok = { min: 18, max: 90, ratioA: 5, ratioB: 2 };
  assert.throws(() => randomizePiecewise(91, ok, rnd), /value must be an integer from 18 to 90, got 91/);
  assert.throws(() => randomizePiecewise(40.5, ok, rnd), (e) => e instanceof TypeError && /40\.5/.test(e.message));
  assert.throws(() => randomizePiecewise(40, { ...ok, ratioA: 2 }, rnd), /ratioA must be an integer from 3 to 65534, got 2/);
  assert.throws(() => randomizePiecewise(40, { ...ok, ratioB: 0 }, rnd), /ratioB must be an integer from 1 to 65536, got 0/);
  assert.throws(() => randomizePiecewise(40, { ...ok, ratioA: 70000 }, rnd), /ratioA .* got 70000/);
  assert.throws(() => randomizePiecewise(5, { ...ok, min: 5, max: 5 }, rnd), /max must be/);
  assert.throws(() => randomizePiecewise(0, { ...ok, min: 0, max: 2 ** 32 + 1 }, rnd), /at most 2\^32/);
});

test('hybrid levels stay in 0..a+b+1, the Duchi branch sends a+b or a+b+1 (seeded)', () => {
  const rnd = makeRandom(seededFill(110));
  for (const [ratioA, ratioB] of [[511, 1], [299, 110], [61, 37], [3, 2]]) {
    const bins = ratioA + ratioB;
    let duchi = 0;
    for (let i = 0; i < 4000; i += 1) {
      const level = randomizeHybrid(i % 101, { min: 0, max: 100, ratioA, ratioB }, rnd);
      assert.ok(Number.isInteger(level) && level >= 0 && level <= bins + 1, `level ${level} of ${bins + 2}`);
      if (level >= bins) duchi += 1;
    }
    // The Duchi branch has probability b/a = e^(-eps'/2).
    assert.ok(Math.abs(duchi / 4000 - ratioB / ratioA) < 0.04, `a=${ratioA} b=${ratioB}: ${duchi}`);
  }
  assert.ok([0, 1, 2, 3, 4, 5, 6].includes(randomizeQuestion(
    { id: 'n', kind: 'number', mechanism: 'hybrid', min: 0, max: 1, ratio_a: 3, ratio_b: 2, bins: 5, levels: 7 }, 1, rnd)));
});

test('randomizeHybrid rejects bad input, and more than 512 levels, naming the bad value', () => {
  const rnd = makeRandom(seededFill(111));
  const ok = { min: 18, max: 90, ratioA: 5, ratioB: 2 };
  assert.throws(() => randomizeHybrid(91, ok, rnd), /value must be an integer from 18 to 90, got 91/);
  assert.throws(() => randomizeHybrid(40.5, ok, rnd), (e) => e instanceof TypeError && /40\.5/.test(e.message));
  assert.throws(() => randomizeHybrid(40, { ...ok, ratioA: 2 }, rnd), /ratioA must be an integer from 3 to 510, got 2/);
  assert.throws(() => randomizeHybrid(40, { ...ok, ratioA: 511 }, rnd), /ratioA .* got 511/);
  assert.throws(() => randomizeHybrid(40, { ...ok, ratioB: 0 }, rnd), /ratioB must be an integer from 1 to 512, got 0/);
  assert.throws(() => randomizeHybrid(0, { ...ok, min: 0, max: 2 ** 32 + 1 }, rnd), /at most 2\^32/);
});
