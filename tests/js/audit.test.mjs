// Empirical epsilon audit of the shipped randomizers (MATH.md §7, item 2) with the real
// crypto.getRandomValues source: for every ordered pair of inputs (x, x′) and output y,
// LB = ln[CP_lower(k_{x,y}) / CP_upper(k_{x′,y})] must not exceed the published ε′, and the
// point estimate ε̂ = max ln(k_{x,y} / k_{x′,y}) must lie within its sampling error of ε′.
// Clopper–Pearson lower bounds on epsilon as in Jagielski, Ullman & Oprea (2020); a black-box
// audit finds violations (Ding et al. 2018), it cannot prove differential privacy.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import { randomizeDuchi, randomizeGRR, randomizeRR } from '../../client_js/mechanisms.js';
import { readVectors, seededFill, TWO_53 } from './helpers.mjs';
import { clopperPearson, normalQuantile } from './stats.mjs';

const ROWS = readVectors().thresholds;
const row = (epsilon, d) => ROWS.find((r) => r.epsilon === epsilon && r.d === d);

// The audits draw from the real crypto source, so they are not seeded: both error rates are set
// low enough that a spurious CI failure is below one in 10^5 runs of the whole suite.
const ALPHA = 1e-6; // family-wise error of one audit's LB check, split over its comparisons (Bonferroni)
const ESTIMATE_ALPHA = 1e-6; // the ε̂ check is a plain z-test at this level

const POWER = 0.99; // probability of catching an excess of DELTA
const DELTA = 0.1; // smallest excess of epsilon each audit is sized to detect

/** Return the number of ordered input pairs times outputs: the comparisons one audit makes. */
function comparisonCount(inputCount, outputCount) {
  return inputCount * (inputCount - 1) * outputCount;
}

/**
 * Return the draws per input that catch an epsilon excess of `delta` with probability `power`.
 *
 * MATH.md §7 item 3, N ≈ (z_{1−α/m} + z_{1−β})²·2cosh(ε)/δ², adapted to the audit as run:
 * each comparison's α/m is split over its two one-sided Clopper–Pearson bounds, and the two
 * probabilities p (numerator) and q (denominator) are bounded separately, so their standard
 * errors of ln p̂ and ln q̂ add: s = √((1−p)/p) + √((1−q)/q), giving (z_{1−α/2m} + z_{power})²·s²/δ²
 * (s² = 2cosh ε + 2 for binary RR).
 */
