// Audit of the number mechanisms the browser ships, at a larger size than the suite
// (tests/js/audit.test.mjs): the shipped client_js/mechanisms/ with Node's WebCrypto.
//
//   node bench/audit/numbers.mjs [--delta 0.05] [--fit-draws 500000]
//
// For the hybrid, the discretised piecewise and the optimal piecewise mechanism at several epsilons, and
// Duchi's for comparison:
// the empirical epsilon lower bound between min and max (each sized to catch an excess of
// --delta with probability 0.99; output levels merged into the groups that attain eps'),
// the point estimate with its tolerance, and Pearson's chi-square of the output levels
// against the exact distribution from the integer parameters at five true values.
// Exits 1 if any check fails.

import { parseArgs } from 'node:util';

import { randomizeDuchi } from '../../client_js/mechanisms/duchi.js';
import { randomizePiecewise } from '../../client_js/mechanisms/piecewise.js';
import { randomizeHybrid } from '../../client_js/mechanisms/hybrid.js';
import { randomizeOpm } from '../../client_js/mechanisms/opm.js';
import { auditEpsilon, comparisonCount, describe, drawsToDetect } from '../../tests/js/epsilon-audit.mjs';
import { readVectors, TWO_53 } from '../../tests/js/helpers.mjs';
import {
  extremeGroups, groupProbabilities, piecewiseFit, piecewiseLevelProbabilities,
} from '../../tests/js/piecewise.mjs';
import { hybridExtremeGroups, hybridFit, hybridLevelProbabilities } from '../../tests/js/hybrid.mjs';
import { opmExtremeGroups, opmFit, opmGroupCount, opmLevelProbabilities } from '../../tests/js/opm.mjs';

const { values: options } = parseArgs({
  options: { delta: { type: 'string', default: '0.05' }, 'fit-draws': { type: 'string', default: '500000' } },
});
const DELTA = Number(options.delta);
const FIT_DRAWS = Number(options['fit-draws']);
const [MIN, MAX] = [0, 100];
const VECTORS = readVectors();
let failures = 0;

function report(label, audit, n, epsilon, seconds) {
  const ok = audit.problems.length === 0;
  if (!ok) failures += 1;
  console.log(`${label.padEnd(22)} ε′ ${epsilon.toFixed(6)}  ${describe(audit, n)}  `
    + `${seconds.toFixed(1)} s  ${ok ? 'OK' : `FAIL ${JSON.stringify(audit.problems)}`}`);
}

function timed(run) {
  const start = process.hrtime.bigint();
  const result = run();
  return [result, Number(process.hrtime.bigint() - start) / 1e9];
}

console.log(`epsilon lower bounds (excess detectable: ${DELTA}, power 0.99, family-wise α 1e-6)`);
for (const row of VECTORS.piecewise.filter((r) => r.epsilon >= 1)) {
  const parameters = { min: MIN, max: MAX, ratioA: row.ratio_a, ratioB: row.ratio_b };
  const groupOf = extremeGroups(parameters);
  const declared = (value) => groupProbabilities(piecewiseLevelProbabilities(value, parameters), groupOf, 3);
  const n = drawsToDetect({ delta: DELTA, p: declared(MIN)[0], q: declared(MAX)[0], comparisons: comparisonCount(2, 3) });
  if (n > 5e6) {
    console.log(`piecewise ε=${row.epsilon}`.padEnd(22) + ` skipped: ${n} draws per input needed`);
    continue;
  }
  const [audit, seconds] = timed(() => auditEpsilon({
    n, inputs: [MIN, MAX], outputs: 3, epsilon: row.epsilon_float, declared,
    draw: (value) => groupOf(randomizePiecewise(value, parameters)),
  }));
  report(`piecewise ε=${row.epsilon}`, audit, n, row.epsilon_float, seconds);
}
for (const row of VECTORS.hybrid.filter((r) => r.epsilon >= 1)) {
  const parameters = { min: MIN, max: MAX, ratioA: row.ratio_a, ratioB: row.ratio_b };
  const groupOf = hybridExtremeGroups(parameters);
  const declared = (value) => groupProbabilities(hybridLevelProbabilities(value, parameters), groupOf, 5);
  const n = Math.min(...[0, 3].map((y) => drawsToDetect(
    { delta: DELTA, p: declared(MIN)[y], q: declared(MAX)[y], comparisons: comparisonCount(2, 5) })));
  if (n > 5e6) {
    console.log(`hybrid ε=${row.epsilon}`.padEnd(22) + ` skipped: ${n} draws per input needed`);
    continue;
  }
  const [audit, seconds] = timed(() => auditEpsilon({
    n, inputs: [MIN, MAX], outputs: 5, epsilon: row.epsilon_float, declared,
    draw: (value) => groupOf(randomizeHybrid(value, parameters)),
  }));
  report(`hybrid ε=${row.epsilon}`, audit, n, row.epsilon_float, seconds);
}
for (const row of VECTORS.opm.filter((r) => r.epsilon >= 1)) {
  const parameters = { min: MIN, max: MAX, ratioA: row.ratio_a, ratioB: row.ratio_b, steps: row.steps, band: row.band };
  const groupOf = opmExtremeGroups(parameters);
  const outputs = opmGroupCount(parameters);
  const declared = (value) => groupProbabilities(opmLevelProbabilities(value, parameters), groupOf, outputs);
  const n = drawsToDetect({
    delta: DELTA, p: declared(MIN)[0], q: declared(MAX)[0], comparisons: comparisonCount(2, outputs),
  });
  if (n > 5e6) {
    console.log(`opm ε=${row.epsilon}`.padEnd(22) + ` skipped: ${n} draws per input needed`);
    continue;
  }
  const [audit, seconds] = timed(() => auditEpsilon({
    n, inputs: [MIN, MAX], outputs, epsilon: row.epsilon_float, declared,
    draw: (value) => groupOf(randomizeOpm(value, parameters)),
  }));
  report(`opm ε=${row.epsilon}`, audit, n, row.epsilon_float, seconds);
}
for (const row of VECTORS.thresholds.filter((r) => r.d === 2 && [1, 2].includes(r.epsilon))) {
  const f = row.rr_flip_threshold / TWO_53;
  const n = drawsToDetect({ delta: DELTA, p: 1 - f, q: f, comparisons: comparisonCount(2, 2) });
  const [audit, seconds] = timed(() => auditEpsilon({
    n, inputs: [MIN, MAX], outputs: 2, epsilon: row.rr_epsilon_float,
    declared: (value) => (value === MAX ? [f, 1 - f] : [1 - f, f]),
    draw: (value) => randomizeDuchi(value, { min: MIN, max: MAX, flipThreshold: row.rr_flip_threshold }),
  }));
  report(`duchi ε=${row.epsilon}`, audit, n, row.rr_epsilon_float, seconds);
}

