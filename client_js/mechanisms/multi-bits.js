/**
 * Multi-select questions with every option's 0/1 bit sent through Warner (1965) randomized response.
 *
 * Report: d bits. Series memo: {bits: for every option, [report of its blank, report of its tick]}
 * (each bit is randomized on its own).
 */

import {
  checkAnswerBits, checkBits, checkThreshold, cryptoRandom, everyFits, flip, flippedPair, isBitArray, markedOptions,
  quoteList,
} from './common.js';
import { _ } from '../messages.js';

/** Return every 0/1 option bit passed through randomized response, in order. */
export function randomizeMulti(bits, { flipThreshold } = {}, rnd = cryptoRandom) {
  checkBits(bits);
  checkThreshold('flipThreshold', flipThreshold);
  return bits.map((bit) => bit ^ flip(rnd, flipThreshold));
}

/** Return the words of a report: which options it marks as ticked, each tick randomized on its own. */
function describe(question, report) {
  const ticked = markedOptions(question, report);
  if (ticked.length === 0) return _('a report with no option ticked');
  if (ticked.length === question.options.length) return _('a report with every option ticked');
  return _('a report with %(options)s ticked and every other option not ticked', { options: quoteList(ticked) });
}

export default Object.freeze({
  kind: 'multi',
  name: 'rr',
  parameters: () => [],
  randomize: (question, answer, rnd = cryptoRandom) => {
    checkAnswerBits(question, answer);
    return randomizeMulti(answer, { flipThreshold: question.flip_threshold }, rnd);
  },
  isReport: (question, report) => isBitArray(report, question.options.length),
  makeMemo: (question, rnd = cryptoRandom) => ({
    bits: question.options.map(() => flippedPair(question.flip_threshold, rnd)),
  }),
  memoFits: (question, memo) => everyFits(memo.bits, question.options.length, (pair) => isBitArray(pair, 2)),
  memoReport: (question, memo, answer) => answer.map((bit, j) => memo.bits[j][bit]),
  describe,
});
