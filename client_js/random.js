/**
 * Uniform integers and exact Bernoulli draws from a cryptographic random source.
 *
 * Every decision the browser makes is an integer comparison against a threshold the
 * server computed with exact arithmetic; nothing here uses floating-point transcendental
 * functions or a non-cryptographic generator (Garfinkel & Leclerc 2020). The draw order
 * of every function is part of the contract: survey/replay.py mirrors it word for word.
 */

const TWO_26 = 67108864;
const TWO_32 = 4294967296;
const TWO_53 = 9007199254740992;

function checkInteger(name, value, low, high) {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new TypeError(`${name} must be an integer from ${low} to ${high}, got ${String(value)}`);
  }
  if (value < low || value > high) {
    throw new RangeError(`${name} must be an integer from ${low} to ${high}, got ${value}`);
  }
}

/**
 * Return {u32, u53, bern53, below, bern} drawing 32-bit words from `fill`.
 *
 * `fill(array)` must fill a Uint32Array in place, like crypto.getRandomValues; tests
 * inject a fixed list of words to replay exact draw sequences.
 */
export function makeRandom(fill = (array) => crypto.getRandomValues(array)) {
  /** Return one uniform integer on [0, 2^32). */
  function u32() {
    const word = new Uint32Array(1);
    fill(word);
    return word[0];
  }

  /** Return a uniform integer on [0, 2^53): the top 27 bits of one word, then the top 26 of the next. */
  function u53() {
    const high = u32() >>> 5;
    const low = u32() >>> 6;
    return high * TWO_26 + low;
  }

  /** Return true with probability exactly threshold/2^53. */
  function bern53(threshold) {
    checkInteger('threshold', threshold, 0, TWO_53);
    return u53() < threshold;
  }

  /**
   * Return a uniform integer on {0..m-1} by rejection sampling (no modulo bias).
   *
   * Keeps the top r bits of each word, r = bit length of m-1, and retries until the
   * value is below m; m = 1 returns 0 without drawing.
   */
  function below(m) {
    checkInteger('m', m, 1, TWO_32);
    if (m === 1) return 0;
    const shift = Math.clz32(m - 1);
    for (;;) {
      const value = u32() >>> shift;
      if (value < m) return value;
    }
  }

  /** Return true with probability exactly a/b, as below(b) < a. */
  function bern(a, b) {
    checkInteger('b', b, 1, TWO_32);
    checkInteger('a', a, 0, b);
    return below(b) < a;
  }

  return { u32, u53, bern53, below, bern };
}

const cryptoRandom = makeRandom();

export const { u32, u53, bern53, below, bern } = cryptoRandom;
