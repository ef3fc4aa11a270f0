// The empirical epsilon audit shared by tests/js/audit.test.mjs and bench/audit/ (docs/explanation/privacy.md,
// items 2 and 3): Clopper–Pearson lower bounds on epsilon as in Jagielski, Ullman & Oprea (2020).
// A black-box audit finds violations (Ding et al. 2018); it cannot prove differential privacy.

import { clopperPearson, normalQuantile } from './stats.mjs';

// The audits draw from the real crypto source, so they are not seeded: both error rates are set
// low enough that a spurious CI failure is below one in 10^5 runs of the whole suite.
export const ALPHA = 1e-6; // family-wise error of one audit's LB check, split over its comparisons (Bonferroni)
export const ESTIMATE_ALPHA = 1e-6; // the ε̂ check is a plain z-test at this level

export const POWER = 0.99; // probability of catching an excess of DELTA
export const DELTA = 0.1; // smallest excess of epsilon each audit is sized to detect

/** Return the number of ordered input pairs times outputs: the comparisons one audit makes. */
export function comparisonCount(inputCount, outputCount) {
  return inputCount * (inputCount - 1) * outputCount;
}

/**
 * Return the draws per input that catch an epsilon excess of `delta` with probability `power`.
 *
 * docs/explanation/privacy.md, audit 3, N ≈ (z_{1−α/m} + z_{1−β})²·2cosh(ε)/δ², adapted to the audit as run:
 * each comparison's α/m is split over its two one-sided Clopper–Pearson bounds, and the two
 * probabilities p (numerator) and q (denominator) are bounded separately, so their standard
 * errors of ln p̂ and ln q̂ add: s = √((1−p)/p) + √((1−q)/q), giving (z_{1−α/2m} + z_{power})²·s²/δ²
 * (s² = 2cosh ε + 2 for binary RR).
 */
export function drawsToDetect({ delta, p, q, comparisons, alpha = ALPHA, power = POWER }) {
  const z = normalQuantile(1 - alpha / (2 * comparisons)) + normalQuantile(power);
  const s = Math.sqrt((1 - p) / p) + Math.sqrt((1 - q) / q);
  return Math.ceil((z * s / delta) ** 2);
}

/**
 * Draw `n` reports per input and return {maxLowerBound, epsilonHat, tolerance, problems, ...}.
 *
 * draw(x) returns an output index in 0..outputs-1; declared(x) its published distribution,
 * whose largest log-ratio must be `epsilon` (ε′). Each comparison uses the two-sided
 * Clopper–Pearson interval at level 1 − α/m, so P(max LB > ε′) ≤ α for a correct randomizer.
 * ε̂ is tested two-sided at level estimateAlpha/m per comparison with the delta-method standard
 * error √((1−P_{x,y})/(n·P_{x,y}) + (1−P_{x′,y})/(n·P_{x′,y})): too small an ε̂ means over-noising.
 * problems lists {kind: 'leaks' | 'estimate', message}.
 */
export function auditEpsilon({
  draw, inputs, outputs, n, epsilon, declared, alpha = ALPHA, estimateAlpha = ESTIMATE_ALPHA,
}) {
  const counts = inputs.map((x) => {
    const tally = new Array(outputs).fill(0);
    for (let i = 0; i < n; i += 1) tally[draw(x)] += 1;
    return tally;
  });
  const probabilities = inputs.map(declared);
  const comparisons = comparisonCount(inputs.length, outputs);
  const level = alpha / comparisons;
  const z = normalQuantile(1 - estimateAlpha / comparisons / 2);
  const bounds = counts.map((tally) => tally.map((k) => clopperPearson(k, n, level)));
  let maxLowerBound = -Infinity;
  let epsilonHat = -Infinity;
  let declaredMax = -Infinity;
  let tolerance = 0;
  inputs.forEach((_, i) => inputs.forEach((__, j) => {
    if (i === j) return;
    for (let y = 0; y < outputs; y += 1) {
      const [p, q] = [probabilities[i][y], probabilities[j][y]];
      maxLowerBound = Math.max(maxLowerBound, Math.log(bounds[i][y].lower / bounds[j][y].upper));
      epsilonHat = Math.max(epsilonHat, Math.log(counts[i][y] / counts[j][y]));
      declaredMax = Math.max(declaredMax, Math.log(p / q));
      tolerance = Math.max(tolerance, z * Math.sqrt((1 - p) / (n * p) + (1 - q) / (n * q)));
    }
  }));
  if (Math.abs(declaredMax - epsilon) > 1e-9) {
    throw new Error(`the declared distributions have epsilon ${declaredMax}, not the epsilon ${epsilon} audited`);
  }
  const problems = [];
  if (maxLowerBound > epsilon) {
    problems.push({ kind: 'leaks', message: `max LB ${maxLowerBound.toFixed(4)} > ε′ ${epsilon.toFixed(4)}` });
  }
  if (Math.abs(epsilonHat - epsilon) > tolerance) {
    problems.push({
      kind: 'estimate',
      message: `ε̂ ${epsilonHat.toFixed(4)} is not within ${tolerance.toFixed(4)} of ε′ ${epsilon.toFixed(4)}`,
    });
  }
  return { counts, comparisons, maxLowerBound, epsilonHat, tolerance, problems };
}

export function describe(audit, n) {
  return `N=${n}/input, m=${audit.comparisons}: max LB ${audit.maxLowerBound.toFixed(4)}, `
    + `ε̂ ${audit.epsilonHat.toFixed(4)} ± ${audit.tolerance.toFixed(4)}`;
}
