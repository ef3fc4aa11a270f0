// Empirical epsilon audit of the shipped randomizers (docs/explanation/privacy.md, audit 2) with the real
// crypto.getRandomValues source: for every ordered pair of inputs (x, x′) and output y,
// LB = ln[CP_lower(k_{x,y}) / CP_upper(k_{x′,y})] must not exceed the published ε′, and the
// point estimate ε̂ = max ln(k_{x,y} / k_{x′,y}) must lie within its sampling error of ε′.
// Clopper–Pearson lower bounds on epsilon as in Jagielski, Ullman & Oprea (2020); a black-box
// audit finds violations (Ding et al. 2018), it cannot prove differential privacy.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeRandom } from '../../client_js/random.js';
import { randomizeRR } from '../../client_js/mechanisms/warner.js';
import { randomizeGRR } from '../../client_js/mechanisms/grr.js';
import { randomizeDuchi } from '../../client_js/mechanisms/duchi.js';
import { randomizePiecewise } from '../../client_js/mechanisms/piecewise.js';
import { hybridDuchiBit, randomizeHybrid } from '../../client_js/mechanisms/hybrid.js';
import { randomizeOpm } from '../../client_js/mechanisms/opm.js';
import {
  auditEpsilon, comparisonCount, DELTA, describe, drawsToDetect, POWER,
} from './epsilon-audit.mjs';
import { readVectors, seededFill, TWO_53 } from './helpers.mjs';
import {
  extremeGroups, groupProbabilities, piecewiseFit, piecewiseLevelProbabilities,
} from './piecewise.mjs';
import { hybridExtremeGroups, hybridFit, hybridLevelProbabilities } from './hybrid.mjs';
import { opmExtremeGroups, opmFit, opmGroupCount, opmLevelProbabilities } from './opm.mjs';

const ROWS = readVectors().thresholds;
const row = (epsilon, d) => ROWS.find((r) => r.epsilon === epsilon && r.d === d);

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

const PIECEWISE = readVectors().piecewise;

/** Return the audit of the piecewise mechanism between min and max over the three extreme groups. */
function piecewiseAudit(epsilon, { min, max }) {
  const { ratio_a: ratioA, ratio_b: ratioB, epsilon_float: realised } = PIECEWISE.find((r) => r.epsilon === epsilon);
  const parameters = { min, max, ratioA, ratioB };
  const groupOf = extremeGroups(parameters);
  const declared = (value) => groupProbabilities(piecewiseLevelProbabilities(value, parameters), groupOf, 3);
  const [p, q] = [declared(min)[0], declared(max)[0]];
  const n = drawsToDetect({ delta: DELTA, p, q, comparisons: comparisonCount(2, 3) });
  return {
    n, inputs: [min, max], outputs: 3, epsilon: realised, declared,
    draw: (value) => groupOf(randomizePiecewise(value, parameters)),
  };
}

test('piecewise at min and max, epsilon 2, leaks no more than its realised ε′ and no less', (t) => {
  const setup = piecewiseAudit(2, { min: 18, max: 90 });
  const audit = auditEpsilon(setup);
  t.diagnostic(`ε′ ${setup.epsilon}; ${describe(audit, setup.n)}`);
  assert.deepEqual(audit.problems, []);
});

test('piecewise output levels fit their integer parameters at min, a rounded value and max', (t) => {
  const { ratio_a: ratioA, ratio_b: ratioB } = PIECEWISE.find((r) => r.epsilon === 4);
  const parameters = { min: 18, max: 90, ratioA, ratioB };
  for (const value of [18, 40, 61, 90]) {
    const fit = piecewiseFit((x) => randomizePiecewise(x, parameters), value, parameters, { n: 100000, groups: 64 });
    t.diagnostic(`value ${value}: chi-square ${fit.stat.toFixed(1)} (df ${fit.df}, critical ${fit.critical.toFixed(1)})`);
    assert.ok(fit.stat < fit.critical, `value ${value}: chi-square ${fit.stat} >= ${fit.critical}`);
  }
});

