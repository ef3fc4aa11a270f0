/**
 * Single-choice questions by optimized unary encoding (Wang et al. 2017).
 *
 * Report: d bits. Series memo: {reports: one report per option}.
 */

import {
  checkInteger, checkThreshold, cryptoRandom, flip, isBitArray, MAX_OPTIONS, markedOptions, optionCount, optionMemo,
  quoteList,
} from './common.js';
import { _ } from '../messages.js';

/**
 * Return d bits: bit `index` is 1 w.p. 1/2, every other bit 1 w.p. qThreshold/2^53.
 *
 * Optimized unary encoding (Wang et al. 2017); bits are drawn in order 0..d-1.
 */
export function randomizeOUE(index, { d, qThreshold } = {}, rnd = cryptoRandom) {
  checkInteger('d', d, 2, MAX_OPTIONS);
  checkInteger('index', index, 0, d - 1);
  checkThreshold('qThreshold', qThreshold);
  const bits = [];
  for (let i = 0; i < d; i += 1) {
    bits.push(i === index ? rnd.below(2) : flip(rnd, qThreshold));
  }
  return bits;
}

const parameters = (question) => ({ d: optionCount(question), qThreshold: question.q_threshold });
const randomize = (question, answer, rnd = cryptoRandom) => randomizeOUE(answer, parameters(question), rnd);
const isReport = (question, report) => isBitArray(report, question.options.length);

export default Object.freeze({
  kind: 'choice',
  name: 'oue',
  parameters: () => [],
  randomize,
  isReport,
  ...optionMemo(randomize, isReport),
  describe: (question, report) => {
    const marked = markedOptions(question, report);
    return marked.length ? _('a report marking %(options)s', { options: quoteList(marked) })
      : _('a report marking no option');
  },
});
