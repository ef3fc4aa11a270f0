// No function in client_js/ is over 80 lines (issue 28), measured by a small scanner of its own:
// no parser is at hand offline, so this one skips comments, strings, template text and regular
// expression literals, then matches braces. A function is counted from the line of its header
// (the `function` keyword, a method's name or an arrow's `=>`) to its closing brace; nested
// functions count inside their outer one and on their own. Arrows with an expression body are not
// counted (an expression is not where a long function hides).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { REPO } from './helpers.mjs';

const CLIENT = path.join(REPO, 'client_js');
const MAX_LINES = 80;
const CONTROL = new Set(['if', 'for', 'while', 'switch', 'catch', 'with']);
// After these a `/` starts a regular expression, not a division.
const BEFORE_REGEX = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void',
  'throw', 'instanceof', 'yield', 'await']);
const PUNCTUATION_BEFORE_REGEX = '(,=:[!&|?{};+-*%<>~^';

/** Return the index just past a quoted string starting at `start` (its quote `text[start]`). */
function skipString(text, start) {
  let at = start + 1;
  while (at < text.length && text[at] !== text[start]) at += text[at] === '\\' ? 2 : 1;
  return at + 1;
}

/** Return the index just past a regular expression literal starting at `start` (a slash). */
function skipRegex(text, start) {
  let at = start + 1;
  let inClass = false;
  while (at < text.length && (inClass || text[at] !== '/')) {
    if (text[at] === '\\') at += 1;
    else if (text[at] === '[') inClass = true;
    else if (text[at] === ']') inClass = false;
    at += 1;
  }
  at += 1;
  while (/[a-z]/i.test(text[at] ?? '')) at += 1;
  return at;
}

/** Return the index of the end of template text from `start` (inside a template): at its `${` or past its backtick. */
function skipTemplate(text, start) {
  let at = start;
  while (at < text.length && text[at] !== '`' && !(text[at] === '$' && text[at + 1] === '{')) {
    at += text[at] === '\\' ? 2 : 1;
  }
  return at;
}

/** Return whether a slash after the token `previous` (or at the start) begins a regular expression. */
function regexAllowed(previous) {
  if (previous === undefined) return true;
  if (previous.type === 'word') return BEFORE_REGEX.has(previous.value);
  return previous.value === '=>' || PUNCTUATION_BEFORE_REGEX.includes(previous.value);
}

/** Return the tokens of JavaScript `text` ({type: 'word' | 'punct' | 'literal', value, line}), comments dropped. */
export function tokens(text) {
  const found = [];
  const braces = []; // 'code' for a brace of code, 'template' for the brace of a template's `${`
  const lineAt = (index) => text.slice(0, index).split('\n').length;
  const push = (type, value, index) => found.push({ type, value, line: lineAt(index) });
  const templateFrom = (at) => {
    const end = skipTemplate(text, at);
    if (text[end] === '`') return end + 1;
    braces.push('template');
    return end + 2;
  };
  let at = 0;
  while (at < text.length) {
    const char = text[at];
    if (/\s/.test(char)) at += 1;
    else if (text.startsWith('//', at)) at = text.indexOf('\n', at) === -1 ? text.length : text.indexOf('\n', at);
    else if (text.startsWith('/*', at)) at = text.indexOf('*/', at + 2) + 2;
    else if (char === '"' || char === "'") { push('literal', char, at); at = skipString(text, at); }
    else if (char === '`') { push('literal', char, at); at = templateFrom(at + 1); }
    else if (char === '/' && regexAllowed(found[found.length - 1])) { push('literal', '/', at); at = skipRegex(text, at); }
    else if (/[\w$]/.test(char)) {
      const word = /^[\w$]+/.exec(text.slice(at))[0];
      push('word', word, at);
      at += word.length;
    } else if (text.startsWith('=>', at)) { push('punct', '=>', at); at += 2; }
    else if (char === '}' && braces[braces.length - 1] === 'template') { braces.pop(); at = templateFrom(at + 1); }
    else {
      if (char === '{') braces.push('code');
      if (char === '}') braces.pop();
      push('punct', char, at);
      at += 1;
    }
  }
  return found;
}

