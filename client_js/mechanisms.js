/**
 * Local randomizers of ldp-survey: each turns one true answer into the noisy report sent.
 *
 * Every probability is an integer threshold over 2^53 published in the survey design;
 * the randomizers only compare uniform integers against it (see random.js). The draw
 * order is part of the contract: survey/replay.py mirrors it word for word.
 */

import { u32, u53, bern53, below, bern } from './random.js';

const TWO_53 = 9007199254740992;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const MAX_OPTIONS = 65536;
const MAX_LEVELS = 65536;
const MAX_HYBRID_LEVELS = 512;
const cryptoRandom = { u32, u53, bern53, below, bern };

function checkInteger(name, value, low, high) {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new TypeError(`${name} must be an integer from ${low} to ${high}, got ${String(value)}`);
  }
  if (value < low || value > high) {
    throw new RangeError(`${name} must be an integer from ${low} to ${high}, got ${value}`);
  }
}

function checkThreshold(name, value) {
  checkInteger(name, value, 0, TWO_53);
}

function checkBit(name, value) {
  if (value !== 0 && value !== 1) {
    throw new RangeError(`${name} must be 0 or 1, got ${String(value)}`);
  }
}

function flip(rnd, flipThreshold) {
  return rnd.bern53(flipThreshold) ? 1 : 0;
}

/** Return bit XOR Bernoulli(flipThreshold/2^53): Warner (1965) randomized response. */
export function randomizeRR(bit, { flipThreshold } = {}, rnd = cryptoRandom) {
  checkBit('bit', bit);
  checkThreshold('flipThreshold', flipThreshold);
  return bit ^ flip(rnd, flipThreshold);
}

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

/** Return every 0/1 option bit passed through randomized response, in order. */
export function randomizeMulti(bits, { flipThreshold } = {}, rnd = cryptoRandom) {
  if (!Array.isArray(bits) || bits.length === 0) {
    throw new TypeError(`bits must be a non-empty array of 0/1 values, got ${String(bits)}`);
  }
  bits.forEach((bit, i) => checkBit(`bits[${i}]`, bit));
  checkThreshold('flipThreshold', flipThreshold);
  return bits.map((bit) => bit ^ flip(rnd, flipThreshold));
}

/**
 * Return the positions of a uniform m-subset of {0..n-1}, by Floyd's algorithm over below().
 *
 * For j = n-m .. n-1: t = below(j+1); add t, or j when t is already in (Bentley & Floyd 1987).
 */
function floydSubset(n, m, rnd) {
  const chosen = new Set();
  for (let j = n - m; j < n; j += 1) {
    const t = rnd.below(j + 1);
    chosen.add(chosen.has(t) ? j : t);
  }
  return chosen;
}

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

/**
 * Return d bits, all 0 but for one option j = below(d) whose bit is sent through RR at the full epsilon.
 *
 * The multi-select alternative to spending epsilon/d on every bit: j is drawn independently
 * of the answer, so a report (j, RR(bit j)) costs only the RR's epsilon; a 0 at j is sent as all zeros.
 */
export function randomizeMultiSampled(bits, { flipThreshold } = {}, rnd = cryptoRandom) {
  if (!Array.isArray(bits) || bits.length === 0) {
    throw new TypeError(`bits must be a non-empty array of 0/1 values, got ${String(bits)}`);
  }
  bits.forEach((bit, i) => checkBit(`bits[${i}]`, bit));
  checkThreshold('flipThreshold', flipThreshold);
  const drawn = rnd.below(bits.length);
  const report = new Array(bits.length).fill(0);
  report[drawn] = bits[drawn] ^ flip(rnd, flipThreshold);
  return report;
}

/**
 * Return a 0/1 report of an integer in min..max: round it at random, then apply RR.
 *
 * Duchi, Jordan & Wainwright (2013): b = 1 w.p. (value-min)/(max-min) exactly, report b XOR flip.
 */
export function randomizeDuchi(value, { min, max, flipThreshold } = {}, rnd = cryptoRandom) {
  checkInteger('min', min, -MAX_SAFE, MAX_SAFE);
  checkInteger('max', max, min + 1, MAX_SAFE);
  if (max - min > 2 ** 32) {
    throw new RangeError(`max - min must be at most 2^32, got ${max - min}`);
  }
  checkInteger('value', value, min, max);
  checkThreshold('flipThreshold', flipThreshold);
  const rounded = rnd.bern(value - min, max - min) ? 1 : 0;
  return rounded ^ flip(rnd, flipThreshold);
}

/** Check a level mechanism's input: an integer in min..max (at most 2^32 apart), a > b >= 1, a + b <= levels. */
function checkLevelInput(value, { min, max, ratioA, ratioB }, levels) {
  checkInteger('min', min, -MAX_SAFE, MAX_SAFE);
  checkInteger('max', max, min + 1, MAX_SAFE);
  if (max - min > 2 ** 32) {
    throw new RangeError(`max - min must be at most 2^32, got ${max - min}`);
  }
  checkInteger('value', value, min, max);
  checkInteger('ratioB', ratioB, 1, levels);
  checkInteger('ratioA', ratioA, ratioB + 1, levels - ratioB);
}

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
  checkLevelInput(value, { min, max, ratioA, ratioB }, MAX_LEVELS);
  const range = max - min;
  const scaled = (value - min) * ratioA;
  const remainder = scaled % range;
  const grid = (scaled - remainder) / range + (rnd.below(range) < remainder ? 1 : 0);
  return piecewiseLevel(grid, { ratioA, ratioB }, rnd);
}

