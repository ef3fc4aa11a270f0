// The exact output distribution of the optimal piecewise mechanism from its integer parameters
// (Zheng, Mishra & Hu 2025; e^eps = A/B, m grid steps, a band of w levels), for the goodness-of-fit
// and epsilon audits of client_js/mechanisms/opm.js randomizeOpm (tests/js/audit.test.mjs, bench/audit/).

import { chiSquare, chiSquareCritical } from './helpers.mjs';

/**
 * Return the probability of every output level 0..m+w-1 for one true value.
 *
 * The value is rounded onto grid point g = floor(m(value-min)/(max-min)) or g + 1 (w.p. the
 * remainder over max-min); level k then has probability A/(wA+mB) when g <= k < g + w, else B/(wA+mB).
 */
export function opmLevelProbabilities(value, { min, max, ratioA: a, ratioB: b, steps: m, band: w }) {
  const range = max - min;
  const scaled = (value - min) * m;
  const remainder = scaled % range;
  const grid = (scaled - remainder) / range;
  const total = w * a + m * b;
  const probabilities = new Array(m + w).fill(0);
  for (const [g, weight] of [[grid, 1 - remainder / range], [grid + 1, remainder / range]]) {
    if (weight === 0) continue;
    for (let k = 0; k < m + w; k += 1) probabilities[k] += weight * ((k >= g && k < g + w ? a : b) / total);
  }
  return probabilities;
}

/**
 * Return the three output groups that attain eps' between min and max: the levels in the band
 * of min only (0..min(w, m)-1), those in the band of max only (max(w, m)..m+w-1), and the rest.
 */
export function opmExtremeGroups({ steps: m, band: w }) {
  return (k) => {
    if (k < Math.min(w, m)) return 0;
    return k >= Math.max(w, m) ? 1 : 2;
  };
}

/** Return how many extreme groups there are: 3, or 2 when w = m leaves no level in both bands or neither. */
export function opmGroupCount({ steps: m, band: w }) {
  return w === m ? 2 : 3;
}

/**
 * Draw n reports of `value` and return {stat, critical, df} of Pearson's chi-square against the
 * exact distribution, levels merged into at most `groups` contiguous groups (alpha 1e-4 per value).
 */
export function opmFit(draw, value, parameters, { n, groups }) {
  const probabilities = opmLevelProbabilities(value, parameters);
  const size = Math.ceil(probabilities.length / groups);
  const used = Math.ceil(probabilities.length / size);
  const expected = new Array(used).fill(0);
  probabilities.forEach((p, k) => { expected[Math.floor(k / size)] += p; });
  const counts = new Array(used).fill(0);
  for (let i = 0; i < n; i += 1) counts[Math.floor(draw(value) / size)] += 1;
  const df = used - 1;
  return { stat: chiSquare(counts, expected), critical: chiSquareCritical(df), df };
}
