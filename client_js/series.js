/**
 * Memoized reports for the waves of a survey series: RAPPOR's permanent randomized
 * response (Erlingsson, Pihur & Korolova 2014).
 *
 * For each question of a series, the device draws once a report for every possible
 * answer (a "memo") and keeps it in localStorage; every wave then sends memo[answer].
 * An unchanged answer to an unchanged design sends the same report again, which reveals
 * nothing new (post-processing), so later waves add no ε. The memo is made when the page
 * loads, before any answer is given, so what the device keeps does not depend on, and does
 * not reveal, the true answer. A question whose design changed (mechanism, options or
 * thresholds) gets a new memo, and the page says so. A multi question that sends one drawn
 * option's bit (mechanism "sampled") keeps that option too, drawn independently of the answer,
 * with the reports of its blank and its tick. A question that cannot be memoized is randomized
 * afresh every wave, and the page names it.
 */

import { u32, u53, bern53, below, bern } from './random.js';
import {
  hybridDuchiBit, piecewiseLevel, randomizeGRR, randomizeOUE, randomizeRR, randomizeSubset,
} from './mechanisms.js';

const PREFIX = 'ldp-survey:series:';
const cryptoRandom = { u32, u53, bern53, below, bern };

/** Return the storage key of one question's memo in a series. */
function memoKey(series, questionId) {
  return `${PREFIX}${series}:${questionId}`;
}

/** Return a string that changes whenever the question's answers or their randomization change. */
export function fingerprint(question) {
  const { kind, mechanism } = question;
  const parts = [kind, mechanism, question.options ?? null, question.flip_threshold ?? null,
    question.keep_threshold ?? null, question.q_threshold ?? null, question.min ?? null, question.max ?? null];
  // Appended only when present, so that the fingerprints of the other mechanisms are unchanged.
  if (question.subset_size !== undefined) parts.push(question.subset_size);
  if (question.ratio_a !== undefined) parts.push(question.ratio_a, question.ratio_b ?? null);
  return JSON.stringify(parts);
}

/** Return whether a question's mechanism can be memoized (the others are randomized afresh every wave). */
export function canMemoize(question) {
  const { kind, mechanism } = question;
  return (kind === 'yes_no' && mechanism === 'rr') || (kind === 'choice' && mechanism === 'grr')
    || (kind === 'choice' && mechanism === 'oue') || (kind === 'choice' && mechanism === 'ss')
    || (kind === 'multi' && mechanism === 'rr') || (kind === 'multi' && mechanism === 'sampled')
    || (kind === 'number' && mechanism === 'duchi') || (kind === 'number' && mechanism === 'piecewise')
    || (kind === 'number' && mechanism === 'hybrid');
}

/**
 * Return a new memo: a report for every possible answer of the question.
 *
 * yes_no: the reports of No and Yes; choice: one report per option (grr, oue, ss); multi
 * (rr): for every option, the reports of its blank and its tick (each bit is randomized on
 * its own); multi (sampled): the drawn option, uniform over the d options like the
 * mechanism's own draw and independent of the answer, and the reports of its blank and its
 * tick (the report of an answer is all zeros but that option's report); number: a uniform
 * cut in [0, max-min) that rounds every value the way the mechanism's randomized rounding
 * does, and either (duchi: value-min > cut means the high end) the reports of the low and
 * the high end, or (piecewise: the grid point floor(a(value-min)/(max-min)) goes up by one
 * when cut < a(value-min) mod (max-min)) the output level of every grid point 0..a. A hybrid
 * number first draws its branch as the mechanism does (below(a) < a-b, independent of the
 * answer), then the cut and either the piecewise levels of every grid point or the reports
 * G + bit of the low and the high end.
 */
