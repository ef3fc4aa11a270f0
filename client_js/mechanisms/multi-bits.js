/**
 * Multi-select questions with every option's 0/1 bit sent through Warner (1965) randomized response.
 *
 * Report: d bits. Series memo: {bits: for every option, [report of its blank, report of its tick]}
 * (each bit is randomized on its own).
 */

import {
  checkAnswerBits, checkBits, checkThreshold, cryptoRandom, everyFits, flip, flippedPair, isBitArray, optionList,
} from './common.js';

/** Return every 0/1 option bit passed through randomized response, in order. */
export function randomizeMulti(bits, { flipThreshold } = {}, rnd = cryptoRandom) {
  checkBits(bits);
  checkThreshold('flipThreshold', flipThreshold);
  return bits.map((bit) => bit ^ flip(rnd, flipThreshold));
}

export default Object.freeze({
  kind: 'multi',
  name: 'rr',
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
  describe: (question, report) => `ticked: ${optionList(question, report, 'nothing')}`,
});