test('the piecewise fit can fail: draws for 40 do not fit the distribution of 41', () => {
  const { ratio_a: ratioA, ratio_b: ratioB } = PIECEWISE.find((r) => r.epsilon === 4);
  const parameters = { min: 18, max: 90, ratioA, ratioB };
  const rnd = makeRandom(seededFill(703));
  const fit = piecewiseFit((x) => randomizePiecewise(x - 1, parameters, rnd), 41, parameters,
    { n: 100000, groups: 64 });
  assert.ok(fit.stat > fit.critical, `chi-square ${fit.stat} < ${fit.critical}`);
});

const HYBRID = readVectors().hybrid;

/** Return the audit of the hybrid mechanism between min and max over its five extreme groups. */
function hybridAudit(epsilon, { min, max }, randomize = randomizeHybrid) {
  const { ratio_a: ratioA, ratio_b: ratioB, epsilon_float: realised } = HYBRID.find((r) => r.epsilon === epsilon);
  const parameters = { min, max, ratioA, ratioB };
  const groupOf = hybridExtremeGroups(parameters);
  const declared = (value) => groupProbabilities(hybridLevelProbabilities(value, parameters), groupOf, 5);
  // Sized on the likelier of the two outputs that attain ε′: the band group of min or Duchi's low level.
  const n = Math.min(...[0, 3].map((y) => drawsToDetect(
    { delta: DELTA, p: declared(min)[y], q: declared(max)[y], comparisons: comparisonCount(2, 5) })));
  return {
    n, inputs: [min, max], outputs: 5, epsilon: realised, declared,
    draw: (value) => groupOf(randomize(value, parameters)),
  };
}

test('hybrid at min and max, epsilon 2, leaks no more than its realised ε′ and no less', (t) => {
  const setup = hybridAudit(2, { min: 18, max: 90 });
  const audit = auditEpsilon(setup);
  t.diagnostic(`ε′ ${setup.epsilon}; ${describe(audit, setup.n)}`);
  assert.deepEqual(audit.problems, []);
});

test('hybrid output levels fit their integer parameters at min, a rounded value and max', (t) => {
  const { ratio_a: ratioA, ratio_b: ratioB } = HYBRID.find((r) => r.epsilon === 4);
  const parameters = { min: 18, max: 90, ratioA, ratioB };
  for (const value of [18, 40, 61, 90]) {
    const fit = hybridFit((x) => randomizeHybrid(x, parameters), value, parameters, { n: 100000, groups: 64 });
    t.diagnostic(`value ${value}: chi-square ${fit.stat.toFixed(1)} (df ${fit.df}, critical ${fit.critical.toFixed(1)})`);
    assert.ok(fit.stat < fit.critical, `value ${value}: chi-square ${fit.stat} >= ${fit.critical}`);
  }
});

test('the hybrid fit can fail: a branch drawn as below(a) < a - b + 1 does not fit', () => {
  const { ratio_a: ratioA, ratio_b: ratioB } = HYBRID.find((r) => r.epsilon === 4);
  const parameters = { min: 18, max: 90, ratioA, ratioB };
  const rnd = makeRandom(seededFill(704));
  const skewed = (x) => (rnd.below(ratioA) <= ratioA - ratioB ? randomizePiecewise(x, parameters, rnd)
    : ratioA + ratioB + hybridDuchiBit(rnd.bern(x - 18, 72) ? 1 : 0, { ratioA, ratioB }, rnd));
  const fit = hybridFit(skewed, 61, parameters, { n: 100000, groups: 64 });
  assert.ok(fit.stat > fit.critical, `chi-square ${fit.stat} < ${fit.critical}`);
});

test('the hybrid audit catches a Duchi branch flipped too rarely (it can fail)', (t) => {
  const { ratio_a: ratioA, ratio_b: ratioB } = HYBRID.find((r) => r.epsilon === 2);
  const rnd = makeRandom(seededFill(705));
  // Flip w.p. b²/(a² + 2b²) instead of b²/(a² + b²): the Duchi levels' ratio exceeds (a/b)².
  const leaky = (value, { min, max }) => {
    if (rnd.below(ratioA) < ratioA - ratioB) return randomizePiecewise(value, { min, max, ratioA, ratioB }, rnd);
    const rounded = rnd.bern(value - min, max - min) ? 1 : 0;
    const flipped = rnd.below(ratioA * ratioA + 2 * ratioB * ratioB) < ratioB * ratioB ? 1 : 0;
    return ratioA + ratioB + (rounded ^ flipped);
  };
  const setup = hybridAudit(2, { min: 18, max: 90 }, leaky);
  const audit = auditEpsilon(setup);
  t.diagnostic(`${describe(audit, setup.n)}`);
  assert.ok(audit.problems.some((problem) => problem.kind === 'leaks'), JSON.stringify(audit.problems));
});