export function makeMemo(question, rnd = cryptoRandom) {
  const { kind, mechanism } = question;
  const flipThreshold = question.flip_threshold;
  if (kind === 'number' && mechanism === 'hybrid') {
    const parameters = { ratioA: question.ratio_a, ratioB: question.ratio_b };
    const piecewise = rnd.below(question.ratio_a) < question.ratio_a - question.ratio_b;
    const cut = rnd.below(question.max - question.min);
    if (piecewise) {
      const levels = [];
      for (let grid = 0; grid <= question.ratio_a; grid += 1) levels.push(piecewiseLevel(grid, parameters, rnd));
      return { piecewise, cut, levels };
    }
    const bins = question.ratio_a + question.ratio_b;
    return { piecewise, cut, levels: [0, 1].map((bit) => bins + hybridDuchiBit(bit, parameters, rnd)) };
  }
  if (kind === 'number' && mechanism === 'piecewise') {
    const cut = rnd.below(question.max - question.min);
    const parameters = { ratioA: question.ratio_a, ratioB: question.ratio_b };
    const levels = [];
    for (let grid = 0; grid <= question.ratio_a; grid += 1) levels.push(piecewiseLevel(grid, parameters, rnd));
    return { cut, levels };
  }
  if (kind === 'yes_no' || (kind === 'number' && mechanism === 'duchi')) {
    const cut = kind === 'number' ? rnd.below(question.max - question.min) : undefined;
    const reports = [0, 1].map((bit) => randomizeRR(bit, { flipThreshold }, rnd));
    return kind === 'number' ? { cut, reports } : { reports };
  }
  if (kind === 'multi' && mechanism === 'sampled') {
    const drawn = rnd.below(question.options.length);
    return { drawn, reports: [0, 1].map((bit) => randomizeRR(bit, { flipThreshold }, rnd)) };
  }
  if (kind === 'multi' && mechanism === 'rr') {
    return { bits: question.options.map(() => [0, 1].map((bit) => randomizeRR(bit, { flipThreshold }, rnd))) };
  }
  const d = question.options?.length;
  if (kind === 'choice' && mechanism === 'grr') {
    return { reports: question.options.map((_, i) => randomizeGRR(i, { d, keepThreshold: question.keep_threshold }, rnd)) };
  }
  if (kind === 'choice' && mechanism === 'oue') {
    return { reports: question.options.map((_, i) => randomizeOUE(i, { d, qThreshold: question.q_threshold }, rnd)) };
  }
  if (kind === 'choice' && mechanism === 'ss') {
    const options = { d, k: question.subset_size, keepThreshold: question.keep_threshold };
    return { reports: question.options.map((_, i) => randomizeSubset(i, options, rnd)) };
  }
  throw new RangeError(`question ${String(question.id)} cannot be memoized (${String(kind)}/${String(mechanism)})`);
}

const isBit = (value) => value === 0 || value === 1;

