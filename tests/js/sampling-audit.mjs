// Goodness-of-fit audit of the shipped question sampler (client_js/question-sample.js), docs/explanation/privacy.md, audit 1:
// the drawn m-subsets against the uniform distribution over all C(k, m) subsets (chi-square), and each
// question's inclusion count against Binomial(n, m/k) (two-sided z-tests, Bonferroni over the k questions).
// Which questions are drawn does not depend on the answers, so there is no epsilon to bound (docs/reference/mechanisms.md, Sampled questions);
// the audit checks that the draw is the uniform one the estimators assume. Used by
// tests/js/question-sample.test.mjs and bench/audit/sampling.mjs.

import { drawSubset } from '../../client_js/question-sample.js';
import { chiSquare } from './helpers.mjs';
import { normalQuantile } from './stats.mjs';

/** Return C(k, m) as a number (exact for the small k an audit enumerates). */
export function binomial(k, m) {
  let result = 1;
  for (let i = 1; i <= m; i += 1) result = (result * (k - m + i)) / i;
  return Math.round(result);
}

/** Return the chi-square critical value at level alpha by the Wilson–Hilferty approximation. */
export function chiSquareCriticalAt(df, alpha) {
  const a = 2 / (9 * df);
  return df * (1 - a + normalQuantile(1 - alpha) * Math.sqrt(a)) ** 3;
}

/** Return the rank of an increasing m-subset of 0..k-1 among all C(k, m) (combinatorial number system). */
export function subsetRank(subset) {
  return subset.reduce((rank, value, i) => rank + binomial(value, i + 1), 0);
}

/**
 * Draw n subsets with `draw` (default: the shipped below() over crypto.getRandomValues) and test them.
 *
 * Returns {k, m, n, chiSquare, critical, inclusion: [{question, count, expected, z}], zCritical, passed}.
 * The family-wise false-alarm rate is alpha: half for the chi-square, half over the k z-tests.
 */
export function auditSampling({ k, m, n, alpha = 1e-6, draw }) {
  const cells = binomial(k, m);
  const counts = new Array(cells).fill(0);
  const included = new Array(k).fill(0);
  for (let i = 0; i < n; i += 1) {
    const subset = draw === undefined ? drawSubset(k, m) : drawSubset(k, m, draw);
    counts[subsetRank(subset)] += 1;
    subset.forEach((question) => { included[question] += 1; });
  }
  const stat = chiSquare(counts, new Array(cells).fill(1 / cells));
  const critical = cells > 1 ? chiSquareCriticalAt(cells - 1, alpha / 2) : Infinity;
  const share = m / k;
  const sd = Math.sqrt(n * share * (1 - share));
  const zCritical = normalQuantile(1 - alpha / (4 * k));
  const inclusion = included.map((count, question) => ({
    question, count, expected: n * share, z: sd > 0 ? (count - n * share) / sd : 0,
  }));
  const passed = stat < critical && inclusion.every((row) => Math.abs(row.z) < zCritical);
  return { k, m, n, cells, chiSquare: stat, critical, inclusion, zCritical, passed };
}
