/**
 * Number questions by the optimal piecewise mechanism (Zheng, Mishra & Hu 2025): the piecewise
 * family with the width of its high-probability band and its grid chosen by the server for ε.
 *
 * Published: e^eps = A/B (ratio_a, ratio_b), the grid steps m (steps) and the band's w levels
 * (band). Report: an output level in 0..m+w-1. Series memo: {cut, levels}: a uniform cut in
 * [0, max-min) that rounds every value onto the grid (common.js gridPoint), and the output level
 * of every grid point 0..m.
 */

import {
  checkInteger, checkRange, cryptoRandom, cutFits, everyFits, gridPoint, isIntegerIn,
} from './common.js';
import { _ } from '../messages.js';

export const MAX_OPM_LEVELS = 512;
export const MAX_OPM_RATIO_A = 2 ** 20;
export const MAX_OPM_RATIO_B = 4096;

/** Check the published parameters: 1 <= B < A <= 2^20, B <= 4096, m >= 1, w >= 1, m + w <= 512. */
function checkShape({ ratioA, ratioB, steps, band }) {
  checkInteger('ratioB', ratioB, 1, MAX_OPM_RATIO_B);
  checkInteger('ratioA', ratioA, ratioB + 1, MAX_OPM_RATIO_A);
  checkInteger('steps', steps, 1, MAX_OPM_LEVELS - 1);
  checkInteger('band', band, 1, MAX_OPM_LEVELS - steps);
}

/**
 * Return the output level in 0..m+w-1 of an integer in min..max: the optimal piecewise mechanism.
 *
 * The value is rounded at random onto the grid i = 0..m (floor(m(value-min)/(max-min)), plus 1
 * when below(max-min) < the remainder); then below(wA + mB) < wA puts the level uniform on the
 * band i..i+w-1, else uniform on the m other levels. Every level has probability A/(wA+mB) or
 * B/(wA+mB) for any value, so eps' = ln(A/B) exactly, with integer comparisons only.
 */
export function randomizeOpm(value, { min, max, ratioA, ratioB, steps, band } = {}, rnd = cryptoRandom) {
  checkRange(value, min, max);
  checkShape({ ratioA, ratioB, steps, band });
  const grid = gridPoint(value, { min, max, ratioA: steps }, rnd.below(max - min));
  return opmLevel(grid, { ratioA, ratioB, steps, band }, rnd);
}

/** Return the output level of grid point `grid` in 0..m: the band w.p. wA/(wA+mB), else another level. */
export function opmLevel(grid, { ratioA, ratioB, steps, band } = {}, rnd = cryptoRandom) {
  checkShape({ ratioA, ratioB, steps, band });
  checkInteger('grid', grid, 0, steps);
  if (rnd.below(band * ratioA + steps * ratioB) < band * ratioA) return grid + rnd.below(band);
  const other = rnd.below(steps);
  return other < grid ? other : other + band;
}

const shapeOf = (question) => ({
  ratioA: question.ratio_a, ratioB: question.ratio_b, steps: question.steps, band: question.band,
});
const levels = (question) => question.steps + question.band;
const isReport = (question, report) => isIntegerIn(report, 0, levels(question) - 1);

/** Return a new memo: the cut, then the level of every grid point 0..m in that order. */
function makeMemo(question, rnd = cryptoRandom) {
  const cut = rnd.below(question.max - question.min);
  const shape = shapeOf(question);
  const kept = [];
  for (let grid = 0; grid <= question.steps; grid += 1) kept.push(opmLevel(grid, shape, rnd));
  return { cut, levels: kept };
}

export default Object.freeze({
  kind: 'number',
  name: 'opm',
  parameters: (question) => [question.ratio_a, question.ratio_b ?? null, question.steps, question.band],
  randomize: (question, answer, rnd = cryptoRandom) => randomizeOpm(answer,
    { min: question.min, max: question.max, ...shapeOf(question) }, rnd),
  isReport,
  makeMemo,
  memoFits: (question, memo) => cutFits(question, memo.cut)
    && everyFits(memo.levels, question.steps + 1, (level) => isReport(question, level)),
  memoReport: (question, memo, answer) => memo.levels[gridPoint(answer,
    { min: question.min, max: question.max, ratioA: question.steps }, memo.cut)],
  describe: (question, report) => _('noisy level %(level)s of 0 to %(top)s (low levels lean to %(min)s, high to %(max)s)',
    { level: report, top: levels(question) - 1, min: question.min, max: question.max }),
});