/**
 * Return the output level in 0..a+b-1 of grid point `grid` in 0..a, the second step of randomizePiecewise.
 *
 * W.p. a/(a+b) uniform on grid..grid+b-1, else uniform on the other a levels. Exported for
 * the series memo (series.js), which keeps one level per grid point.
 */
export function piecewiseLevel(grid, { ratioA, ratioB } = {}, rnd = cryptoRandom) {
  checkInteger('ratioB', ratioB, 1, MAX_LEVELS);
  checkInteger('ratioA', ratioA, ratioB + 1, MAX_LEVELS - ratioB);
  checkInteger('grid', grid, 0, ratioA);
  if (rnd.below(ratioA + ratioB) < ratioA) return grid + rnd.below(ratioB);
  const other = rnd.below(ratioA);
  return other < grid ? other : other + ratioB;
}

/**
 * Return the output level in 0..G+1 (G = a+b) of an integer in min..max: the hybrid mechanism.
 *
 * Wang et al. (2019, "Collecting and analyzing multidimensional data with local differential
 * privacy", ICDE): w.p. beta = 1 - e^(-eps/2) = (a-b)/a (below(a) < a-b) the piecewise
 * mechanism's level 0..G-1; else Duchi et al. (2013) at the same eps, whose bit is kept
 * w.p. a²/(a²+b²) (flipped when below(a²+b²) < b²) and sent as G + bit. Both branches are
 * eps'-LDP with eps' = 2 ln(a/b), their outputs disjoint, the branch independent of the answer.
 */
export function randomizeHybrid(value, { min, max, ratioA, ratioB } = {}, rnd = cryptoRandom) {
  checkLevelInput(value, { min, max, ratioA, ratioB }, MAX_HYBRID_LEVELS);
  if (rnd.below(ratioA) < ratioA - ratioB) return randomizePiecewise(value, { min, max, ratioA, ratioB }, rnd);
  return ratioA + ratioB + hybridDuchiBit(rnd.bern(value - min, max - min) ? 1 : 0, { ratioA, ratioB }, rnd);
}

/** Return the Duchi branch's bit of the hybrid mechanism: `rounded` flipped when below(a²+b²) < b². */
export function hybridDuchiBit(rounded, { ratioA, ratioB } = {}, rnd = cryptoRandom) {
  checkBit('rounded', rounded);
  checkInteger('ratioB', ratioB, 1, MAX_HYBRID_LEVELS);
  checkInteger('ratioA', ratioA, ratioB + 1, MAX_HYBRID_LEVELS - ratioB);
  return rounded ^ (rnd.below(ratioA * ratioA + ratioB * ratioB) < ratioB * ratioB ? 1 : 0);
}

function optionCount(question) {
  if (!Array.isArray(question.options)) {
    throw new TypeError(`question ${question.id} needs an options array, got ${String(question.options)}`);
  }
  return question.options.length;
}

/**
 * Return the report of one design.json question for its true answer, in the wire format.
 *
 * trueValue: 0/1 for yes_no, the option index for choice, an array of d 0/1 bits for
 * multi, an integer in min..max for number.
 */
export function randomizeQuestion(question, trueValue, rnd = cryptoRandom) {
  if (question === null || typeof question !== 'object') {
    throw new TypeError(`question must be a design question object, got ${String(question)}`);
  }
  const { kind, mechanism } = question;
  if (kind === 'yes_no' && mechanism === 'rr') {
    return randomizeRR(trueValue, { flipThreshold: question.flip_threshold }, rnd);
  }
  if (kind === 'choice' && mechanism === 'grr') {
    return randomizeGRR(trueValue, { d: optionCount(question), keepThreshold: question.keep_threshold }, rnd);
  }
  if (kind === 'choice' && mechanism === 'oue') {
    return randomizeOUE(trueValue, { d: optionCount(question), qThreshold: question.q_threshold }, rnd);
  }
  if (kind === 'choice' && mechanism === 'ss') {
    return randomizeSubset(trueValue,
      { d: optionCount(question), k: question.subset_size, keepThreshold: question.keep_threshold }, rnd);
  }
  if (kind === 'multi' && (mechanism === 'rr' || mechanism === 'sampled')) {
    const d = optionCount(question);
    if (!Array.isArray(trueValue) || trueValue.length !== d) {
      throw new RangeError(`question ${question.id} needs an array of ${d} bits, got ${String(trueValue)}`);
    }
    const randomize = mechanism === 'rr' ? randomizeMulti : randomizeMultiSampled;
    return randomize(trueValue, { flipThreshold: question.flip_threshold }, rnd);
  }
  if (kind === 'number' && mechanism === 'piecewise') {
    return randomizePiecewise(trueValue,
      { min: question.min, max: question.max, ratioA: question.ratio_a, ratioB: question.ratio_b }, rnd);
  }
  if (kind === 'number' && mechanism === 'hybrid') {
    return randomizeHybrid(trueValue,
      { min: question.min, max: question.max, ratioA: question.ratio_a, ratioB: question.ratio_b }, rnd);
  }
  if (kind === 'number' && mechanism === 'duchi') {
    return randomizeDuchi(trueValue,
      { min: question.min, max: question.max, flipThreshold: question.flip_threshold }, rnd);
  }
  throw new RangeError(
    `question ${String(question.id)} has an unsupported kind/mechanism ${String(kind)}/${String(mechanism)}; `
    + 'expected yes_no/rr, choice/grr, choice/oue, choice/ss, multi/rr, multi/sampled, number/duchi, '
    + 'number/piecewise or number/hybrid');
}
