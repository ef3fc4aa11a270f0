// Display logic without leakage (client_js/respond-branching.js; survey/core/branching.py).
//
// 1. The browser and the Python mirror agree on which questions apply and on the declared value a
//    question that does not apply is randomized from (tests/vectors.json, "branching").
// 2. Empirical epsilon audits of branched questions through the shipped randomizers: the report of
//    the hidden branch (the "does not apply" value) and of every shown answer, drawn with
//    crypto.getRandomValues, leak no more than the question's realised ε′ between any two of them
//    (Clopper–Pearson lower bounds as in Jagielski, Ullman & Oprea 2020; tests/js/epsilon-audit.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { mechanismOf } from '../../client_js/mechanisms/index.js';
import { applies, isBranched, notApplicableValue } from '../../client_js/respond-branching.js';
import { auditEpsilon, comparisonCount, DELTA, describe, drawsToDetect } from './epsilon-audit.mjs';
import { readVectors, TWO_53 } from './helpers.mjs';

const BRANCHING = readVectors().branching;
const entry = (id) => BRANCHING.questions.find((question) => question.id === id);

test('the browser makes every report from the value the Python mirror does', () => {
  assert.ok(BRANCHING.cases.length >= 5);
  for (const { answers, made } of BRANCHING.cases) {
    const values = {};
    for (const question of BRANCHING.questions) {
      const shown = applies(question, (id) => values[id]);
      values[question.id] = shown ? answers[question.id] : notApplicableValue(question);
    }
    assert.deepEqual(values, made);
  }
});

test('applies reads the rule: an unanswered earlier question hides, a listed value shows', () => {
  const quit = entry('quit');
  assert.equal(isBranched(quit), true);
  assert.equal(isBranched(entry('smoker')), false);
  assert.equal(applies(quit, () => undefined), false);
  assert.equal(applies(quit, () => 0), true);
  assert.equal(applies(quit, () => 1), true);
  assert.equal(applies(quit, () => 2), false);
  assert.deepEqual(notApplicableValue(entry('why')), [0, 0, 0, 1]);
  assert.equal(notApplicableValue(entry('cigarettes')), 0);
});

/** Return the audit of a branched GRR question over its shown answers and its hidden branch's value. */
function grrBranchAudit(question) {
  const d = question.options.length;
  const p = question.keep_threshold / TWO_53;
  const q = (1 - p) / (d - 1);
  const hidden = notApplicableValue(question);
  const inputs = [...Array(d - 1).keys(), hidden];
  const n = drawsToDetect({ delta: DELTA, p, q, comparisons: comparisonCount(d, d) });
  return {
    n, inputs, outputs: d, epsilon: question.epsilon,
    draw: (x) => mechanismOf(question).randomize(question, x),
    declared: (x) => inputs.map((y) => (y === x ? p : q)),
  };
}

for (const id of ['quit', 'kind']) {
  test(`branched choice "${id}": the hidden and the shown branches leak no more than ε′ and no less`, (t) => {
    const setup = grrBranchAudit(entry(id));
    const audit = auditEpsilon(setup);
    t.diagnostic(`ε′ ${setup.epsilon}; ${describe(audit, setup.n)}`);
    assert.deepEqual(audit.problems, []);
  });
}

test('branched number (Duchi): its declared value and shown answers leak no more than ε′ and no less', (t) => {
  const question = entry('cigarettes');
  const { min, max } = question;
  const f = question.flip_threshold / TWO_53;
  const inputs = [notApplicableValue(question), 12, max];
  const declared = (x) => {
    const one = f + (1 - 2 * f) * ((x - min) / (max - min));
    return [1 - one, one];
  };
  const n = drawsToDetect({ delta: DELTA, p: 1 - f, q: f, comparisons: comparisonCount(3, 2) });
  const audit = auditEpsilon({
    n, inputs, outputs: 2, epsilon: question.epsilon, declared,
    draw: (x) => mechanismOf(question).randomize(question, x),
  });
  t.diagnostic(`ε′ ${question.epsilon}; ${describe(audit, n)}`);
  assert.deepEqual(audit.problems, []);
});

test('the audit can fail: a page that sent the hidden branch unrandomized is caught', () => {
  const question = entry('quit');
  const setup = grrBranchAudit(question);
  const hidden = notApplicableValue(question);
  const leaky = { ...setup, n: 20000, draw: (x) => (x === hidden ? hidden : mechanismOf(question).randomize(question, x)) };
  const audit = auditEpsilon(leaky);
  assert.ok(audit.problems.some((problem) => problem.kind === 'leaks'));
});

test('under sample allocation the questions that decide a drawn one are shown, in a chain too', async () => {
  const { Branching } = await import('../../client_js/respond-branching.js');
  const questions = BRANCHING.questions;
  const byId = new Map(questions.map((question) => [question.id, question]));
  const deciding = (asked) => Branching.prototype.decidingIds.call({ questions, byId, askedIds: new Set(asked) });
  assert.deepEqual([...deciding(['why'])].sort(), ['kind', 'quit', 'smoker']);
  assert.deepEqual([...deciding(['quit', 'smoker'])].sort(), ['kind']);
  assert.deepEqual([...deciding(['smoker', 'cigarettes'])], []);
});
