/**
 * Sample allocation: choose on this device which m of a survey's k questions the respondent answers.
 *
 * Each respondent answers a uniformly drawn m-subset of the questions, each randomized at ε/m
 * (Arcolezi et al. 2021). The draw is a partial Fisher–Yates shuffle over `below()` (rejection
 * sampling, no modulo bias), so every m-subset has probability exactly 1/C(k, m). Which questions
 * were drawn does not depend on the answers, so it reveals nothing about them. The draw is kept
 * on this device for the design, so reloading the page shows the same questions rather than
 * letting the choice of questions depend on the respondent.
 */

import { below } from './random.js';

const DRAW_PREFIX = 'ldp-survey:sample:';

function checkCounts(k, m) {
  if (!Number.isInteger(k) || !Number.isInteger(m) || k < 1 || m < 1 || m > k) {
    throw new RangeError(`a sample needs integers 1 <= m <= k, got k = ${String(k)}, m = ${String(m)}`);
  }
}

/**
 * Return m distinct indices from 0..k-1, a uniform m-subset, in increasing order.
 *
 * Step i swaps position i with a uniform position of i..k-1 (`draw(k - i)`), i = 0..m-1:
 * exactly m calls of `draw`, with bounds k, k-1, ..., k-m+1.
 */
export function drawSubset(k, m, draw = below) {
  checkCounts(k, m);
  const order = Array.from({ length: k }, (_, index) => index);
  for (let i = 0; i < m; i += 1) {
    const j = i + draw(k - i);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order.slice(0, m).sort((a, b) => a - b);
}

/** Return whether `value` is m distinct increasing integers from 0..k-1. */
function isSubset(value, k, m) {
  return Array.isArray(value) && value.length === m
    && value.every((index, i) => Number.isInteger(index) && index >= 0 && index < k
      && (i === 0 || index > value[i - 1]));
}

function storedDraw(key, k, m) {
  try {
    const value = JSON.parse(window.localStorage.getItem(key) ?? 'null');
    return isSubset(value, k, m) ? value : null;
  } catch {
    return null;
  }
}

function storeDraw(key, indices) {
  try {
    window.localStorage.setItem(key, JSON.stringify(indices));
  } catch {
    // Storage can be unavailable (private browsing): the draw then lasts as long as the page.
  }
}

/**
 * Return the questions of the design this respondent answers, in design order.
 *
 * Every question under split allocation; under sample allocation `design.sample` of them,
 * drawn by drawSubset once per device and design (kept in localStorage) when `remember` is true.
 */
export function askedQuestions(design, { draw = below, remember = true } = {}) {
  if (design.allocation !== 'sample') return design.questions;
  const k = design.questions.length;
  const m = design.sample;
  const key = `${DRAW_PREFIX}${design.slug}:${design.hash}`;
  let indices = remember ? storedDraw(key, k, m) : null;
  if (indices === null) {
    indices = drawSubset(k, m, draw);
    if (remember) storeDraw(key, indices);
  }
  return indices.map((index) => design.questions[index]);
}
