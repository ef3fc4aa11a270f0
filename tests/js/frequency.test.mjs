// Subset selection and the multi-select encodings as shipped in client_js/mechanisms/:
// argument checks, output frequencies against the integer parameters (Pearson chi-square at
// alpha = 1e-4, seeded words), and the empirical epsilon audit with the real crypto source
// (docs/explanation/privacy.md, audits): no lower bound above the published ε′, and ε̂ within its sampling error of it.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import { randomizeQuestion } from '../../client_js/mechanisms/index.js';
import { randomizeSubset } from '../../client_js/mechanisms/subset.js';
import { randomizeMultiSampled } from '../../client_js/mechanisms/multi-sampled.js';
import { foldText, optionMatches } from '../../client_js/option-filter.js';
import { auditEpsilon, DELTA, describe } from './epsilon-audit.mjs';
import {
  auditSize, multiRRAudit, multiSampledAudit, oueAudit, subsetAudit,
} from './frequency-audits.mjs';
import { chiSquare, chiSquareCritical, readVectors, seededFill } from './helpers.mjs';

const ROWS = readVectors().thresholds;
const row = (epsilon, d) => ROWS.find((r) => r.epsilon === epsilon && r.d === d);
const CRYPTO = makeRandom();

function assertFits(setup, n, seed) {
  const rnd = makeRandom(seededFill(seed));
  const seeded = { ...setup, draw: setup.rebuild(rnd).draw };
  for (const input of seeded.inputs) {
    const counts = new Array(seeded.outputs).fill(0);
    for (let i = 0; i < n; i += 1) counts[seeded.draw(input)] += 1;
    const expected = seeded.declared(input);
    const stat = chiSquare(counts, expected);
    const df = expected.length - 1;
    assert.ok(stat < chiSquareCritical(df),
      `${setup.name} input ${JSON.stringify(input)}: chi-square ${stat.toFixed(2)} >= ${chiSquareCritical(df).toFixed(2)}`);
  }
}

const SETUPS = {
  oue: () => {
    const { oue_q_threshold: qThreshold } = row(1, 3);
    return (rnd) => oueAudit({ d: 3, qThreshold, rnd });
  },
  multiRR: () => {
    const { rr_flip_threshold: flipThreshold } = row(0.5, 2);
    return (rnd) => multiRRAudit({ d: 2, flipThreshold, rnd });
  },
  multiSampled: () => {
    const { rr_flip_threshold: flipThreshold } = row(1, 3);
    return (rnd) => multiSampledAudit({ d: 3, flipThreshold, rnd });
  },
  subset: () => {
    const { ss_k: k, ss_keep_threshold: keepThreshold } = row(0.5, 5);
    return (rnd) => subsetAudit({ d: 5, k, keepThreshold, rnd });
  },
};

function setup(name, rnd = CRYPTO) {
  const build = SETUPS[name]();
  return { ...build(rnd), rebuild: build };
}

test('randomizeSubset checks its arguments', () => {
  const keepThreshold = row(0.5, 5).ss_keep_threshold;
  assert.throws(() => randomizeSubset(0, { d: 2, k: 1, keepThreshold }), /d must be an integer from 3/);
  assert.throws(() => randomizeSubset(0, { d: 5, k: 5, keepThreshold }), /k must be an integer from 1 to 4, got 5/);
  assert.throws(() => randomizeSubset(5, { d: 5, k: 2, keepThreshold }), /index must be an integer from 0 to 4/);
  assert.throws(() => randomizeSubset(0, { d: 5, k: 2, keepThreshold: 0.5 }), /keepThreshold must be an integer/);
  assert.throws(() => randomizeMultiSampled([], { flipThreshold: 1 }), /non-empty array/);
  assert.throws(() => randomizeMultiSampled([0, 2], { flipThreshold: 1 }), /bits\[1\] must be 0 or 1/);
});

test('every subset has exactly k members and every sampled report at most one 1', () => {
  const rnd = makeRandom(seededFill(301));
  const { ss_k: k, ss_keep_threshold: keepThreshold } = row(1, 100);
  for (let i = 0; i < 2000; i += 1) {
    const bits = randomizeSubset(i % 100, { d: 100, k, keepThreshold }, rnd);
    assert.equal(bits.reduce((a, b) => a + b, 0), k);
    const sampled = randomizeMultiSampled([1, 1, 0, 1], { flipThreshold: row(1, 2).rr_flip_threshold }, rnd);
    assert.ok(sampled.reduce((a, b) => a + b, 0) <= 1);
  }
});

test('randomizeQuestion dispatches choice/ss and multi/sampled', () => {
  const rnd = makeRandom(seededFill(302));
  const { ss_k: k, ss_keep_threshold: keepThreshold } = row(0.5, 5);
  const ss = { id: 'c', kind: 'choice', mechanism: 'ss', options: ['a', 'b', 'c', 'd', 'e'], subset_size: k,
    keep_threshold: keepThreshold };
  assert.equal(randomizeQuestion(ss, 3, rnd).reduce((a, b) => a + b, 0), k);
  const sampled = { id: 'm', kind: 'multi', mechanism: 'sampled', options: ['a', 'b'],
    flip_threshold: row(1, 2).rr_flip_threshold };
  assert.equal(randomizeQuestion(sampled, [1, 0], rnd).length, 2);
  assert.throws(() => randomizeQuestion(sampled, [1], rnd), /needs an array of 2 bits/);
});

for (const [name, seed] of [['oue', 311], ['multiRR', 312], ['multiSampled', 313], ['subset', 314]]) {
  test(`${name}: report frequencies fit the integer parameters`, () => {
    assertFits(setup(name), 40000, seed);
  });

  test(`${name}: the empirical epsilon audit finds no leak and no over-noising`, (t) => {
    const audit = setup(name);
    const n = auditSize(audit, 2 * DELTA);
    const result = auditEpsilon({ ...audit, n });
    t.diagnostic(`${audit.name}: ε′ ${audit.epsilon}; ${describe(result, n)}`);
    assert.deepEqual(result.problems, []);
  });
}

test('the subset audit catches a subset that keeps the true option 10% too often (it can fail)', () => {
  const { ss_k: k, ss_keep_threshold: keepThreshold } = row(0.5, 5);
  const honest = subsetAudit({ d: 5, k, keepThreshold, rnd: CRYPTO });
  const broken = subsetAudit({ d: 5, k, keepThreshold: Math.round(1.1 * keepThreshold), rnd: makeRandom(seededFill(315)) });
  const n = auditSize(honest, 2 * DELTA);
  const result = auditEpsilon({ ...honest, draw: broken.draw, n });
  assert.ok(result.problems.some((problem) => problem.kind === 'leaks'), JSON.stringify(result.problems));
});

test('the option filter matches labels ignoring case and accents', () => {
  assert.equal(foldText('  Café '), 'cafe');
  assert.ok(optionMatches('Town 129', 'town 12'));
  assert.ok(optionMatches('Ça va', 'ca'));
  assert.ok(!optionMatches('Town 200', 'town 12'));
  assert.ok(optionMatches('anything', ''));
});
