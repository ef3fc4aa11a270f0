// Source rules of client_js/builder.js (the survey builder): it computes no number of the preview
// (they come from the server's planning module) and talks only to the form's same-origin preview URL.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { REPO } from './helpers.mjs';

const text = readFileSync(path.join(REPO, 'client_js', 'builder.js'), 'utf8')
  .replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '');

test('builder.js does no arithmetic on the preview: no Math, no number formatting', () => {
  assert.doesNotMatch(text, /\bMath\./);
  assert.doesNotMatch(text, /toFixed|toPrecision|toExponential|Intl\.NumberFormat|toLocaleString/);
});

test('builder.js fetches only the form\'s preview URL, with the same-origin credentials', () => {
  const fetches = [...text.matchAll(/\bfetch\s*\(/g)];
  assert.equal(fetches.length, 1);
  assert.match(text, /\bfetch\s*\(\s*form\.dataset\.previewUrl\b/);
  assert.match(text, /credentials:\s*'same-origin'/);
  for (const channel of [/XMLHttpRequest/, /sendBeacon/, /WebSocket/, /EventSource/, /new\s+Image\b/, /postMessage/]) {
    assert.doesNotMatch(text, channel);
  }
});

test('builder.js builds the preview with textContent, never from HTML', () => {
  assert.match(text, /textContent/);
  assert.doesNotMatch(text, /innerHTML|outerHTML|insertAdjacentHTML|DOMParser|createContextualFragment/);
});
