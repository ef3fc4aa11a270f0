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
 * option's bit keeps that option too, drawn independently of the answer,
 * with the reports of its blank and its tick. A question that cannot be memoized is randomized
 * afresh every wave, and the page names it. What a memo holds, and how an answer's report is
 * read from it, is each mechanism's own (mechanisms/*.js, found through mechanisms/index.js).
 *
 * Under two layers (the design's `wave_epsilon`, RAPPOR's instantaneous randomized response), every
 * wave randomizes the kept report again with the question's per-wave layer at ε₁ (waveReport),
 * so two waves' reports differ and a change of answer shows at most as much as ε₁ allows. The memo
 * itself is the same as under one layer: a series' kept reports stay valid when it adds the layer.
 */

import { cryptoRandom } from './mechanisms/common.js';
import { findMechanism, mechanismOf, waveLayer } from './mechanisms/index.js';

const PREFIX = 'ldp-survey:series:';

/** Return the storage key of one question's memo in a series. */
function memoKey(series, questionId) {
  return `${PREFIX}${series}:${questionId}`;
}

/**
 * Return a string that changes whenever the question's answers or their randomization change.
 *
 * The fields every design may hold (options, the three thresholds, the range; null where absent),
 * then the parameters its mechanism names (mechanisms/index.js); none for an unknown mechanism.
 * The options are those of the survey's first language (source_options on a page in another), so
 * that the language a wave is read in never changes the fingerprint.
 */
export function fingerprint(question) {
  const { kind, mechanism } = question;
  const parts = [kind, mechanism, question.source_options ?? question.options ?? null, question.flip_threshold ?? null,
    question.keep_threshold ?? null, question.q_threshold ?? null, question.min ?? null, question.max ?? null];
  parts.push(...(findMechanism(kind, mechanism)?.parameters(question) ?? []));
  return JSON.stringify(parts);
}

/** Return whether a question's mechanism can be memoized (the others are randomized afresh every wave). */
export function canMemoize(question) {
  return typeof findMechanism(question.kind, question.mechanism)?.makeMemo === 'function';
}

/** Return a new memo: a report for every possible answer of the question, drawn by its mechanism. */
export function makeMemo(question, rnd = cryptoRandom) {
  return mechanismOf(question).makeMemo(question, rnd);
}

/** Return whether a memo read back from storage has the shape the question's mechanism needs. */
export function memoFits(question, memo) {
  return memo !== null && typeof memo === 'object' && mechanismOf(question).memoFits(question, memo);
}

/** Return the memoized report of a true answer (same wire format as the mechanism's randomize). */
export function memoReport(question, memo, value) {
  return mechanismOf(question).memoReport(question, memo, value);
}

/** Return the report this wave sends of a true answer: the memoized one, randomized again under two layers. */
export function waveReport(question, memo, value, rnd = cryptoRandom) {
  return waveLayer(question, memoReport(question, memo, value), rnd);
}

/** Return the per-wave ε₁ of a series design under two layers, or null when each wave resends the kept reports. */
export function waveEpsilon(design) {
  return typeof design.wave_epsilon === 'number' ? design.wave_epsilon : null;
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
