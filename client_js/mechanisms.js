/**
 * Local randomizers of ldp-survey: each turns one true answer into the noisy report sent.
 *
 * Each mechanism lives in its own module under mechanisms/ (the registry, mechanisms/index.js,
 * lists them); this module gathers their randomizers for the tests and the benchmarks, and
 * randomizeQuestion picks a design question's mechanism from the registry. Every probability
 * is an integer threshold over 2^53 published in the survey design; the randomizers only
 * compare uniform integers against it (see random.js). The draw order is part of the
 * contract: survey/core/replay.py mirrors it word for word.
 */

import { cryptoRandom } from './mechanisms/common.js';
import { mechanismOf } from './mechanisms/index.js';

export { randomizeRR } from './mechanisms/warner.js';
export { randomizeGRR } from './mechanisms/grr.js';
export { randomizeOUE } from './mechanisms/oue.js';
export { randomizeSubset } from './mechanisms/subset.js';
export { randomizeMulti } from './mechanisms/multi-bits.js';
export { randomizeMultiSampled } from './mechanisms/multi-sampled.js';
export { randomizeDuchi } from './mechanisms/duchi.js';
export { piecewiseLevel, randomizePiecewise } from './mechanisms/piecewise.js';
export { hybridDuchiBit, randomizeHybrid } from './mechanisms/hybrid.js';
export { opmLevel, randomizeOpm } from './mechanisms/opm.js';

/**
 * Return the report of one design.json question for its true answer, in the wire format.
 *
 * trueValue: 0/1 for yes_no, the option index for choice, an array of d 0/1 bits for
 * multi, an integer in min..max for number.
 */
export function randomizeQuestion(question, trueValue, rnd = cryptoRandom) {
  return mechanismOf(question).randomize(question, trueValue, rnd);
}
