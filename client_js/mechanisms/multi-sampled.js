/**
 * Multi-select questions reporting one option drawn at random, its bit sent through Warner (1965)
 * randomized response at the full epsilon.
 *
 * Report: d bits, at most one of them 1. Series memo: {drawn: the option, drawn independently
 * of the answer like the mechanism's own draw, reports: [report of its blank, report of its tick]};
 * the report of an answer is all zeros but that option's report.
 */

import {
  checkAnswerBits, checkBits, checkThreshold, cryptoRandom, flip, flippedPair, isBitArray, isIntegerIn, markedOptions,
  quoteList,
} from './common.js';
import { _ } from '../messages.js';

/**
 * Return d bits, all 0 but for one option j = below(d) whose bit is sent through RR at the full epsilon.
 *
 * The multi-select alternative to spending epsilon/d on every bit: j is drawn independently
 * of the answer, so a report (j, RR(bit j)) costs only the RR's epsilon; a 0 at j is sent as all zeros.
 */
export function randomizeMultiSampled(bits, { flipThreshold } = {}, rnd = cryptoRandom) {
  checkBits(bits);
  checkThreshold('flipThreshold', flipThreshold);
  const drawn = rnd.below(bits.length);
  const report = new Array(bits.length).fill(0);
  report[drawn] = bits[drawn] ^ flip(rnd, flipThreshold);
  return report;
}

/** Return the words of a report: the one option drawn, when its randomized answer says ticked, else that none is. */
function describe(question, report) {
  const [ticked] = markedOptions(question, report);
  if (ticked === undefined) {
    return _('a report with no option ticked (one option was drawn at random and its randomized answer came out '
      + 'not ticked; which option was drawn is not sent)');
  }
  return _('a report that %(option)s is ticked (the one option drawn at random; the report says nothing about '
    + 'the others)', { option: quoteList([ticked]) });
}

export default Object.freeze({
  kind: 'multi',
  name: 'sampled',
  parameters: () => [],
  randomize: (question, answer, rnd = cryptoRandom) => {
    checkAnswerBits(question, answer);
    return randomizeMultiSampled(answer, { flipThreshold: question.flip_threshold }, rnd);
  },
  isReport: (question, report) => isBitArray(report, question.options.length)
    && report.reduce((sum, bit) => sum + bit, 0) <= 1,
  makeMemo: (question, rnd = cryptoRandom) => ({
    drawn: rnd.below(question.options.length),
    reports: flippedPair(question.flip_threshold, rnd),
  }),
  memoFits: (question, memo) => isIntegerIn(memo.drawn, 0, question.options.length - 1) && isBitArray(memo.reports, 2),
  memoReport: (question, memo, answer) => {
    const report = answer.map(() => 0);
    report[memo.drawn] = memo.reports[answer[memo.drawn]];
    return report;
  },
  describe,
});
