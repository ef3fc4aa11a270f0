/**
 * Number questions by the hybrid mechanism (Wang et al. 2019, "Collecting and analyzing
 * multidimensional data with local differential privacy", ICDE): the piecewise mechanism
 * w.p. beta = 1 - e^(-eps/2), else Duchi et al. (2013) at the same eps.
 *
 * Report: a level in 0..G+1 (G = a+b): a piecewise level 0..G-1, or G + Duchi's bit. Series
 * memo: {piecewise, cut, levels}: the branch, drawn as the mechanism draws it (independent of
 * the answer), a uniform cut in [0, max-min), and either the piecewise level of every grid point
 * or the reports G + bit of the low and the high end.
 */

import {
  checkBit, checkRange, checkRatio, cryptoRandom, cutFits, everyFits, isIntegerIn, MAX_HYBRID_LEVELS, roundsHigh,
} from './common.js';
import piecewise, { gridLevels, gridMemoReport, randomizePiecewise } from './piecewise.js';
import { _ } from '../messages.js';

/**
 * Return the output level in 0..G+1 (G = a+b) of an integer in min..max: the hybrid mechanism.
 *
 * Wang et al. (2019): w.p. beta = 1 - e^(-eps/2) = (a-b)/a (below(a) < a-b) the piecewise
 * mechanism's level 0..G-1; else Duchi et al. (2013) at the same eps, whose bit is kept
 * w.p. a²/(a²+b²) (flipped when below(a²+b²) < b²) and sent as G + bit. Both branches are
 * eps'-LDP with eps' = 2 ln(a/b), their outputs disjoint, the branch independent of the answer.
 */
export function randomizeHybrid(value, { min, max, ratioA, ratioB } = {}, rnd = cryptoRandom) {
  checkRange(value, min, max);
  checkRatio({ ratioA, ratioB }, MAX_HYBRID_LEVELS);
  if (rnd.below(ratioA) < ratioA - ratioB) return randomizePiecewise(value, { min, max, ratioA, ratioB }, rnd);
  return ratioA + ratioB + hybridDuchiBit(rnd.bern(value - min, max - min) ? 1 : 0, { ratioA, ratioB }, rnd);
}

/** Return the Duchi branch's bit of the hybrid mechanism: `rounded` flipped when below(a²+b²) < b². */
export function hybridDuchiBit(rounded, { ratioA, ratioB } = {}, rnd = cryptoRandom) {
  checkBit('rounded', rounded);
  checkRatio({ ratioA, ratioB }, MAX_HYBRID_LEVELS);
  return rounded ^ (rnd.below(ratioA * ratioA + ratioB * ratioB) < ratioB * ratioB ? 1 : 0);
}

const bins = (question) => question.ratio_a + question.ratio_b;

/** Return a new memo: the branch first (below(a) < a-b), then the cut, then the branch's levels. */
function makeMemo(question, rnd = cryptoRandom) {
  const parameters = { ratioA: question.ratio_a, ratioB: question.ratio_b };
  const isPiecewise = rnd.below(question.ratio_a) < question.ratio_a - question.ratio_b;
  const cut = rnd.below(question.max - question.min);
  if (isPiecewise) return { piecewise: isPiecewise, cut, levels: gridLevels(question, rnd) };
  return { piecewise: isPiecewise, cut, levels: [0, 1].map((bit) => bins(question) + hybridDuchiBit(bit, parameters, rnd)) };
}

/** Return whether a kept memo has the branch's shape: a+1 piecewise levels, or Duchi's two levels G and G+1. */
function memoFits(question, memo) {
  const [size, low, high] = memo.piecewise === true ? [question.ratio_a + 1, 0, bins(question) - 1]
    : [2, bins(question), bins(question) + 1];
  return (memo.piecewise === true || memo.piecewise === false) && cutFits(question, memo.cut)
    && everyFits(memo.levels, size, (level) => isIntegerIn(level, low, high));
}

/** Return the memoized level of `answer`: through the kept cut, to a grid point's level or an end's level. */
function memoReport(question, memo, answer) {
  if (memo.piecewise) return gridMemoReport(question, memo, answer);
  return memo.levels[roundsHigh(answer, question, memo.cut) ? 1 : 0];
}

/** Return the words of a report: an end of the range for Duchi's two levels, else the piecewise level's. */
function describe(question, report) {
  if (report === question.bins) {
    return _('the low end (%(value)s), after rounding and a random flip', { value: question.min });
  }
  if (report === question.bins + 1) {
    return _('the high end (%(value)s), after rounding and a random flip', { value: question.max });
  }
  return piecewise.describe(question, report);
}

export default Object.freeze({
  kind: 'number',
  name: 'hybrid',
  parameters: (question) => [question.ratio_a, question.ratio_b ?? null],
  randomize: (question, answer, rnd = cryptoRandom) => randomizeHybrid(answer,
    { min: question.min, max: question.max, ratioA: question.ratio_a, ratioB: question.ratio_b }, rnd),
  isReport: (question, report) => isIntegerIn(report, 0, bins(question) + 1),
  makeMemo,
  memoFits,
  memoReport,
  describe,
});
