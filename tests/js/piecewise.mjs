// The exact output distribution of the discretised piecewise mechanism from its integer
// parameters (Wang et al. 2019, with e^(eps/2) = a/b), for the goodness-of-fit and epsilon
// audits of client_js/mechanisms/piecewise.js randomizePiecewise (tests/js/audit.test.mjs, bench/audit/).

import { chiSquare, chiSquareCritical } from './helpers.mjs';

/**
 * Return the probability of every output level 0..a+b-1 for one true value.
 *
 * The value is rounded onto grid point g = floor(a(value-min)/(max-min)) or g + 1 (w.p. the
 * remainder over max-min); level k then has probability a/((a+b)b) when g <= k < g + b, else
 * b/((a+b)a).
 */
export function piecewiseLevelProbabilities(value, { min, max, ratioA: a, ratioB: b }) {
  const levels = a + b;
  const range = max - min;
  const scaled = (value - min) * a;
  const remainder = scaled % range;
  const grid = (scaled - remainder) / range;
  const high = a / (levels * b);
  const low = b / (levels * a);
  const probabilities = new Array(levels).fill(0);
  for (const [g, weight] of [[grid, 1 - remainder / range], [grid + 1, remainder / range]]) {
    if (weight === 0) continue;
    for (let k = 0; k < levels; k += 1) probabilities[k] += weight * (k >= g && k < g + b ? high : low);
  }
  return probabilities;
}

/** Return the probabilities of `groups` outputs, level k going to group groupOf(k). */
export function groupProbabilities(probabilities, groupOf, groups) {
  const grouped = new Array(groups).fill(0);
  probabilities.forEach((p, k) => { grouped[groupOf(k)] += p; });
  return grouped;
}

/**
 * Return the three output groups that attain eps' between min and max: the b levels high for
 * min only (0..b-1), those high for max only (a..a+b-1), and the rest (equally likely for both).
 */
export function extremeGroups({ ratioA: a, ratioB: b }) {
  return (k) => {
    if (k < b) return 0;
    return k >= a ? 1 : 2;
  };
}

/**
 * Draw n reports of `value` and return {stat, critical, df} of Pearson's chi-square against the
 * exact distribution, levels merged into at most `groups` contiguous groups of equal size
 * (alpha 1e-4 per value).
 */
export function piecewiseFit(draw, value, parameters, { n, groups }) {
  const probabilities = piecewiseLevelProbabilities(value, parameters);
  const size = Math.ceil(probabilities.length / groups);
  const used = Math.ceil(probabilities.length / size);
  const expected = groupProbabilities(probabilities, (k) => Math.floor(k / size), used);
  const counts = new Array(used).fill(0);
  for (let i = 0; i < n; i += 1) counts[Math.floor(draw(value) / size)] += 1;
  const df = used - 1;
  return { stat: chiSquare(counts, expected), critical: chiSquareCritical(df), df };
}
