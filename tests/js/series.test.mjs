// Memoized series reports (client_js/series.js): a report for every possible answer, drawn
// with each mechanism's own probabilities (Pearson chi-square at alpha = 1e-4, seeded), kept
// and reused while the question's design is unchanged.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import { forgetSeries, loadMemo, makeMemo, memoReport } from '../../client_js/series.js';
import { chiSquare, chiSquareCritical, seededFill, TWO_53 } from './helpers.mjs';

const N = 40000;
const F = 0.25;
const FLIP = TWO_53 / 4;
const YES_NO = { id: 'smoker', kind: 'yes_no', mechanism: 'rr', flip_threshold: FLIP };
const GRR = { id: 'team', kind: 'choice', mechanism: 'grr', options: ['a', 'b', 'c', 'd'], keep_threshold: TWO_53 / 2 };
const OUE = { id: 'pet', kind: 'choice', mechanism: 'oue', options: ['a', 'b', 'c'], q_threshold: TWO_53 / 4 };
const MULTI = { id: 'habits', kind: 'multi', mechanism: 'rr', options: ['a', 'b', 'c'], flip_threshold: FLIP };
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

test('memoized Duchi reports round at random like the mechanism, then flip', () => {
  const counts = tally(DUCHI, 3, 40);
  const one = (1 - F) * 0.3 + F * 0.7;
  assertFits([counts.get('0') ?? 0, counts.get('1') ?? 0], [1 - one, one], 'Duchi(3 in 0..10)');
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
  const relabelled = loadMemo(storage, 'waves', { ...MULTI, flip_threshold: FLIP + 1, options: ['a', 'c', 'b'] }, rnd);
  assert.equal(relabelled.status, 'changed', 'reordered options are another question');
  loadMemo(storage, 'other', YES_NO, rnd);
  storage.setItem('ldp-survey:series:waves:smoker', '{not json');
  assert.equal(loadMemo(storage, 'waves', YES_NO, rnd).status, 'new');
  assert.equal(forgetSeries(storage, 'waves'), 2);
  assert.equal(storage.length, 1, 'another series is kept');
});
