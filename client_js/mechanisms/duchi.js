/**
 * Number questions by Duchi, Jordan & Wainwright (2013): the value rounded at random to an end
 * of min..max, then that bit through randomized response.
 *
 * Report: 0 (the low end) or 1 (the high end). Series memo: {cut, reports}: a uniform cut in
 * [0, max-min) that rounds every value as bern(value-min, max-min) does (value-min > cut means
 * the high end), and the reports of the low and the high end.
 */

import {
  checkRange, checkThreshold, cryptoRandom, cutFits, flip, flippedPair, isBit, isBitArray, roundsHigh,
} from './common.js';
import { _ } from '../messages.js';

/**
 * Return a 0/1 report of an integer in min..max: round it at random, then apply RR.
 *
 * Duchi, Jordan & Wainwright (2013): b = 1 w.p. (value-min)/(max-min) exactly, report b XOR flip.
 */
export function randomizeDuchi(value, { min, max, flipThreshold } = {}, rnd = cryptoRandom) {
  checkRange(value, min, max);
  checkThreshold('flipThreshold', flipThreshold);
  const rounded = rnd.bern(value - min, max - min) ? 1 : 0;
  return rounded ^ flip(rnd, flipThreshold);
}

export default Object.freeze({
  kind: 'number',
  name: 'duchi',
  parameters: () => [],
  randomize: (question, answer, rnd = cryptoRandom) => randomizeDuchi(answer,
    { min: question.min, max: question.max, flipThreshold: question.flip_threshold }, rnd),
  isReport: (question, report) => isBit(report),
  makeMemo: (question, rnd = cryptoRandom) => ({
    cut: rnd.below(question.max - question.min),
    reports: flippedPair(question.flip_threshold, rnd),
  }),
  memoFits: (question, memo) => cutFits(question, memo.cut) && isBitArray(memo.reports, 2),
  memoReport: (question, memo, answer) => memo.reports[roundsHigh(answer, question, memo.cut) ? 1 : 0],
  describe: (question, report) => (report === 1 ? _('the high end (%(value)s)', { value: question.max })
    : _('the low end (%(value)s)', { value: question.min })),
});