function drawsToDetect({ delta, p, q, comparisons, alpha = ALPHA, power = POWER }) {
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
function auditEpsilon({
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

function describe(audit, n) {
  return `N=${n}/input, m=${audit.comparisons}: max LB ${audit.maxLowerBound.toFixed(4)}, `
    + `ε̂ ${audit.epsilonHat.toFixed(4)} ± ${audit.tolerance.toFixed(4)}`;
}

/** Return the audit inputs of binary randomized response with flip threshold T. */
function rrAudit(flipThreshold, draw) {
  const f = flipThreshold / TWO_53;
  const epsilon = Math.log((1 - f) / f);
  const n = drawsToDetect({ delta: DELTA, p: 1 - f, q: f, comparisons: comparisonCount(2, 2) });
  return {
    n, epsilon, inputs: [0, 1], outputs: 2, draw, declared: (x) => (x === 1 ? [f, 1 - f] : [1 - f, f]),
  };
}

for (const epsilon of [1, 2]) {
  test(`RR at epsilon ${epsilon} leaks no more than its realised ε′ and no less`, (t) => {
    const { rr_flip_threshold: flipThreshold, rr_epsilon_float: realised } = row(epsilon, 2);
    const setup = rrAudit(flipThreshold, (x) => randomizeRR(x, { flipThreshold }));
    assert.ok(Math.abs(setup.epsilon - realised) < 1e-12);
    const audit = auditEpsilon({ ...setup, epsilon: realised });
    t.diagnostic(`ε′ ${realised}; ${describe(audit, setup.n)}`);
    assert.deepEqual(audit.problems, []);
  });
}

test('GRR at epsilon 1, d = 5 leaks no more than its realised ε′ and no less', (t) => {
  const d = 5;
  const { grr_keep_threshold: keepThreshold, grr_epsilon_float: realised } = row(1, d);
  const p = keepThreshold / TWO_53;
  const q = (1 - p) / (d - 1);
  const inputs = [...Array(d).keys()];
  const n = drawsToDetect({ delta: DELTA, p, q, comparisons: comparisonCount(d, d) });
  const audit = auditEpsilon({
    n, inputs, outputs: d, epsilon: realised,
    draw: (x) => randomizeGRR(x, { d, keepThreshold }),
    declared: (x) => inputs.map((y) => (y === x ? p : q)),
  });
  t.diagnostic(`ε′ ${realised}; ${describe(audit, n)}`);
  assert.deepEqual(audit.problems, []);
});

test('Duchi at min and max, epsilon 1, leaks no more than its realised ε′ and no less', (t) => {
  const [min, max] = [18, 90];
  const { rr_flip_threshold: flipThreshold, rr_epsilon_float: realised } = row(1, 2);
  const f = flipThreshold / TWO_53;
  const n = drawsToDetect({ delta: DELTA, p: 1 - f, q: f, comparisons: comparisonCount(2, 2) });
  const audit = auditEpsilon({
    n, inputs: [min, max], outputs: 2, epsilon: realised,
    draw: (value) => randomizeDuchi(value, { min, max, flipThreshold }),
    declared: (value) => (value === max ? [f, 1 - f] : [1 - f, f]),
  });
  t.diagnostic(`ε′ ${realised}; ${describe(audit, n)}`);
  assert.deepEqual(audit.problems, []);
});

test('the audit catches RR whose flip probability is 10% too low (it can fail)', (t) => {
  const { rr_flip_threshold: flipThreshold, rr_epsilon_float: realised } = row(1, 2);
  const broken = Math.round(0.9 * flipThreshold);
  const rnd = makeRandom(seededFill(701));
  const setup = rrAudit(flipThreshold, (x) => randomizeRR(x, { flipThreshold: broken }, rnd));
  const f = broken / TWO_53;
  const excess = Math.log((1 - f) / f) - realised;
  assert.ok(drawsToDetect({ delta: excess, p: 1 - f, q: f, comparisons: comparisonCount(2, 2) }) <= setup.n,
    `N=${setup.n} is too small to catch an excess of ${excess} with power ${POWER}`);
  const audit = auditEpsilon({ ...setup, epsilon: realised });
  t.diagnostic(`true epsilon ${realised + excess}; ${describe(audit, setup.n)}`);
  assert.ok(audit.problems.some((problem) => problem.kind === 'leaks'), JSON.stringify(audit.problems));
});

test('the audit catches RR whose flip probability is 10% too high (over-noising)', (t) => {
  const { rr_flip_threshold: flipThreshold, rr_epsilon_float: realised } = row(1, 2);
  const noisy = Math.round(1.1 * flipThreshold);
  const rnd = makeRandom(seededFill(702));
  const setup = rrAudit(flipThreshold, (x) => randomizeRR(x, { flipThreshold: noisy }, rnd));
  const audit = auditEpsilon({ ...setup, epsilon: realised });
  t.diagnostic(`true epsilon ${Math.log((TWO_53 - noisy) / noisy)}; ${describe(audit, setup.n)}`);
  assert.ok(audit.maxLowerBound <= realised);
  assert.deepEqual(audit.problems.map((problem) => problem.kind), ['estimate']);
});

test('drawsToDetect grows like 2cosh ε + 2 for binary RR (MATH.md §7 item 3)', () => {
  const at = (epsilon) => {
    const f = 1 / (1 + Math.exp(epsilon));
    return drawsToDetect({ delta: 0.1, p: 1 - f, q: f, comparisons: comparisonCount(2, 2) });
  };
  assert.ok(at(1) < at(2) && at(2) < at(4));
  const ratio = at(4) / at(1);
  const expected = (2 * Math.cosh(4) + 2) / (2 * Math.cosh(1) + 2);
  assert.ok(Math.abs(ratio / expected - 1) < 1e-3, `ratio ${ratio} vs ${expected}`);
});
