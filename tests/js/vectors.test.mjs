// tests/vectors.json checked against the browser code: thresholds give the published
// probabilities and realised epsilons, and every stream of words gives the same report
// as survey/replay.py, consuming exactly the listed words.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import { randomizeQuestion } from '../../client_js/mechanisms/index.js';
import { listFill, readVectors, TWO_53 } from './helpers.mjs';

const VECTORS = readVectors();

test('the vectors file has the grid and the streams', () => {
  assert.equal(VECTORS.threshold_bits, 53);
  assert.equal(VECTORS.thresholds.length, 35);
  assert.ok(VECTORS.streams.length >= 60);
});

for (const row of VECTORS.thresholds) {
  test(`thresholds at epsilon ${row.epsilon}, d ${row.d}`, () => {
    const { d } = row;
    for (const key of ['rr_flip_threshold', 'grr_keep_threshold', 'oue_q_threshold']) {
      assert.ok(Number.isSafeInteger(row[key]) && row[key] > 0 && row[key] < TWO_53, `${key} = ${row[key]}`);
    }
    const flip = row.rr_flip_threshold;
    assert.equal((TWO_53 - flip) / TWO_53, row.rr_p);
    assert.equal(flip / TWO_53, row.rr_q);
    assert.equal(row.grr_keep_threshold / TWO_53, row.grr_p);
    assert.equal((TWO_53 - row.grr_keep_threshold) / ((d - 1) * TWO_53), row.grr_q);
    assert.equal(row.oue_p, 0.5);
    assert.equal(row.oue_q_threshold / TWO_53, row.oue_q);

    const rrEps = Math.log((TWO_53 - flip) / flip);
    const grrEps = Math.log((row.grr_keep_threshold * (d - 1)) / (TWO_53 - row.grr_keep_threshold));
    const oueEps = Math.log((TWO_53 - row.oue_q_threshold) / row.oue_q_threshold);
    assert.ok(Math.abs(rrEps - row.rr_epsilon_float) < 1e-12, `rr eps' ${rrEps} vs ${row.rr_epsilon_float}`);
    assert.ok(Math.abs(grrEps - row.grr_epsilon_float) < 1e-12, `grr eps' ${grrEps} vs ${row.grr_epsilon_float}`);
    assert.ok(Math.abs(oueEps - row.oue_epsilon_float) < 1e-12, `oue eps' ${oueEps} vs ${row.oue_epsilon_float}`);
    assert.ok(Math.abs(Number(row.rr_epsilon) - row.rr_epsilon_float) < 1e-15);
    assert.ok(row.rr_epsilon_float <= row.epsilon && row.grr_epsilon_float <= row.epsilon);
    assert.equal(row.use_oue, d >= 3 * Math.exp(row.epsilon) + 2);
    if (d >= 3) {
      const { ss_k: k, ss_keep_threshold: keep } = row;
      assert.ok(Number.isSafeInteger(keep) && keep > 0 && keep < TWO_53 && k >= 2 && k < d);
      assert.equal(keep / TWO_53, row.ss_p);
      const ssEps = Math.log((keep * (d - k)) / ((TWO_53 - keep) * k));
      assert.ok(Math.abs(ssEps - row.ss_epsilon_float) < 1e-12, `ss eps' ${ssEps} vs ${row.ss_epsilon_float}`);
      assert.ok(row.ss_epsilon_float <= row.epsilon);
    }
  });
}

for (const row of VECTORS.piecewise) {
  test(`piecewise ratio at epsilon ${row.epsilon}`, () => {
    const { ratio_a: a, ratio_b: b } = row;
    assert.ok(Number.isSafeInteger(a) && Number.isSafeInteger(b) && a > b && b >= 1);
    assert.equal(row.bins, a + b);
    assert.equal(a / (a + b), row.p);
    assert.equal(b / (a + b), row.q);
    const realised = 2 * Math.log(a / b);
    assert.ok(Math.abs(realised - row.epsilon_float) < 1e-12, `eps' ${realised} vs ${row.epsilon_float}`);
    assert.ok(row.epsilon_float <= row.epsilon);
  });
}

for (const row of VECTORS.hybrid) {
  test(`hybrid ratio at epsilon ${row.epsilon}`, () => {
    const { ratio_a: a, ratio_b: b } = row;
    assert.ok(Number.isSafeInteger(a) && Number.isSafeInteger(b) && a > b && b >= 1 && a + b <= 512);
    assert.equal(row.bins, a + b);
    assert.equal(row.levels, a + b + 2);
    assert.equal(row.beta, `${(a - b) / gcd(a - b, a)}/${a / gcd(a - b, a)}`);
    const squares = a * a + b * b;
    assert.equal(row.flip, `${(b * b) / gcd(b * b, squares)}/${squares / gcd(b * b, squares)}`);
    const realised = 2 * Math.log(a / b);
    assert.ok(Math.abs(realised - row.epsilon_float) < 1e-12, `eps' ${realised} vs ${row.epsilon_float}`);
    assert.ok(Math.abs(Math.log((a * a) / (b * b)) - row.epsilon_float) < 1e-12, 'Duchi branch at the same eps');
    assert.ok(row.epsilon_float <= row.epsilon);
  });
}

function gcd(x, y) {
  return y === 0 ? x : gcd(y, x % y);
}

function run(testCase, rnd) {
  if (testCase.call === 'question') return randomizeQuestion(testCase.question, testCase.true, rnd);
  const result = rnd[testCase.call](...testCase.args);
  return typeof result === 'boolean' ? Number(result) : result;
}

for (const testCase of VECTORS.streams) {
  test(`stream: ${testCase.name}`, () => {
    const fill = listFill(testCase.words);
    const result = run(testCase, makeRandom(fill));
    assert.deepEqual(result, testCase.expected);
    assert.equal(fill.used(), testCase.words.length, 'the JS must consume exactly the words Python consumed');
  });
}
