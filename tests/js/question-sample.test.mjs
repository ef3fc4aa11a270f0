// Tests of client_js/question-sample.js: the partial Fisher–Yates draw (exact, word by word), which
// questions a sample-allocation respondent is asked, and the goodness-of-fit audit of the draws with the
// real crypto.getRandomValues source (sampling-audit.mjs; family-wise alpha 1e-6 per audit).

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import { askedQuestions, drawSubset } from '../../client_js/question-sample.js';
import { listFill, seededFill } from './helpers.mjs';
import { auditSampling, binomial, subsetRank } from './sampling-audit.mjs';

test('drawSubset swaps position i with i + below(k - i): m draws, bounds k, k-1, ...', () => {
  const bounds = [];
  const picks = [3, 0];
  const subset = drawSubset(5, 2, (bound) => { bounds.push(bound); return picks[bounds.length - 1]; });
  assert.deepEqual(bounds, [5, 4]);
  // [0,1,2,3,4] -> swap 0,3 -> [3,1,2,0,4] -> swap 1,1 -> first two {3, 1}.
  assert.deepEqual(subset, [1, 3]);
});

test('drawSubset draws through below(): rejection sampling, no modulo', () => {
  // below(5): 3 top bits, 0xffffffff (7) rejected, 0x40000000 (2) kept; below(4): 2 top bits, 0xc0000000 -> 3.
  const fill = listFill([0xffffffff, 0x40000000, 0xc0000000]);
  const { below } = makeRandom(fill);
  assert.deepEqual(drawSubset(5, 2, below), [2, 4]);
  assert.equal(fill.used(), 3);
});

test('drawSubset refuses counts outside 1 <= m <= k, naming them', () => {
  assert.throws(() => drawSubset(3, 4), /1 <= m <= k, got k = 3, m = 4/);
  assert.throws(() => drawSubset(3, 0), /got k = 3, m = 0/);
  assert.throws(() => drawSubset(2.5, 1), /got k = 2.5/);
});

test('subsetRank numbers the C(k, m) subsets 0..C(k, m)-1 once each', () => {
  const ranks = new Set();
  for (let a = 0; a < 6; a += 1) for (let b = a + 1; b < 6; b += 1) for (let c = b + 1; c < 6; c += 1) {
    ranks.add(subsetRank([a, b, c]));
  }
  assert.equal(ranks.size, binomial(6, 3));
  assert.deepEqual([...ranks].sort((x, y) => x - y), [...Array(20).keys()]);
});

const QUESTIONS = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id }));

test('askedQuestions: every question under split, m of them in design order under sample', () => {
  assert.deepEqual(askedQuestions({ allocation: 'split', questions: QUESTIONS }), QUESTIONS);
  const design = { slug: 's', hash: 'h', allocation: 'sample', sample: 2, questions: QUESTIONS };
  const { below } = makeRandom(seededFill(7));
  for (let i = 0; i < 50; i += 1) {
    const asked = askedQuestions(design, { draw: below, remember: false });
    assert.equal(asked.length, 2);
    assert.ok(QUESTIONS.indexOf(asked[0]) < QUESTIONS.indexOf(asked[1]));
  }
});

test('askedQuestions keeps one draw per device and design, and ignores a tampered stored draw', () => {
  const saved = new Map();
  globalThis.window = { localStorage: {
    getItem: (key) => (saved.has(key) ? saved.get(key) : null),
    setItem: (key, value) => { saved.set(key, String(value)); },
  } };
  try {
    const design = { slug: 's', hash: 'h', allocation: 'sample', sample: 2, questions: QUESTIONS };
    const first = askedQuestions(design).map((q) => q.id);
    for (let i = 0; i < 20; i += 1) assert.deepEqual(askedQuestions(design).map((q) => q.id), first);
    for (const bad of ['[0,0]', '[1]', '[3,1]', '[0,9]', 'nonsense', '[0.5,2]']) {
      saved.set('ldp-survey:sample:s:h', bad);
      const asked = askedQuestions(design);
      assert.equal(new Set(asked).size, 2, `stored ${bad}`);
    }
    const other = { ...design, hash: 'h2' };
    askedQuestions(other);
    assert.ok(saved.has('ldp-survey:sample:s:h2'));
  } finally {
    delete globalThis.window;
  }
});

for (const [k, m] of [[5, 2], [5, 1], [4, 3]]) {
  test(`audit: the shipped draw of ${m} of ${k} questions is uniform over the ${binomial(k, m)} subsets `
    + 'and includes each question with probability m/k (real crypto source)', () => {
    const result = auditSampling({ k, m, n: 100000 });
    assert.ok(result.chiSquare < result.critical,
      `chi-square ${result.chiSquare.toFixed(2)} >= ${result.critical.toFixed(2)} (df ${result.cells - 1})`);
    for (const row of result.inclusion) {
      assert.ok(Math.abs(row.z) < result.zCritical, `question ${row.question}: ${row.count} of ${result.n} `
        + `draws include it, expected ${row.expected} (z = ${row.z.toFixed(2)})`);
    }
  });
}

test('audit: the same checks catch a modulo-biased draw (top 3 bits % bound instead of rejection)', () => {
  const biased = (bound) => (crypto.getRandomValues(new Uint32Array(1))[0] >>> 29) % bound;
  const result = auditSampling({ k: 5, m: 2, n: 20000, draw: biased });
  assert.equal(result.passed, false);
});
