// Memoized series reports (client_js/series.js): a report for every possible answer, drawn
// with each mechanism's own probabilities (Pearson chi-square at alpha = 1e-4, seeded), kept
// and reused while the question's design is unchanged.

import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import {
  canMemoize, fingerprint, forgetSeries, loadMemo, makeMemo, memoFits, memoReport,
} from '../../client_js/series.js';
import { chiSquare, chiSquareCritical, seededFill, TWO_53 } from './helpers.mjs';
import { piecewiseLevelProbabilities } from './piecewise.mjs';
import { hybridLevelProbabilities } from './hybrid.mjs';

// Fingerprints recorded before series.js asked the registry for them, for designs of every mechanism (budgets,
// option counts, ranges): a kept memo stays valid only while its fingerprint is unchanged.
const RECORDED = JSON.parse(readFileSync(new URL('./fingerprints.json', import.meta.url), 'utf8'));

const N = 40000;
const F = 0.25;
const FLIP = TWO_53 / 4;
const YES_NO = { id: 'smoker', kind: 'yes_no', mechanism: 'rr', flip_threshold: FLIP };
const GRR = { id: 'team', kind: 'choice', mechanism: 'grr', options: ['a', 'b', 'c', 'd'], keep_threshold: TWO_53 / 2 };
const OUE = { id: 'pet', kind: 'choice', mechanism: 'oue', options: ['a', 'b', 'c'], q_threshold: TWO_53 / 4 };
const MULTI = { id: 'habits', kind: 'multi', mechanism: 'rr', options: ['a', 'b', 'c'], flip_threshold: FLIP };
const SS = { id: 'sport', kind: 'choice', mechanism: 'ss', options: ['a', 'b', 'c', 'd', 'e'], subset_size: 2,
  keep_threshold: TWO_53 / 2 };
const SAMPLED = { id: 'tools', kind: 'multi', mechanism: 'sampled', options: ['a', 'b', 'c'], flip_threshold: FLIP };
const PIECEWISE = { id: 'hours', kind: 'number', mechanism: 'piecewise', min: 0, max: 10, ratio_a: 3, ratio_b: 1, bins: 4 };
const HYBRID = {
  id: 'hours', kind: 'number', mechanism: 'hybrid', min: 0, max: 10, ratio_a: 3, ratio_b: 1, bins: 4, levels: 6,
};
const DUCHI = { id: 'age', kind: 'number', mechanism: 'duchi', min: 0, max: 10, flip_threshold: FLIP };

function assertFits(counts, probabilities, label) {
  const stat = chiSquare(counts, probabilities);
  const critical = chiSquareCritical(probabilities.length - 1);
  assert.ok(stat < critical, `${label}: chi-square ${stat.toFixed(2)} >= ${critical.toFixed(2)}`);
}

