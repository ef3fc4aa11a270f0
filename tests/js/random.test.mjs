// Statistical and contract tests of client_js/random.js (seeded word source; alpha = 1e-4 per test).

import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as random from '../../client_js/random.js';
import { chiSquare, chiSquareCritical, listFill, seededFill, TWO_53 } from './helpers.mjs';

const { makeRandom } = random;

for (const [m, seed] of [[3, 11], [5, 12], [7, 13], [1000, 14]]) {
  test(`below(${m}) is uniform: chi-square at alpha 1e-4, no modulo bias`, () => {
    const rnd = makeRandom(seededFill(seed));
    const draws = Math.max(100000, 200 * m);
    const counts = new Array(m).fill(0);
    for (let i = 0; i < draws; i += 1) counts[rnd.below(m)] += 1;
    const stat = chiSquare(counts, new Array(m).fill(1 / m));
    assert.ok(stat < chiSquareCritical(m - 1), `chi-square ${stat} >= ${chiSquareCritical(m - 1)} (df ${m - 1})`);
  });
}

test('below(5) rejects the top values instead of folding them (draw by draw)', () => {
  // Top 3 bits: 7, 5 rejected, then 2 accepted; a modulo would have returned 2 at once.
  const fill = listFill([0xffffffff, 0xa0000000, 0x40000000]);
  assert.equal(makeRandom(fill).below(5), 2);
  assert.equal(fill.used(), 3);
});

test('below(1) is 0 without drawing', () => {
  const fill = listFill([]);
  assert.equal(makeRandom(fill).below(1), 0);
  assert.equal(fill.used(), 0);
});

test('below(2^32) uses whole words and below(2^k) never rejects', () => {
  const fill = listFill([0xffffffff, 0xe0000000]);
  const rnd = makeRandom(fill);
  assert.equal(rnd.below(2 ** 32), 0xffffffff);
  assert.equal(rnd.below(8), 7);
  assert.equal(fill.used(), 2);
});

test('below validates m and names the bad value', () => {
  const rnd = makeRandom(seededFill(1));
  assert.throws(() => rnd.below(0), (e) => e instanceof RangeError && /got 0/.test(e.message));
  assert.throws(() => rnd.below(2 ** 32 + 1), (e) => e instanceof RangeError && /got 4294967297/.test(e.message));
  assert.throws(() => rnd.below(2.5), (e) => e instanceof TypeError && /got 2\.5/.test(e.message));
  assert.throws(() => rnd.below('3'), (e) => e instanceof TypeError && /got 3/.test(e.message));
  assert.throws(() => rnd.below(Number.NaN), /got NaN/);
});

test('u53 is an integer on [0, 2^53) with the first word high', () => {
  const rnd = makeRandom(seededFill(2));
  for (let i = 0; i < 10000; i += 1) {
    const value = rnd.u53();
    assert.ok(Number.isInteger(value) && value >= 0 && value < TWO_53, `u53 gave ${value}`);
  }
  assert.equal(makeRandom(listFill([0xffffffff, 0xffffffff])).u53(), TWO_53 - 1);
  assert.equal(makeRandom(listFill([1 << 5, 0])).u53(), 2 ** 26);
  assert.equal(makeRandom(listFill([0, 1 << 6])).u53(), 1);
});

test('bern53(T) has frequency T/2^53 within 5 standard errors', () => {
  const rnd = makeRandom(seededFill(3));
  const threshold = 2422408970132804; // flip threshold at epsilon = 1
  const p = threshold / TWO_53;
  const n = 200000;
  let ones = 0;
  for (let i = 0; i < n; i += 1) ones += rnd.bern53(threshold) ? 1 : 0;
  const se = Math.sqrt(p * (1 - p) / n);
  assert.ok(Math.abs(ones / n - p) < 5 * se, `frequency ${ones / n} vs ${p} (se ${se})`);
});

test('bern53 is exact at its ends and validates its threshold', () => {
  const rnd = makeRandom(seededFill(4));
  for (let i = 0; i < 1000; i += 1) {
    assert.equal(rnd.bern53(0), false);
    assert.equal(rnd.bern53(TWO_53), true);
  }
  assert.throws(() => rnd.bern53(TWO_53 + 2), RangeError);
  assert.throws(() => rnd.bern53(-1), /got -1/);
  assert.throws(() => rnd.bern53(0.5), TypeError);
});

test('bern(a, b) has frequency a/b within 5 standard errors', () => {
  const rnd = makeRandom(seededFill(5));
  const n = 100000;
  let ones = 0;
  for (let i = 0; i < n; i += 1) ones += rnd.bern(22, 72) ? 1 : 0;
  const p = 22 / 72;
  assert.ok(Math.abs(ones / n - p) < 5 * Math.sqrt(p * (1 - p) / n), `frequency ${ones / n} vs ${p}`);
  assert.throws(() => rnd.bern(4, 3), (e) => e instanceof RangeError && /a must be .* got 4/.test(e.message));
});

test('the default exports draw from crypto.getRandomValues', () => {
  const original = globalThis.crypto.getRandomValues;
  let calls = 0;
  const spy = (array) => { calls += 1; return original.call(globalThis.crypto, array); };
  Object.defineProperty(globalThis.crypto, 'getRandomValues', { value: spy, configurable: true, writable: true });
  try {
    const value = random.u53();
    assert.ok(Number.isInteger(value) && value >= 0 && value < TWO_53);
    assert.ok(random.below(10) < 10);
    assert.equal(typeof random.bern53(TWO_53 / 2), 'boolean');
    assert.equal(typeof random.bern(1, 2), 'boolean');
    assert.ok(random.u32() < 2 ** 32);
    assert.ok(calls >= 5, `getRandomValues called ${calls} times`);
  } finally {
    Object.defineProperty(globalThis.crypto, 'getRandomValues', { value: original, configurable: true, writable: true });
  }
});
