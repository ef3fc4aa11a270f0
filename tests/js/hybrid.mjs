// The exact output distribution of the hybrid mechanism from its integer parameters (Wang et
// al. 2019, with e^(eps/2) = a/b): the piecewise branch w.p. (a-b)/a, else Duchi's bit, kept
// w.p. a²/(a²+b²), as level G + bit (G = a+b). For the goodness-of-fit and epsilon audits of
// client_js/mechanisms/hybrid.js randomizeHybrid (tests/js/audit.test.mjs, bench/audit/).

import { chiSquare, chiSquareCritical } from './helpers.mjs';
import { extremeGroups, groupProbabilities, piecewiseLevelProbabilities } from './piecewise.mjs';

/** Return the probability of every output level 0..G+1 for one true value. */
export function hybridLevelProbabilities(value, { min, max, ratioA: a, ratioB: b }) {
  const beta = (a - b) / a;
  const flip = (b * b) / (a * a + b * b);
  const high = flip + (1 - 2 * flip) * ((value - min) / (max - min));
  const piecewise = piecewiseLevelProbabilities(value, { min, max, ratioA: a, ratioB: b }).map((p) => beta * p);
  return [...piecewise, (1 - beta) * (1 - high), (1 - beta) * high];
}

/**
 * Return the five output groups that attain eps' between min and max: the piecewise branch's
 * three extreme groups, then Duchi's low and high level.
 */
export function hybridExtremeGroups({ ratioA: a, ratioB: b }) {
  const piecewise = extremeGroups({ ratioA: a, ratioB: b });
  return (level) => (level < a + b ? piecewise(level) : 3 + level - (a + b));
}

/**
 * Draw n reports of `value` and return {stat, critical, df} of Pearson's chi-square against the
 * exact distribution: the piecewise levels merged into at most `groups` contiguous groups of
 * equal size, Duchi's two levels kept apart (alpha 1e-4 per value).
 */
export function hybridFit(draw, value, parameters, { n, groups }) {
  const probabilities = hybridLevelProbabilities(value, parameters);
  const bins = parameters.ratioA + parameters.ratioB;
  const size = Math.ceil(bins / groups);
  const used = Math.ceil(bins / size);
  const groupOf = (level) => (level < bins ? Math.floor(level / size) : used + level - bins);
  const expected = groupProbabilities(probabilities, groupOf, used + 2);
  const counts = new Array(used + 2).fill(0);
  for (let i = 0; i < n; i += 1) counts[groupOf(draw(value))] += 1;
  const df = used + 1;
  return { stat: chiSquare(counts, expected), critical: chiSquareCritical(df), df };
}
