/**
 * Single-choice questions by subset selection (Wang et al. 2016; Ye & Barg 2018).
 *
 * Report: d bits with exactly k ones. Series memo: {reports: one report per option}.
 */

import {
  checkInteger, checkThreshold, cryptoRandom, floydSubset, isBitArray, MAX_OPTIONS, markedOptions, optionCount, optionMemo,
  quoteList,
} from './common.js';
import { _ } from '../messages.js';

/**
 * Return d bits marking a random k-subset: it holds `index` w.p. keepThreshold/2^53, and
 * its other members are a uniform subset of the d-1 other options.
 *
 * Subset selection (Wang et al. 2016; Ye & Barg 2018): bern53 first, then Floyd's
 * algorithm picks k-1 (or k) of the others, position o standing for option o + (o >= index).
 */
export function randomizeSubset(index, { d, k, keepThreshold } = {}, rnd = cryptoRandom) {
  checkInteger('d', d, 3, MAX_OPTIONS);
  checkInteger('k', k, 1, d - 1);
  checkInteger('index', index, 0, d - 1);
  checkThreshold('keepThreshold', keepThreshold);
  const kept = rnd.bern53(keepThreshold);
  const bits = new Array(d).fill(0);
  if (kept) bits[index] = 1;
  for (const other of floydSubset(d - 1, kept ? k - 1 : k, rnd)) {
    bits[other + (other >= index ? 1 : 0)] = 1;
  }
  return bits;
}

const parameters = (question) => ({
  d: optionCount(question), k: question.subset_size, keepThreshold: question.keep_threshold,
});
const randomize = (question, answer, rnd = cryptoRandom) => randomizeSubset(answer, parameters(question), rnd);
const isReport = (question, report) => isBitArray(report, question.options.length)
  && report.reduce((sum, bit) => sum + bit, 0) === question.subset_size;

export default Object.freeze({
  kind: 'choice',
  name: 'ss',
  parameters: (question) => [question.subset_size],
  randomize,
  isReport,
  ...optionMemo(randomize, isReport),
  describe: (question, report) => _('the set of options %(options)s, drawn at random to hold your answer more often '
    + 'than any other', { options: quoteList(markedOptions(question, report)) }),
});
