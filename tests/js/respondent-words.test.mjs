// The respondent's words: what each server answer to a send says (refusals.js), and how
// every choice and multi-select mechanism describes its report ("We will send …").

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { outcome } from '../../client_js/refusals.js';
import { findMechanism } from '../../client_js/mechanisms/index.js';

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
