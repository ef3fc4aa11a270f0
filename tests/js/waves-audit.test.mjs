// Empirical epsilon audit of a series' two layers as the respondent page draws them (client_js/series.js),
// with the real crypto.getRandomValues source (docs/explanation/privacy.md, audit 2): the permanent layer
// (a fresh memo's report of each answer) against ε∞, the instantaneous layer (a wave's report of each
// kept report) against ε₁, and the two together (a wave's report of each answer) against the composed ε.
// The design entries are those of tests/vectors.json's two-layer cases, made by survey/core/design.py.
// Clopper–Pearson lower bounds as in Jagielski, Ullman & Oprea (2020); an audit finds violations, it
// cannot prove differential privacy.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { makeMemo, memoReport, waveReport } from '../../client_js/series.js';
import { waveLayer } from '../../client_js/mechanisms/index.js';
import { auditEpsilon, comparisonCount, DELTA, describe, drawsToDetect } from './epsilon-audit.mjs';
import { readVectors, TWO_53 } from './helpers.mjs';
import { extremeGroups, groupProbabilities, piecewiseLevelProbabilities } from './piecewise.mjs';

const WAVES = readVectors().streams.filter((c) => c.name.startsWith('two layers'));
const entry = (kind, mechanism) => WAVES.find((c) => c.question.kind === kind && c.question.mechanism === mechanism)
  .question;

/** Return the audit inputs of binary randomized response with flip f over inputs 0, 1 drawn by `draw`. */
function binaryAudit(flip, epsilon, draw) {
  const n = drawsToDetect({ delta: DELTA, p: 1 - flip, q: flip, comparisons: comparisonCount(2, 2) });
  return { n, epsilon, inputs: [0, 1], outputs: 2, draw, declared: (x) => (x === 1 ? [flip, 1 - flip] : [1 - flip, flip]) };
}

function run(t, setup) {
  const audit = auditEpsilon(setup);
  t.diagnostic(`ε ${setup.epsilon}; ${describe(audit, setup.n)}`);
  assert.deepEqual(audit.problems, []);
}

const yesNo = entry('yes_no', 'rr');
const flipInf = yesNo.flip_threshold / TWO_53;
const flipOne = yesNo.wave.flip_threshold / TWO_53;

test('two layers, yes/no: the kept report of an answer leaks no more than ε∞ and no less', (t) => {
  run(t, binaryAudit(flipInf, yesNo.epsilon, (x) => memoReport(yesNo, makeMemo(yesNo), x)));
});

test('two layers, yes/no: a wave\'s report of a kept report leaks no more than ε₁ and no less', (t) => {
  assert.ok(yesNo.wave.epsilon < yesNo.epsilon);
  run(t, binaryAudit(flipOne, yesNo.wave.epsilon, (kept) => waveLayer(yesNo, kept)));
});

test('two layers, yes/no: a wave\'s report of an answer leaks the composed ε, below both', (t) => {
  // P(report 1 | answer 0) = f₁(1 − f∞) + (1 − f₁)f∞: the two flips composed (waves.py).
  const flip = flipOne * (1 - flipInf) + (1 - flipOne) * flipInf;
  const epsilon = Math.log((1 - flip) / flip);
  assert.ok(epsilon < yesNo.wave.epsilon && epsilon < yesNo.epsilon);
  run(t, binaryAudit(flip, epsilon, (x) => waveReport(yesNo, makeMemo(yesNo), x)));
});

test('two layers, one choice of 5: a wave\'s report of a kept option leaks no more than ε₁ and no less', (t) => {
  const choice = entry('choice', 'grr');
  const d = choice.options.length;
  const p = choice.wave.keep_threshold / TWO_53;
  const q = (1 - p) / (d - 1);
  const inputs = [...Array(d).keys()];
  const n = drawsToDetect({ delta: DELTA, p, q, comparisons: comparisonCount(d, d) });
  run(t, {
    n, inputs, outputs: d, epsilon: choice.wave.epsilon,
    draw: (kept) => waveLayer(choice, kept),
    declared: (kept) => inputs.map((y) => (y === kept ? p : q)),
  });
});

test('two layers, a number: a wave\'s level of the lowest and highest kept level leaks no more than ε₁', (t) => {
  const number = entry('number', 'piecewise');
  const { wave } = number;
  const parameters = { min: wave.min, max: wave.max, ratioA: wave.ratio_a, ratioB: wave.ratio_b };
  const groupOf = extremeGroups(parameters);
  const declared = (kept) => groupProbabilities(piecewiseLevelProbabilities(kept, parameters), groupOf, 3);
  const n = drawsToDetect({ delta: DELTA, p: declared(wave.min)[0], q: declared(wave.max)[0],
    comparisons: comparisonCount(2, 3) });
  run(t, {
    n, inputs: [wave.min, wave.max], outputs: 3, epsilon: wave.epsilon, declared,
    draw: (kept) => groupOf(waveLayer(number, kept)),
  });
});

test('without a wave entry a series resends the kept report; with one, a wave changes it at the layer\'s rate', () => {
  const { wave, ...oneLayer } = yesNo;
  const memo = makeMemo(oneLayer);
  const before = JSON.stringify(memo);
  for (let i = 0; i < 50; i += 1) assert.equal(waveReport(oneLayer, memo, 1), memoReport(oneLayer, memo, 1));
  const n = 20000;
  let changed = 0;
  for (let i = 0; i < n; i += 1) changed += waveReport(yesNo, memo, 1) !== memoReport(yesNo, memo, 1);
  const flip = wave.flip_threshold / TWO_53;
  assert.ok(Math.abs(changed / n - flip) <= 5 * Math.sqrt((flip * (1 - flip)) / n), `${changed / n} vs ${flip}`);
  assert.equal(JSON.stringify(memo), before, 'sending never changes the kept reports');
});