/** Return whether a memo read back from storage has the shape the question needs. */
export function memoFits(question, memo) {
  if (memo === null || typeof memo !== 'object') return false;
  const { kind, mechanism } = question;
  const d = question.options?.length;
  if (kind === 'yes_no') return Array.isArray(memo.reports) && memo.reports.length === 2 && memo.reports.every(isBit);
  if (kind === 'number' && mechanism === 'hybrid') {
    const bins = question.ratio_a + question.ratio_b;
    const [size, low, high] = memo.piecewise === true ? [question.ratio_a + 1, 0, bins - 1] : [2, bins, bins + 1];
    return (memo.piecewise === true || memo.piecewise === false)
      && Number.isInteger(memo.cut) && memo.cut >= 0 && memo.cut < question.max - question.min
      && Array.isArray(memo.levels) && memo.levels.length === size
      && memo.levels.every((level) => Number.isInteger(level) && level >= low && level <= high);
  }
  if (kind === 'number' && mechanism === 'piecewise') {
    const bins = question.ratio_a + question.ratio_b;
    return Number.isInteger(memo.cut) && memo.cut >= 0 && memo.cut < question.max - question.min
      && Array.isArray(memo.levels) && memo.levels.length === question.ratio_a + 1
      && memo.levels.every((level) => Number.isInteger(level) && level >= 0 && level < bins);
  }
  if (kind === 'number') {
    return Number.isInteger(memo.cut) && memo.cut >= 0 && memo.cut < question.max - question.min
      && Array.isArray(memo.reports) && memo.reports.length === 2 && memo.reports.every(isBit);
  }
  if (kind === 'multi' && mechanism === 'sampled') {
    return Number.isInteger(memo.drawn) && memo.drawn >= 0 && memo.drawn < d
      && Array.isArray(memo.reports) && memo.reports.length === 2 && memo.reports.every(isBit);
  }
  if (kind === 'multi') {
    return Array.isArray(memo.bits) && memo.bits.length === d
      && memo.bits.every((pair) => Array.isArray(pair) && pair.length === 2 && pair.every(isBit));
  }
  if (!Array.isArray(memo.reports) || memo.reports.length !== d) return false;
  if (mechanism === 'grr') return memo.reports.every((r) => Number.isInteger(r) && r >= 0 && r < d);
  const bitsOk = memo.reports.every((r) => Array.isArray(r) && r.length === d && r.every(isBit));
  if (!bitsOk || mechanism !== 'ss') return bitsOk;
  return memo.reports.every((r) => r.reduce((sum, bit) => sum + bit, 0) === question.subset_size);
}

/** Return the memoized report of a true answer (same wire format as randomizeQuestion). */
export function memoReport(question, memo, value) {
  const { kind, mechanism } = question;
  if (kind === 'multi' && mechanism === 'sampled') {
    const report = value.map(() => 0);
    report[memo.drawn] = memo.reports[value[memo.drawn]];
    return report;
  }
  if (kind === 'multi') return value.map((bit, j) => memo.bits[j][bit]);
  if (kind === 'number' && mechanism === 'hybrid' && !memo.piecewise) {
    return memo.levels[value - question.min > memo.cut ? 1 : 0];
  }
  if (kind === 'number' && (mechanism === 'piecewise' || mechanism === 'hybrid')) {
    const range = question.max - question.min;
    const scaled = (value - question.min) * question.ratio_a;
    const remainder = scaled % range;
    return memo.levels[(scaled - remainder) / range + (memo.cut < remainder ? 1 : 0)];
  }
  if (kind === 'number') return memo.reports[value - question.min > memo.cut ? 1 : 0];
  const report = memo.reports[value];
  return Array.isArray(report) ? [...report] : report;
}

/**
 * Return {memo, status} for one question of a series, keeping a new memo in storage.
 *
 * status: 'reused' (an earlier wave's memo for the same design), 'new' (none was kept)
 * or 'changed' (the kept memo was for another design of the question, and is replaced).
 */
export function loadMemo(storage, series, question, rnd = cryptoRandom) {
  const key = memoKey(series, question.id);
  const wanted = fingerprint(question);
  let kept = null;
  try {
    kept = JSON.parse(storage.getItem(key) ?? 'null');
  } catch {
    kept = null;
  }
  if (kept && kept.fingerprint === wanted && memoFits(question, kept.memo)) {
    return { memo: kept.memo, status: 'reused' };
  }
  const memo = makeMemo(question, rnd);
  storage.setItem(key, JSON.stringify({ fingerprint: wanted, memo }));
  return { memo, status: kept ? 'changed' : 'new' };
}

/** Remove every memo of a series from storage; return how many were removed. */
export function forgetSeries(storage, series) {
  const keys = [];
  for (let i = 0; i < storage.length; i += 1) {
    const key = storage.key(i);
    if (key !== null && key.startsWith(`${PREFIX}${series}:`)) keys.push(key);
  }
  keys.forEach((key) => storage.removeItem(key));
  return keys.length;
}
