/**
 * The registry of the ten local randomizers the browser ships, one module each in this folder.
 *
 * Each turns one true answer into the noisy report sent. Every probability is an integer
 * threshold over 2^53 published in the survey design; the randomizers only compare uniform
 * integers against it (see random.js). The draw order is part of the contract:
 * survey/core/replay.py mirrors it word for word.
 *
 * A design question (design.json) names its mechanism by the pair (kind, mechanism); every
 * module default-exports the same frozen shape:
 *   kind, name                          the pair it answers to;
 *   parameters(question)                the design values its reports depend on beyond the options, thresholds
 *                                       and range every series fingerprint lists (series.js), in a fixed order;
 *   randomize(question, answer, rnd)    the report of a true answer, drawn from rnd (random.js);
 *   isReport(question, report)          whether a report is in the mechanism's output domain;
 *   makeMemo(question, rnd)             a series memo: a report for every possible answer (series.js);
 *   memoFits(question, memo)            whether a memo object read back from storage has that shape;
 *   memoReport(question, memo, answer)  the memoized report of an answer;
 *   describe(question, report)          the plain words of a report ("We will send: …").
 * Each module also exports its randomizer by name (randomizeOpm, …) for the tests and the benchmarks.
 */

import { cryptoRandom } from './common.js';
import warner from './warner.js';
import grr from './grr.js';
import oue from './oue.js';
import subset from './subset.js';
import multiBits from './multi-bits.js';
import multiSampled from './multi-sampled.js';
import duchi from './duchi.js';
import piecewise from './piecewise.js';
import hybrid from './hybrid.js';
import opm from './opm.js';

/**
 * Every mechanism, each listed once. The respondent page's joined script (survey/web/page_bundle.py)
 * leaves out the modules its survey does not use; their imports are then undefined and dropped here.
 */
export const MECHANISMS = Object.freeze(
  [warner, grr, oue, subset, multiBits, multiSampled, duchi, piecewise, hybrid, opm].filter((m) => m !== undefined));

/** Return the mechanism registered for (kind, name), or undefined. */
export function findMechanism(kind, name) {
  return MECHANISMS.find((mechanism) => mechanism.kind === kind && mechanism.name === name);
}

/** Return the mechanism of a design question; throw a RangeError naming an unknown kind/mechanism pair. */
export function mechanismOf(question) {
  if (question === null || typeof question !== 'object') {
    throw new TypeError(`question must be a design question object, got ${String(question)}`);
  }
  const { kind, mechanism } = question;
  const found = findMechanism(kind, mechanism);
  if (found === undefined) {
    const known = MECHANISMS.map((m) => `${m.kind}/${m.name}`);
    throw new RangeError(
      `question ${String(question.id)} has an unsupported kind/mechanism ${String(kind)}/${String(mechanism)}; `
      + `expected ${known.slice(0, -1).join(', ')} or ${known[known.length - 1]}`);
  }
  return found;
}

/**
 * Return the report a series wave sends of a kept (or just drawn) report: the instantaneous layer.
 *
 * A question with a `wave` entry (a series under two layers, survey/core/mechanisms/waves.py)
 * randomizes the report again, as an answer of the wave entry's own mechanism on the report's
 * domain (rr on a bit, grr on an option index, rr per bit on a bit list, piecewise on a level);
 * any other question sends it as it is.
 */
export function waveLayer(question, report, rnd = cryptoRandom) {
  if (!question.wave) return report;
  return mechanismOf(question.wave).randomize(question.wave, report, rnd);
}

/**
 * Return the report of one design.json question for its true answer, in the wire format.
 *
 * trueValue: 0/1 for yes_no, the option index for choice, an array of d 0/1 bits for
 * multi, an integer in min..max for number. Under a series' two layers, the mechanism's
 * report then goes through the per-wave layer (waveLayer), drawn after it.
 */
export function randomizeQuestion(question, trueValue, rnd = cryptoRandom) {
  return waveLayer(question, mechanismOf(question).randomize(question, trueValue, rnd), rnd);
}
