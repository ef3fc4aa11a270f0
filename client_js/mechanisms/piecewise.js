/**
 * Number questions by the discretised piecewise mechanism (Wang et al. 2019), with e^(eps/2) = a/b
 * published by the server.
 *
 * Report: an output level in 0..a+b-1. Series memo: {cut, levels}: a uniform cut in [0, max-min)
 * that rounds every value onto the grid as the mechanism's randomized rounding does (common.js
 * gridPoint), and the output level of every grid point 0..a.
 */

import {
  checkInteger, checkRange, checkRatio, cryptoRandom, cutFits, everyFits, gridPoint, isIntegerIn, MAX_LEVELS,
} from './common.js';
import { _ } from '../messages.js';

/**
 * Return the output level in 0..a+b-1 of an integer in min..max: the discretised piecewise mechanism.
 *
 * Wang et al. (2019) with e^(eps/2) = a/b published by the server. The value is rounded at
 * random onto the grid i = 0..a (i = floor(a(value-min)/(max-min)), plus 1 w.p. the
 * remainder over max-min); then w.p. a/(a+b) the level is uniform on i..i+b-1, else
 * uniform on the other a levels. Only integer comparisons: every level has probability
 * a/((a+b)b) or b/((a+b)a), so eps' = 2 ln(a/b) exactly.
 */
export function randomizePiecewise(value, { min, max, ratioA, ratioB } = {}, rnd = cryptoRandom) {
  checkRange(value, min, max);
  checkRatio({ ratioA, ratioB }, MAX_LEVELS);
  const grid = gridPoint(value, { min, max, ratioA }, rnd.below(max - min));
  return piecewiseLevel(grid, { ratioA, ratioB }, rnd);
}

/**
 * Return the output level in 0..a+b-1 of grid point `grid` in 0..a, the second step of randomizePiecewise.
 *
 * W.p. a/(a+b) uniform on grid..grid+b-1, else uniform on the other a levels. Exported for
 * the series memo, which keeps one level per grid point.
 */
export function piecewiseLevel(grid, { ratioA, ratioB } = {}, rnd = cryptoRandom) {
  checkRatio({ ratioA, ratioB }, MAX_LEVELS);
  checkInteger('grid', grid, 0, ratioA);
  if (rnd.below(ratioA + ratioB) < ratioA) return grid + rnd.below(ratioB);
  const other = rnd.below(ratioA);
  return other < grid ? other : other + ratioB;
}

/** Return the output level of every grid point 0..a, drawn in that order: a series memo's levels. */
export function gridLevels(question, rnd) {
  const parameters = { ratioA: question.ratio_a, ratioB: question.ratio_b };
  const levels = [];
  for (let grid = 0; grid <= question.ratio_a; grid += 1) levels.push(piecewiseLevel(grid, parameters, rnd));
  return levels;
}

/** Return the memoized level of `answer`: the level kept for the grid point the kept cut rounds it to. */
export function gridMemoReport(question, memo, answer) {
  return memo.levels[gridPoint(answer, { min: question.min, max: question.max, ratioA: question.ratio_a }, memo.cut)];
}

const bins = (question) => question.ratio_a + question.ratio_b;
const isReport = (question, report) => isIntegerIn(report, 0, bins(question) - 1);

export default Object.freeze({
  kind: 'number',
  name: 'piecewise',
  parameters: (question) => [question.ratio_a, question.ratio_b ?? null],
  randomize: (question, answer, rnd = cryptoRandom) => randomizePiecewise(answer,
    { min: question.min, max: question.max, ratioA: question.ratio_a, ratioB: question.ratio_b }, rnd),
  isReport,
  makeMemo: (question, rnd = cryptoRandom) => ({ cut: rnd.below(question.max - question.min), levels: gridLevels(question, rnd) }),
  memoFits: (question, memo) => cutFits(question, memo.cut)
    && everyFits(memo.levels, question.ratio_a + 1, (level) => isReport(question, level)),
  memoReport: gridMemoReport,
  describe: (question, report) => _('noisy level %(level)s of 0 to %(top)s (low levels lean to %(min)s, high to %(max)s)',
    { level: report, top: question.bins - 1, min: question.min, max: question.max }),
});
