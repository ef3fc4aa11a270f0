// Source rules of client_js/ (docs/explanation/privacy.md): no non-cryptographic or
// floating-point transcendental functions, no third-party code, one same-origin fetch,
// and true-answer inputs without a name attribute.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { REPO } from './helpers.mjs';

const CLIENT = path.join(REPO, 'client_js');

function listFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? listFiles(full) : [full];
  });
}

const FILES = listFiles(CLIENT);
const SCRIPTS = FILES.filter((file) => /\.m?js$/.test(file));
const read = (file) => readFileSync(file, 'utf8');
const rel = (file) => path.relative(REPO, file);

// Built from pieces so this file does not trip a grep of the repository for them.
const BANNED = ['random', 'exp', 'log'].map((fn) => `Math.${fn}`);

test('client_js holds the random source, the mechanisms and their registry, the form and the stylesheet', () => {
  for (const name of ['random.js', 'mechanisms/index.js', 'mechanisms/common.js', 'respond.js',
    'respond-send.js', 'style.css']) {
    assert.ok(existsSync(path.join(CLIENT, name)), `client_js/${name} is missing`);
  }
});

test('mechanism names are spelled only in the mechanism modules: everything else asks the registry', () => {
  const MECHANISM_FOLDER = path.join(CLIENT, 'mechanisms');
  const names = /(["'`])(rr|grr|oue|ss|sampled|duchi|piecewise|hybrid|opm)\1/g;
  for (const file of SCRIPTS.filter((script) => path.dirname(script) !== MECHANISM_FOLDER)) {
    const found = [...read(file).matchAll(names)].map(([literal]) => literal);
    assert.deepEqual(found, [], `${rel(file)} switches on mechanism names; use client_js/mechanisms/index.js`);
  }
});

test('no file in client_js mentions the banned Math functions, not even in a comment', () => {
  for (const file of FILES) {
    const text = read(file);
    for (const banned of BANNED) {
      assert.ok(!text.includes(banned), `${rel(file)} contains ${banned}`);
    }
  }
});

test('only random.js touches the random source, and only through getRandomValues', () => {
  for (const file of SCRIPTS) {
    const text = read(file).replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '');
    if (file === path.join(CLIENT, 'random.js')) {
      assert.match(text, /crypto\.getRandomValues\(/);
      assert.doesNotMatch(text.replace(/crypto\.getRandomValues\(/g, ''), /\bcrypto\b/);
    } else {
      assert.doesNotMatch(text, /\bcrypto\b|getRandomValues/, `${rel(file)} must draw through random.js`);
    }
  }
});

test('every import in client_js is relative and exists (no third-party code or URLs)', () => {
  const specifier = /(?:\bimport\s*(?:[^'"();]*?\bfrom\s*)?|\bexport\s*[^'";]*?\bfrom\s*|\bimport\s*\(\s*)(['"])([^'"]+)\1/g;
  for (const file of SCRIPTS) {
    const text = read(file);
    for (const [, , spec] of text.matchAll(specifier)) {
      assert.match(spec, /^\.\.?\//, `${rel(file)} imports ${spec}, which is not a relative path`);
      assert.ok(existsSync(path.resolve(path.dirname(file), spec)), `${rel(file)} imports missing ${spec}`);
    }
    assert.doesNotMatch(text, /\bhttps?:\/\/|["'`]\/\//, `${rel(file)} mentions an absolute URL`);
    assert.doesNotMatch(text, /\brequire\s*\(|importScripts|\beval\s*\(|new\s+Function\b/, `${rel(file)} loads code dynamically`);
  }
});

test('client_js never parses strings as HTML (server messages are shown as text)', () => {
  for (const file of SCRIPTS) {
    assert.doesNotMatch(read(file), /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, `${rel(file)} writes HTML`);
  }
});

test('the respondent page sends through one fetch, in respond-send.js, to the form\'s same-origin data-action', () => {
  const page = SCRIPTS.filter((file) => /^respond.*\.js$/.test(path.basename(file)));
  const fetches = page.flatMap((file) => [...read(file).matchAll(/\bfetch\s*\(/g)]);
  assert.equal(fetches.length, 1, 'exactly one fetch call in the respondent page\'s modules');
  const text = read(path.join(CLIENT, 'respond-send.js'));
  assert.match(text, /\bfetch\s*\(\s*action\b/, 'fetch must target the checked action URL');
  assert.match(text, /dataset\.action/);
  assert.match(text, /\.origin\s*!==\s*window\.location\.origin/, 'the action must be checked to be same-origin');
  assert.match(text, /credentials:\s*'omit'/, 'no cookie goes with the answers');
  for (const file of page) {
    for (const channel of [/XMLHttpRequest/, /sendBeacon/, /WebSocket/, /EventSource/, /new\s+Image\b/,
      /\.submit\s*\(/, /\bopen\s*\(/, /\.src\s*=/, /\.href\s*=/, /postMessage/,
      /setAttribute\(\s*['"](?:src|action|formaction)/, /location\.replace\s*\(/, /\blocation\s*=/]) {
      assert.doesNotMatch(read(file), channel, `${rel(file)} must not use ${channel}`);
    }
    // The one navigation away: a panel's completion redirect, after the acknowledgment, from respond-completion.js.
    const navigations = [...read(file).matchAll(/location\.assign\s*\(([^)]*)\)/g)].map((match) => match[1].trim());
    const allowed = path.basename(file) === 'respond-completion.js' ? ['url'] : [];
    assert.deepEqual(navigations, allowed, `${rel(file)} navigates away: ${navigations}`);
  }
});

test('true-answer inputs in respond.html carry no name attribute', () => {
  const html = read(path.join(REPO, 'templates', 'respond.html'));
  const controls = [...html.matchAll(/<(input|select|textarea|button)\b[^>]*>/gi)];
  assert.ok(controls.length > 0);
  for (const [tag] of controls) {
    assert.doesNotMatch(tag, /\sname\s*=/i, `control with a name attribute: ${tag}`);
  }
  const forms = [...html.matchAll(/<form\b[^>]*>/gi)];
  assert.equal(forms.length, 1);
  assert.doesNotMatch(forms[0][0], /\s(action|method)\s*=/i, 'the form must not submit anywhere by itself');
});
