// Tests of client_js/respond-completion.js and respond-progress.js that need no page: the completion
// URL's substitution (every value %-encoded, an absent one empty) and the progress sentence.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { completionUrl } from '../../client_js/respond-completion.js';
import { PROGRESS_FROM, progressText } from '../../client_js/respond-progress.js';

const PROLIFIC = 'https://app.prolific.com/submissions/complete?cc={code}';

test('the redirect gets the code and the declared parameters, %-encoded', () => {
  assert.equal(completionUrl(PROLIFIC, 'C1A2B3C4', { PROLIFIC_PID: 'planted123' }),
    'https://app.prolific.com/submissions/complete?cc=C1A2B3C4');
  assert.equal(completionUrl('/done?rid={rid}&c={code}&s={STUDY_ID}', 'X', { rid: 'a&b=c d/é', STUDY_ID: 's1' }),
    '/done?rid=a%26b%3Dc%20d%2F%C3%A9&c=X&s=s1');
});

test('an absent parameter (or a value that is not text) is substituted empty, never "undefined"', () => {
  assert.equal(completionUrl('/end?rid={rid}&cc={code}', '', {}), '/end?rid=&cc=');
  assert.equal(completionUrl('/end?rid={rid}', 'C', { rid: 7 }), '/end?rid=');
});

test('a value cannot add a parameter, a path or another host', () => {
  const url = completionUrl('https://panel.example/end?rid={rid}', '', { rid: '1&status=screenout#x' });
  assert.equal(new URL(url).searchParams.get('rid'), '1&status=screenout#x');
  assert.equal([...new URL(url).searchParams.keys()].join(), 'rid');
  assert.equal(new URL(completionUrl('/{rid}', '', { rid: '//evil.example' }), 'https://s.example/s/x').host, 's.example');
});

test('the progress line counts from 1 among the shown questions', () => {
  assert.equal(progressText(3, 12, 2), 'Question 3 of 12 · 2 answered');
  assert.equal(PROGRESS_FROM, 4);
});