/** Return the index of the `(` matching the `)` at index `close` of `list`. */
function openingParen(list, close) {
  let depth = 0;
  for (let at = close; at >= 0; at -= 1) {
    if (list[at].value === ')') depth += 1;
    if (list[at].value === '(') depth -= 1;
    if (depth === 0) return at;
  }
  return -1;
}

/** Return {name, line} if the `{` at index `open` of `list` opens a function body, else null. */
function functionHeader(list, open) {
  const before = list[open - 1];
  if (before?.value === '=>') {
    const named = list[open - 2]?.value === ')' ? openingParen(list, open - 2) - 2 : open - 3;
    const name = list[named + 1]?.value === '=' && list[named]?.type === 'word' ? list[named].value : '(arrow)';
    return { name, line: before.line };
  }
  if (before?.value !== ')' || before.type !== 'punct') return null;
  const paren = openingParen(list, open - 1);
  const head = list[paren - 1];
  if (head === undefined || head.type !== 'word' || CONTROL.has(head.value)) return null;
  if (head.value === 'function') return { name: '(anonymous)', line: head.line };
  return { name: head.value, line: head.line };
}

/** Return [{name, line, lines}] for every function with a braced body in JavaScript `text`. */
export function functionSpans(text) {
  const list = tokens(text);
  const open = [];
  const spans = [];
  list.forEach((token, index) => {
    if (token.type !== 'punct') return;
    if (token.value === '{') open.push(functionHeader(list, index));
    if (token.value !== '}') return;
    const header = open.pop();
    if (header) spans.push({ ...header, lines: token.line - header.line + 1 });
  });
  assert.equal(open.length, 0, 'every brace is closed');
  return spans;
}

function scripts(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return scripts(full);
    return /\.m?js$/.test(name) ? [full] : [];
  });
}

test('the scanner measures functions, methods and arrows, skipping braces of strings, regexes and comments', () => {
  const body = Array.from({ length: 79 }, (_, i) => `  total += ${i};`).join('\n');
  const source = [
    "const brace = '{', other = \"}\"; // {",
    '/* } */ const shown = `${brace}{${`}${1}`}`; const pattern = /[{]\\}/g;',
    `function long() {\n  let total = 0;\n${body}\n}`,
    'class Box {\n  get size() { return 1; }\n  grow(by) {\n    if (by) {\n      return by / 2;\n    }\n  }\n}',
    'const outer = (a) => {\n  const inner = function () {\n    return a;\n  };\n  return [1].map((x) => ({ x }));\n};',
  ].join('\n');
  const spans = functionSpans(source);
  const byName = Object.fromEntries(spans.map(({ name, lines }) => [name, lines]));
  assert.deepEqual(byName, { long: 82, size: 1, grow: 5, '(anonymous)': 3, outer: 6 });
  assert.ok(byName.long > MAX_LINES, 'a function of 82 lines is over the limit');
});

test(`no function in client_js is over ${MAX_LINES} lines`, () => {
  const files = scripts(CLIENT);
  const spans = files.flatMap((file) => functionSpans(readFileSync(file, 'utf8'))
    .map((span) => ({ ...span, file: path.relative(REPO, file) })));
  assert.ok(spans.length > 100, `the scanner found ${spans.length} functions in client_js; expected many more`);
  assert.ok(spans.some(({ file, name }) => file.endsWith('respond.js') && name === 'setUpSurvey'));
  const long = spans.filter(({ lines }) => lines > MAX_LINES)
    .map(({ file, line, name, lines }) => `${file}:${line} ${name} (${lines} lines)`);
  assert.deepEqual(long, [], `split these functions (at most ${MAX_LINES} lines each)`);
});