const OPM = readVectors().opm;

/** Return the audit of the optimal piecewise mechanism between min and max over its three extreme groups. */
function opmAudit(epsilon, { min, max }, randomize = randomizeOpm) {
  const {
    ratio_a: ratioA, ratio_b: ratioB, steps, band, epsilon_float: realised,
  } = OPM.find((r) => r.epsilon === epsilon);
  const parameters = { min, max, ratioA, ratioB, steps, band };
  const groupOf = opmExtremeGroups(parameters);
  const outputs = opmGroupCount(parameters);
  const declared = (value) => groupProbabilities(opmLevelProbabilities(value, parameters), groupOf, outputs);
  const n = drawsToDetect({
    delta: DELTA, p: declared(min)[0], q: declared(max)[0], comparisons: comparisonCount(2, outputs),
  });
  return {
    n, inputs: [min, max], outputs, epsilon: realised, declared,
    draw: (value) => groupOf(randomize(value, parameters)),
  };
}

for (const epsilon of [2, 4]) {
  test(`optimal piecewise at min and max, epsilon ${epsilon}, leaks no more than its realised ε′ and no less`, (t) => {
    const setup = opmAudit(epsilon, { min: 18, max: 90 });
    const audit = auditEpsilon(setup);
    t.diagnostic(`ε′ ${setup.epsilon}; ${describe(audit, setup.n)}`);
    assert.deepEqual(audit.problems, []);
  });
}

test('optimal piecewise output levels fit their integer parameters at min, rounded values and max', (t) => {
  for (const epsilon of [4, 10]) {
    const { ratio_a: ratioA, ratio_b: ratioB, steps, band } = OPM.find((r) => r.epsilon === epsilon);
    const parameters = { min: 18, max: 90, ratioA, ratioB, steps, band };
    for (const value of [18, 40, 61, 90]) {
      const fit = opmFit((x) => randomizeOpm(x, parameters), value, parameters, { n: 100000, groups: 64 });
      t.diagnostic(`ε ${epsilon}, value ${value}: chi-square ${fit.stat.toFixed(1)} (df ${fit.df}, critical `
        + `${fit.critical.toFixed(1)})`);
      assert.ok(fit.stat < fit.critical, `ε ${epsilon}, value ${value}: chi-square ${fit.stat} >= ${fit.critical}`);
    }
  }
});

test('the optimal piecewise audit catches a band drawn with A + B in place of A (it can fail)', (t) => {
  const rnd = makeRandom(seededFill(705));
  const leaky = (value, { min, max, ratioA, ratioB, steps, band }) => randomizeOpm(value,
    { min, max, ratioA: ratioA + ratioB, ratioB, steps, band }, rnd);
  const setup = opmAudit(2, { min: 18, max: 90 }, leaky);
  const audit = auditEpsilon(setup);
  t.diagnostic(`${describe(audit, setup.n)}`);
  assert.ok(audit.problems.some((problem) => problem.kind === 'leaks'), JSON.stringify(audit.problems));
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

test('drawsToDetect grows like 2cosh ε + 2 for binary RR (docs/explanation/privacy.md, audit 3)', () => {
  const at = (epsilon) => {
    const f = 1 / (1 + Math.exp(epsilon));
    return drawsToDetect({ delta: 0.1, p: 1 - f, q: f, comparisons: comparisonCount(2, 2) });
  };
  assert.ok(at(1) < at(2) && at(2) < at(4));
  const ratio = at(4) / at(1);
  const expected = (2 * Math.cosh(4) + 2) / (2 * Math.cosh(1) + 2);
  assert.ok(Math.abs(ratio / expected - 1) < 1e-3, `ratio ${ratio} vs ${expected}`);
});
