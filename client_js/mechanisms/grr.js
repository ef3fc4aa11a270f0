/**
 * Single-choice questions by generalized randomized response (Wang et al. 2017).
 *
 * Report: the index of one of the d options. Series memo: {reports: one report per option}.
 */

import {
  checkInteger, checkThreshold, cryptoRandom, isIntegerIn, MAX_OPTIONS, optionCount, optionMemo,
} from './common.js';

/**
 * Return the option index kept w.p. keepThreshold/2^53, else one of the other d-1 uniformly.
 *
 * Generalized randomized response (Wang et al. 2017): j = below(d-1), skipping the true index.
 */
export function randomizeGRR(index, { d, keepThreshold } = {}, rnd = cryptoRandom) {
  checkInteger('d', d, 2, MAX_OPTIONS);
  checkInteger('index', index, 0, d - 1);
  checkThreshold('keepThreshold', keepThreshold);
  if (rnd.bern53(keepThreshold)) return index;
  const other = rnd.below(d - 1);
  return other + (other >= index ? 1 : 0);
}

const parameters = (question) => ({ d: optionCount(question), keepThreshold: question.keep_threshold });
const randomize = (question, answer, rnd = cryptoRandom) => randomizeGRR(answer, parameters(question), rnd);
const isReport = (question, report) => isIntegerIn(report, 0, question.options.length - 1);

export default Object.freeze({
  kind: 'choice',
  name: 'grr',
  parameters: () => [],
  randomize,
  isReport,
  ...optionMemo(randomize, isReport),
  describe: (question, report) => question.options[report],
});
