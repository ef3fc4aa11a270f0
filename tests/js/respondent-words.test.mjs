// The respondent's words: what each server answer to a send says (refusals.js), how every
// choice and multi-select mechanism describes its report, and the line under each question
// (report-line.js: "We will send …", or that nothing is sent).

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { outcome } from '../../client_js/refusals.js';
import { findMechanism } from '../../client_js/mechanisms/index.js';
import { isNoneTicked, notAskedLine, reportLine, waitingLine } from '../../client_js/report-line.js';

const RETRY = /press send again/i;
const QUESTIONS = new Set(['smoker']);

test('a stored send and a repeat of a stored one finish the page', () => {
  assert.equal(outcome(201, null).outcome, 'stored');
  assert.equal(outcome(409, 'submission').outcome, 'earlier');
});

test('only a network failure, a 429 or a server error advise pressing send again', () => {
  for (const status of [429, 500, 502, 503]) {
    const sent = outcome(status, null);
    assert.equal(sent.outcome, 'lost', String(status));
    assert.equal(sent.final, false);
    assert.match(sent.message, RETRY, String(status));
  }
  for (const [status, field] of [[410, null], [409, 'invite'], [403, 'invite'], [409, 'design'], [403, null],
    [400, 'smoker'], [400, 'answers'], [413, null], [405, null]]) {
    const sent = outcome(status, field, QUESTIONS);
    assert.equal(sent.outcome, 'refused', `${status} ${field}`);
    assert.doesNotMatch(sent.message, RETRY, `${status} ${field}`);
    assert.match(sent.message, /nothing( about them)? was stored/, `${status} ${field}`);
  }
});

test('a closed survey, a used or invalid invitation and a changed design end the page in plain words', () => {
  const closed = outcome(410, null);
  assert.equal(closed.final, true);
  assert.match(closed.message, /^This survey has closed, so your answers were not accepted and nothing about them was stored\./);
  assert.doesNotMatch(closed.message, /survey '|takes no responses|410/, 'no developer text');
  assert.match(outcome(409, 'invite').message, /already been used/);
  assert.match(outcome(403, 'invite').message, /not valid for this survey/);
  assert.match(outcome(409, 'design').message, /reload the page/);
  assert.ok([outcome(409, 'invite'), outcome(403, 'invite'), outcome(409, 'design')].every((sent) => sent.final));
});

test('a refused report of one question keeps the form, and names no status code', () => {
  const sent = outcome(400, 'smoker', QUESTIONS);
  assert.equal(sent.final, false);
  assert.match(sent.message, /this question/);
  assert.equal(outcome(400, 'answers', QUESTIONS).final, true, 'a refusal the respondent cannot fix ends the page');
});

const OPTIONS = ['Walking', 'Cycling', 'Bus', 'Car'];
const multi = (name) => [findMechanism('multi', name), { id: 'm', kind: 'multi', options: OPTIONS }];

test('per-option multi: the sentence names the options its randomized report marks as ticked', () => {
  const [mechanism, question] = multi('rr');
  assert.equal(mechanism.describe(question, [1, 1, 0, 0]),
    'a report with “Walking” and “Cycling” ticked and every other option not ticked');
  assert.equal(mechanism.describe(question, [0, 1, 1, 1]),
    'a report with “Cycling”, “Bus” and “Car” ticked and every other option not ticked');
  assert.equal(mechanism.describe(question, [0, 0, 0, 0]), 'a report with no option ticked');
  assert.equal(mechanism.describe(question, [1, 1, 1, 1]), 'a report with every option ticked');
});

test('sampled multi: the sentence says which one option the report marks, or that it marks none', () => {
  const [mechanism, question] = multi('sampled');
  const one = mechanism.describe(question, [0, 0, 1, 0]);
  assert.match(one, /^a report that “Bus” is ticked \(the one option drawn at random/);
  const none = mechanism.describe(question, [0, 0, 0, 0]);
  assert.match(none, /^a report with no option ticked \(one option was drawn at random/);
  assert.match(none, /which option was drawn is not sent/);
});

test('single-choice mechanisms that send several options name them in a sentence', () => {
  const question = { id: 'c', kind: 'choice', options: OPTIONS, subset_size: 2 };
  assert.equal(findMechanism('choice', 'oue').describe(question, [0, 1, 0, 1]), 'a report marking “Cycling” and “Car”');
  assert.equal(findMechanism('choice', 'oue').describe(question, [0, 0, 0, 0]), 'a report marking no option');
  assert.match(findMechanism('choice', 'ss').describe(question, [1, 0, 0, 1]), /^the set of options “Walking” and “Car”, drawn at random/);
});

test('the line under a question names the report it sends, and a blank multi-select as the answer "none ticked"', () => {
  const yesNo = { id: 'y', kind: 'yes_no', mechanism: 'rr' };
  assert.equal(reportLine(yesNo, 1), 'We will send (after randomizing): Yes — this may not be your answer.');
  const question = { id: 'm', kind: 'multi', mechanism: 'rr', options: OPTIONS };
  assert.equal(reportLine(question, [0, 0, 1, 0], { noneTicked: true }),
    'We will send (after randomizing) for your answer “none ticked”: a report with “Bus” ticked and every other '
    + 'option not ticked — this may not be your answer.');
  assert.match(reportLine(yesNo, 0, { earlier: true }),
    /^We will send \(after randomizing\), the report kept from your earlier answer: No — /);
  assert.ok(isNoneTicked(question, [0, 0, 0, 0]));
  assert.ok(!isNoneTicked(question, [0, 0, 0, 1]), '“Prefer not to say” ticked is not a blank');
  assert.ok(!isNoneTicked(yesNo, 0));
});

test('a question without a usable answer, or not asked, says that nothing is sent', () => {
  assert.match(waitingLine({ kind: 'choice' }), /^No report yet, and nothing is sent until there is one: choose an answer/);
  assert.match(waitingLine({ kind: 'number', min: 18, max: 90 }), /enter a whole number from 18 to 90/);
  assert.match(notAskedLine(), /nothing is sent for this question/);
});