console.log(`\ngoodness of fit of the piecewise output levels (${FIT_DRAWS} draws per value, at most 128 groups, α 1e-4)`);
for (const row of VECTORS.piecewise.filter((r) => [1, 4, 10].includes(r.epsilon))) {
  const parameters = { min: MIN, max: MAX, ratioA: row.ratio_a, ratioB: row.ratio_b };
  for (const value of [0, 1, 37, 99, 100]) {
    const [fit, seconds] = timed(() => piecewiseFit((x) => randomizePiecewise(x, parameters), value, parameters,
      { n: FIT_DRAWS, groups: 128 }));
    const ok = fit.stat < fit.critical;
    if (!ok) failures += 1;
    console.log(`piecewise ε=${row.epsilon} value ${String(value).padStart(3)}: chi-square ${fit.stat.toFixed(1)} `
      + `(df ${fit.df}, critical ${fit.critical.toFixed(1)})  ${seconds.toFixed(1)} s  ${ok ? 'OK' : 'FAIL'}`);
  }
}
console.log(`\ngoodness of fit of the hybrid output levels (${FIT_DRAWS} draws per value, at most 128 groups, α 1e-4)`);
for (const row of VECTORS.hybrid.filter((r) => [1, 4, 10].includes(r.epsilon))) {
  const parameters = { min: MIN, max: MAX, ratioA: row.ratio_a, ratioB: row.ratio_b };
  for (const value of [0, 1, 37, 99, 100]) {
    const [fit, seconds] = timed(() => hybridFit((x) => randomizeHybrid(x, parameters), value, parameters,
      { n: FIT_DRAWS, groups: 128 }));
    const ok = fit.stat < fit.critical;
    if (!ok) failures += 1;
    console.log(`hybrid ε=${row.epsilon} value ${String(value).padStart(3)}: chi-square ${fit.stat.toFixed(1)} `
      + `(df ${fit.df}, critical ${fit.critical.toFixed(1)})  ${seconds.toFixed(1)} s  ${ok ? 'OK' : 'FAIL'}`);
  }
}
console.log(`\ngoodness of fit of the optimal piecewise output levels (${FIT_DRAWS} draws per value, at most 128 groups, α 1e-4)`);
for (const row of VECTORS.opm.filter((r) => [1, 4, 10].includes(r.epsilon))) {
  const parameters = { min: MIN, max: MAX, ratioA: row.ratio_a, ratioB: row.ratio_b, steps: row.steps, band: row.band };
  for (const value of [0, 1, 37, 99, 100]) {
    const [fit, seconds] = timed(() => opmFit((x) => randomizeOpm(x, parameters), value, parameters,
      { n: FIT_DRAWS, groups: 128 }));
    const ok = fit.stat < fit.critical;
    if (!ok) failures += 1;
    console.log(`opm ε=${row.epsilon} value ${String(value).padStart(3)}: chi-square ${fit.stat.toFixed(1)} `
      + `(df ${fit.df}, critical ${fit.critical.toFixed(1)})  ${seconds.toFixed(1)} s  ${ok ? 'OK' : 'FAIL'}`);
  }
}
console.log(failures ? `\n${failures} check(s) FAILED` : '\nall checks passed');
process.exitCode = failures ? 1 : 0;
