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
 * thresholds) gets a new memo, and the page says so.
 */

import { u32, u53, bern53, below, bern } from './random.js';
import { randomizeGRR, randomizeOUE, randomizeRR } from './mechanisms.js';

const PREFIX = 'ldp-survey:series:';
const cryptoRandom = { u32, u53, bern53, below, bern };

/** Return the storage key of one question's memo in a series. */
function memoKey(series, questionId) {
  return `${PREFIX}${series}:${questionId}`;
}

/** Return a string that changes whenever the question's answers or their randomization change. */
export function fingerprint(question) {
  const { kind, mechanism } = question;
  return JSON.stringify([kind, mechanism, question.options ?? null, question.flip_threshold ?? null,
    question.keep_threshold ?? null, question.q_threshold ?? null, question.min ?? null, question.max ?? null]);
}

/** Return whether a question's mechanism can be memoized (the others are randomized afresh every wave). */
export function canMemoize(question) {
  const { kind, mechanism } = question;
  return (kind === 'yes_no' && mechanism === 'rr') || (kind === 'choice' && mechanism === 'grr')
    || (kind === 'choice' && mechanism === 'oue') || (kind === 'multi' && mechanism === 'rr')
    || (kind === 'number' && mechanism === 'duchi');
}

/**
 * Return a new memo: a report for every possible answer of the question.
 *
 * yes_no: the reports of No and Yes; choice: one report per option; multi: for every
 * option, the reports of its blank and its tick (each bit is randomized on its own);
 * number: a uniform cut in [0, max-min) that rounds every value the way Duchi's
 * randomized rounding does (value-min > cut means the high end), and the reports of
 * the low and the high end.
 */
export function makeMemo(question, rnd = cryptoRandom) {
  const { kind, mechanism } = question;
  const flipThreshold = question.flip_threshold;
  if (kind === 'yes_no' || kind === 'number') {
    const cut = kind === 'number' ? rnd.below(question.max - question.min) : undefined;
    const reports = [0, 1].map((bit) => randomizeRR(bit, { flipThreshold }, rnd));
    return kind === 'number' ? { cut, reports } : { reports };
  }
  if (kind === 'multi') {
    return { bits: question.options.map(() => [0, 1].map((bit) => randomizeRR(bit, { flipThreshold }, rnd))) };
  }
  const d = question.options.length;
  if (mechanism === 'grr') {
    return { reports: question.options.map((_, i) => randomizeGRR(i, { d, keepThreshold: question.keep_threshold }, rnd)) };
  }
  if (mechanism === 'oue') {
    return { reports: question.options.map((_, i) => randomizeOUE(i, { d, qThreshold: question.q_threshold }, rnd)) };
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
  if (kind === 'number') {
    return Number.isInteger(memo.cut) && memo.cut >= 0 && memo.cut < question.max - question.min
      && Array.isArray(memo.reports) && memo.reports.length === 2 && memo.reports.every(isBit);
  }
  if (kind === 'multi') {
    return Array.isArray(memo.bits) && memo.bits.length === d
      && memo.bits.every((pair) => Array.isArray(pair) && pair.length === 2 && pair.every(isBit));
  }
  if (!Array.isArray(memo.reports) || memo.reports.length !== d) return false;
  if (mechanism === 'grr') return memo.reports.every((r) => Number.isInteger(r) && r >= 0 && r < d);
  return memo.reports.every((r) => Array.isArray(r) && r.length === d && r.every(isBit));
}

/** Return the memoized report of a true answer (same wire format as randomizeQuestion). */
export function memoReport(question, memo, value) {
  const { kind } = question;
  if (kind === 'multi') return value.map((bit, j) => memo.bits[j][bit]);
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
