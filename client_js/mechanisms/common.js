/**
 * Helpers shared by the mechanism modules of this folder: argument checks, the crypto source,
 * randomized response's flip, Floyd's subset draw and the randomized rounding of a number.
 *
 * Every probability is an integer threshold over 2^53 published in the survey design; the
 * randomizers only compare uniform integers against it (see random.js). The draw order is
 * part of the contract: survey/core/replay.py mirrors it word for word.
 */

import { u32, u53, bern53, below, bern } from '../random.js';
import { _ } from '../messages.js';

export const TWO_53 = 9007199254740992;
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;
export const MAX_OPTIONS = 65536;
export const MAX_LEVELS = 65536;
export const MAX_HYBRID_LEVELS = 512;

/** The default random source of every randomizer: crypto.getRandomValues through random.js. */
export const cryptoRandom = Object.freeze({ u32, u53, bern53, below, bern });

/** Throw a TypeError (not an integer) or a RangeError (outside low..high) naming the value. */
export function checkInteger(name, value, low, high) {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new TypeError(`${name} must be an integer from ${low} to ${high}, got ${String(value)}`);
  }
  if (value < low || value > high) {
    throw new RangeError(`${name} must be an integer from ${low} to ${high}, got ${value}`);
  }
}

/** Check a probability threshold: an integer in 0..2^53. */
export function checkThreshold(name, value) {
  checkInteger(name, value, 0, TWO_53);
}

/** Check a bit: 0 or 1. */
export function checkBit(name, value) {
  if (value !== 0 && value !== 1) {
    throw new RangeError(`${name} must be 0 or 1, got ${String(value)}`);
  }
}

/** Check a non-empty array of 0/1 bits. */
export function checkBits(bits) {
  if (!Array.isArray(bits) || bits.length === 0) {
    throw new TypeError(`bits must be a non-empty array of 0/1 values, got ${String(bits)}`);
  }
  bits.forEach((bit, i) => checkBit(`bits[${i}]`, bit));
}

/** Check a number's range: integers min < max, at most 2^32 apart, and value in min..max. */
export function checkRange(value, min, max) {
  checkInteger('min', min, -MAX_SAFE, MAX_SAFE);
  checkInteger('max', max, min + 1, MAX_SAFE);
  if (max - min > 2 ** 32) {
    throw new RangeError(`max - min must be at most 2^32, got ${max - min}`);
  }
  checkInteger('value', value, min, max);
}

/** Check the ratio e^(eps/2) = a/b of a level mechanism: a > b >= 1 and a + b <= levels. */
export function checkRatio({ ratioA, ratioB }, levels) {
  checkInteger('ratioB', ratioB, 1, levels);
  checkInteger('ratioA', ratioA, ratioB + 1, levels - ratioB);
}

/** Return 1 w.p. flipThreshold/2^53, else 0: one bern53 draw. */
export function flip(rnd, flipThreshold) {
  return rnd.bern53(flipThreshold) ? 1 : 0;
}

/** Return the randomized-response reports of 0 and of 1, drawn in that order (a series memo's pair). */
export function flippedPair(flipThreshold, rnd) {
  checkThreshold('flipThreshold', flipThreshold);
  return [0, 1].map((bit) => bit ^ flip(rnd, flipThreshold));
}

/**
 * Return the positions of a uniform m-subset of {0..n-1}, by Floyd's algorithm over below().
 *
 * For j = n-m .. n-1: t = below(j+1); add t, or j when t is already in (Bentley & Floyd 1987).
 */
export function floydSubset(n, m, rnd) {
  const chosen = new Set();
  for (let j = n - m; j < n; j += 1) {
    const t = rnd.below(j + 1);
    chosen.add(chosen.has(t) ? j : t);
  }
  return chosen;
}

/**
 * Return the grid point in 0..a of an integer in min..max, rounded at random by a uniform `cut` in [0, max-min).
 *
 * floor(a(value-min)/(max-min)), plus 1 when cut < a(value-min) mod (max-min): the randomized
 * rounding of the piecewise mechanism (Wang et al. 2019), exact in integers. randomize draws
 * the cut as below(max-min); a series memo draws it once and keeps it.
 */
export function gridPoint(value, { min, max, ratioA }, cut) {
  const range = max - min;
  const scaled = (value - min) * ratioA;
  const remainder = scaled % range;
  return (scaled - remainder) / range + (cut < remainder ? 1 : 0);
}

/** Return whether a kept cut in [0, max-min) rounds `value` to the high end, as Duchi's bern(value-min, max-min) does. */
export function roundsHigh(value, { min }, cut) {
  return value - min > cut;
}

/** Return the number of options of a choice or multi question, which must have an options array. */
export function optionCount(question) {
  if (!Array.isArray(question.options)) {
    throw new TypeError(`question ${question.id} needs an options array, got ${String(question.options)}`);
  }
  return question.options.length;
}

/** Check a multi question's true answer: an array of one bit per option. */
export function checkAnswerBits(question, value) {
  const d = optionCount(question);
  if (!Array.isArray(value) || value.length !== d) {
    throw new RangeError(`question ${question.id} needs an array of ${d} bits, got ${String(value)}`);
  }
}

/** Return whether `value` is 0 or 1. */
export const isBit = (value) => value === 0 || value === 1;

/** Return whether `value` is an integer in low..high. */
export const isIntegerIn = (value, low, high) => Number.isInteger(value) && value >= low && value <= high;

/** Return whether `list` is an array of `length` items that all pass `fits`. */
export const everyFits = (list, length, fits) => Array.isArray(list) && list.length === length && list.every(fits);

/** Return whether `report` is an array of `d` bits. */
export const isBitArray = (report, d) => everyFits(report, d, isBit);

/** Return whether a kept cut is an integer in [0, max-min). */
export const cutFits = (question, cut) => isIntegerIn(cut, 0, question.max - question.min - 1);

/**
 * Return the series-memo methods of a single-choice mechanism: one report per option, drawn in option order.
 *
 * randomize(question, index, rnd) and isReport(question, report) are the mechanism's own.
 */
export function optionMemo(randomize, isReport) {
  return {
    makeMemo: (question, rnd = cryptoRandom) => ({ reports: question.options.map((_, i) => randomize(question, i, rnd)) }),
    memoFits: (question, memo) => everyFits(memo.reports, question.options.length, (r) => isReport(question, r)),
    memoReport: (question, memo, answer) => {
      const report = memo.reports[answer];
      return Array.isArray(report) ? [...report] : report;
    },
  };
}

/** Return the names of the options whose bit is 1, in order. */
export function markedOptions(question, bits) {
  return question.options.filter((_, i) => bits[i] === 1);
}

/** Return option names quoted and joined for a sentence: “A”, “B” and “C”. */
export function quoteList(names) {
  const quoted = names.map((name) => `“${name}”`);
  if (quoted.length < 2) return quoted.join('');
  return _('%(first)s and %(last)s', { first: quoted.slice(0, -1).join(', '), last: quoted[quoted.length - 1] });
}
