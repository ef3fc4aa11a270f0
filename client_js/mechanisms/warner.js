/**
 * Yes/no questions by Warner (1965) randomized response: the answer bit, flipped w.p. flipThreshold/2^53.
 *
 * Report: 0 or 1. Series memo: {reports: [report of No, report of Yes]}.
 */

import {
  checkBit, checkThreshold, cryptoRandom, flip, flippedPair, isBit, isBitArray,
} from './common.js';
import { _ } from '../messages.js';

/** Return bit XOR Bernoulli(flipThreshold/2^53): Warner (1965) randomized response. */
export function randomizeRR(bit, { flipThreshold } = {}, rnd = cryptoRandom) {
  checkBit('bit', bit);
  checkThreshold('flipThreshold', flipThreshold);
  return bit ^ flip(rnd, flipThreshold);
}

export default Object.freeze({
  kind: 'yes_no',
  name: 'rr',
  parameters: () => [],
  randomize: (question, answer, rnd = cryptoRandom) => randomizeRR(answer, { flipThreshold: question.flip_threshold }, rnd),
  isReport: (question, report) => isBit(report),
  makeMemo: (question, rnd = cryptoRandom) => ({ reports: flippedPair(question.flip_threshold, rnd) }),
  memoFits: (question, memo) => isBitArray(memo.reports, 2),
  memoReport: (question, memo, answer) => memo.reports[answer],
  describe: (question, report) => (report === 1 ? _('Yes') : _('No')),
});