/** Tally the memoized report of `value` over N fresh memos, keyed by the report's JSON. */
function tally(question, value, seed) {
  const rnd = makeRandom(seededFill(seed));
  const counts = new Map();
  for (let i = 0; i < N; i += 1) {
    const key = JSON.stringify(memoReport(question, makeMemo(question, rnd), value));
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

test('a memo holds a report for every possible answer', () => {
  const rnd = makeRandom(seededFill(1));
  assert.equal(makeMemo(YES_NO, rnd).reports.length, 2);
  assert.equal(makeMemo(GRR, rnd).reports.length, 4);
  assert.deepEqual(makeMemo(OUE, rnd).reports.map((r) => r.length), [3, 3, 3]);
  assert.deepEqual(makeMemo(MULTI, rnd).bits.map((pair) => pair.length), [2, 2, 2]);
  assert.deepEqual(makeMemo(SS, rnd).reports.map((r) => [r.length, r.reduce((a, b) => a + b, 0)]),
    [[5, 2], [5, 2], [5, 2], [5, 2], [5, 2]], 'one 2-subset of the 5 options per possible answer');
  const sampled = makeMemo(SAMPLED, rnd);
  assert.ok(Number.isInteger(sampled.drawn) && sampled.drawn >= 0 && sampled.drawn < 3 && sampled.reports.length === 2);
  const piecewise = makeMemo(PIECEWISE, rnd);
  assert.ok(Number.isInteger(piecewise.cut) && piecewise.cut >= 0 && piecewise.cut < 10);
  assert.equal(piecewise.levels.length, 4, 'one output level per grid point 0..a');
  const duchi = makeMemo(DUCHI, rnd);
  assert.ok(Number.isInteger(duchi.cut) && duchi.cut >= 0 && duchi.cut < 10 && duchi.reports.length === 2);
});

test('memoized yes/no reports follow randomized response', () => {
  for (const value of [0, 1]) {
    const counts = tally(YES_NO, value, 10 + value);
    const keep = 1 - F;
    assertFits([counts.get('0') ?? 0, counts.get('1') ?? 0], value === 1 ? [F, keep] : [keep, F], `RR(${value})`);
  }
});

test('memoized GRR reports keep the answer with its probability, else another option uniformly', () => {
  const counts = tally(GRR, 2, 20);
  assertFits([0, 1, 2, 3].map((i) => counts.get(String(i)) ?? 0), [1 / 6, 1 / 6, 1 / 2, 1 / 6], 'GRR(2)');
});

test('memoized OUE and multi reports have each bit with its probability', () => {
  const oue = tally(OUE, 1, 30);
  const multi = tally(MULTI, [1, 0, 1], 31);
  const bitsOf = (counts, i) => [...counts].reduce((sum, [key, n]) => sum + JSON.parse(key)[i] * n, 0);
  [0.25, 0.5, 0.25].forEach((p, i) => assertFits([N - bitsOf(oue, i), bitsOf(oue, i)], [1 - p, p], `OUE bit ${i}`));
  [1 - F, F, 1 - F].forEach((p, i) => assertFits([N - bitsOf(multi, i), bitsOf(multi, i)], [1 - p, p], `multi bit ${i}`));
});

test('memoized subset selection reports hold the answer with its probability, the rest uniformly', () => {
  // d = 5, k = 2, keep 1/2: a subset holding the answer 2 has probability (1/2)/C(4,1), any other (1/2)/C(4,2).
  const counts = tally(SS, 2, 32);
  const subsets = [];
  for (let i = 0; i < 5; i += 1) {
    for (let j = i + 1; j < 5; j += 1) subsets.push([i, j]);
  }
  const observed = subsets.map(([i, j]) => counts.get(JSON.stringify([0, 1, 2, 3, 4].map((o) => (o === i || o === j ? 1 : 0)))) ?? 0);
  assert.equal(observed.reduce((a, b) => a + b, 0), N, 'every report is a 2-subset');
  assertFits(observed, subsets.map((pair) => (pair.includes(2) ? 1 / 8 : 1 / 12)), 'SS(2)');
});

test('memoized sampled multi reports draw one option uniformly and send its bit through RR', () => {
  // Report e_j w.p. (1/3)(1 - F) for a ticked option j, (1/3)F for a blank one; else all zeros.
  const value = [1, 0, 1];
  const counts = tally(SAMPLED, value, 33);
  const units = [0, 1, 2].map((j) => JSON.stringify([0, 1, 2].map((o) => (o === j ? 1 : 0))));
  const zeros = JSON.stringify([0, 0, 0]);
  const observed = [...units, zeros].map((key) => counts.get(key) ?? 0);
  assert.equal(observed.reduce((a, b) => a + b, 0), N, 'at most one 1 in every report');
  const probabilities = value.map((bit) => (bit ? 1 - F : F) / 3);
  probabilities.push(1 - probabilities.reduce((a, b) => a + b, 0));
  assertFits(observed, probabilities, 'sampled([1, 0, 1])');
});

test('a sampled multi memo keeps the drawn option whatever the answer', () => {
  const rnd = makeRandom(seededFill(34));
  const drawn = [0, 0, 0];
  for (let i = 0; i < N; i += 1) {
    const memo = makeMemo(SAMPLED, rnd);
    drawn[memo.drawn] += 1;
    for (const value of [[0, 0, 0], [1, 1, 1], [1, 0, 1], [0, 1, 0]]) {
      const report = memoReport(SAMPLED, memo, value);
      assert.ok(report.every((bit, j) => j === memo.drawn || bit === 0), 'only the drawn option can be 1');
      assert.equal(report[memo.drawn], memo.reports[value[memo.drawn]]);
    }
  }
  assertFits(drawn, [1 / 3, 1 / 3, 1 / 3], 'drawn option');
});

test('memoized Duchi reports round at random like the mechanism, then flip', () => {
  const counts = tally(DUCHI, 3, 40);
  const one = (1 - F) * 0.3 + F * 0.7;
  assertFits([counts.get('0') ?? 0, counts.get('1') ?? 0], [1 - one, one], 'Duchi(3 in 0..10)');
});

test('memoized piecewise reports round at random like the mechanism, then draw the level', () => {
  const parameters = { min: 0, max: 10, ratioA: 3, ratioB: 1 };
  for (const [value, seed] of [[3, 41], [7, 42], [0, 43], [10, 44]]) {
    const counts = tally(PIECEWISE, value, seed);
    assertFits([0, 1, 2, 3].map((k) => counts.get(String(k)) ?? 0), piecewiseLevelProbabilities(value, parameters),
      `piecewise(${value} in 0..10)`);
  }
});

test('memoized hybrid reports draw the branch before any answer, then follow the mechanism', () => {
  const parameters = { min: 0, max: 10, ratioA: 3, ratioB: 1 };
  assert.ok(canMemoize(HYBRID));
  for (const [value, seed] of [[3, 45], [7, 46], [0, 47], [10, 48]]) {
    const counts = tally(HYBRID, value, seed);
    assertFits([0, 1, 2, 3, 4, 5].map((k) => counts.get(String(k)) ?? 0), hybridLevelProbabilities(value, parameters),
      `hybrid(${value} in 0..10)`);
  }
  const rnd = makeRandom(seededFill(49));
  for (let i = 0; i < 200; i += 1) {
    const memo = makeMemo(HYBRID, rnd);
    assert.ok(memoFits(HYBRID, memo));
    const reports = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((value) => memoReport(HYBRID, memo, value));
    assert.ok(reports.every((level) => (memo.piecewise ? level < 4 : level >= 4 && level <= 5)),
      'every answer of one memo is reported through the same branch');
  }
  assert.ok(!memoFits(HYBRID, { piecewise: false, cut: 0, levels: [1, 5] }), 'a Duchi memo holds levels G and G + 1');
  assert.ok(!memoFits(HYBRID, { piecewise: true, cut: 0, levels: [0, 1, 2] }), 'a piecewise memo holds a + 1 levels');
});

function memoryStorage() {
  const items = new Map();
  return {
    get length() { return items.size; },
    key: (i) => [...items.keys()][i] ?? null,
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => { items.set(key, String(value)); },
    removeItem: (key) => { items.delete(key); },
  };
}

test('a kept memo is reused for the same design, replaced for another, forgotten on request', () => {
  const storage = memoryStorage();
  const rnd = makeRandom(seededFill(50));
  const first = loadMemo(storage, 'waves', MULTI, rnd);
  assert.equal(first.status, 'new');
  const again = loadMemo(storage, 'waves', MULTI, rnd);
  assert.equal(again.status, 'reused');
  assert.deepEqual(again.memo, first.memo);
  const changed = loadMemo(storage, 'waves', { ...MULTI, flip_threshold: FLIP + 1 }, rnd);
  assert.equal(changed.status, 'changed');
  const resized = loadMemo(storage, 'sport', SS, rnd);
  assert.equal(resized.status, 'new');
  assert.equal(loadMemo(storage, 'sport', { ...SS, subset_size: 3 }, rnd).status, 'changed', 'another subset size');
  const tooBig = SS.options.map(() => [1, 1, 1, 0, 0]);
  storage.setItem('ldp-survey:series:sport:sport', JSON.stringify({ fingerprint: fingerprint(SS), memo: { reports: tooBig } }));
  assert.equal(loadMemo(storage, 'sport', SS, rnd).status, 'changed', 'a kept subset of the wrong size is not used');
  storage.removeItem('ldp-survey:series:sport:sport');
  assert.equal(loadMemo(storage, 'hours', PIECEWISE, rnd).status, 'new');
  assert.equal(loadMemo(storage, 'hours', PIECEWISE, rnd).status, 'reused');
  assert.equal(loadMemo(storage, 'hours', { ...PIECEWISE, ratio_a: 5, bins: 6 }, rnd).status, 'changed', 'another ratio');
  assert.equal(loadMemo(storage, 'hours', HYBRID, rnd).status, 'changed', 'hybrid is another mechanism');
  assert.equal(loadMemo(storage, 'hours', HYBRID, rnd).status, 'reused');
  storage.removeItem('ldp-survey:series:hours:hours');
  const relabelled = loadMemo(storage, 'waves', { ...MULTI, flip_threshold: FLIP + 1, options: ['a', 'c', 'b'] }, rnd);
  assert.equal(relabelled.status, 'changed', 'reordered options are another question');
  loadMemo(storage, 'other', YES_NO, rnd);
  storage.setItem('ldp-survey:series:waves:smoker', '{not json');
  assert.equal(loadMemo(storage, 'waves', YES_NO, rnd).status, 'new');
  assert.equal(forgetSeries(storage, 'waves'), 2);
  assert.equal(storage.length, 1, 'another series is kept');
});

test('the fingerprint of every recorded design is the one recorded', () => {
  const mechanisms = new Set(RECORDED.map(({ question }) => `${question.kind}/${question.mechanism}`));
  assert.equal(mechanisms.size, 10, `recorded designs cover ${[...mechanisms].join(', ')}`);
  for (const { question, fingerprint: recorded } of RECORDED) {
    assert.equal(fingerprint(question), recorded, `question ${question.id} (${question.kind}/${question.mechanism})`);
  }
});
