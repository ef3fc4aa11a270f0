// Shared helpers of the node tests: a seeded word source and chi-square tools.
// Tests may use floating-point Math freely; client_js/ may not.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export function readVectors() {
  return JSON.parse(readFileSync(path.join(REPO, 'tests', 'vectors.json'), 'utf8'));
}

/** Return a fill(Uint32Array) drawing from xoshiro128** seeded by splitmix32 (reproducible tests). */
export function seededFill(seed) {
  let x = seed >>> 0;
  const splitmix = () => {
    x = (x + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  const s = [splitmix(), splitmix(), splitmix(), splitmix()];
  const rotl = (v, k) => ((v << k) | (v >>> (32 - k))) >>> 0;
  const next = () => {
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 11);
    for (let i = 0; i < 4; i += 1) s[i] >>>= 0;
    return result;
  };
  return (array) => {
    for (let i = 0; i < array.length; i += 1) array[i] = next();
    return array;
  };
}

/** Return a fill that hands out exactly `words`, throwing when asked for more; .used() counts them. */
export function listFill(words) {
  let index = 0;
  const fill = (array) => {
    for (let i = 0; i < array.length; i += 1) {
      if (index >= words.length) throw new Error(`stream exhausted after ${words.length} words`);
      array[i] = words[index];
      index += 1;
    }
    return array;
  };
  fill.used = () => index;
  return fill;
}

const Z_1E4 = 3.719016485455709; // standard normal quantile at 1 - 1e-4

/** Return the chi-square critical value at alpha = 1e-4 by the Wilson–Hilferty approximation. */
export function chiSquareCritical(df) {
  const a = 2 / (9 * df);
  return df * (1 - a + Z_1E4 * Math.sqrt(a)) ** 3;
}

/** Return Pearson's statistic of observed counts against expected probabilities. */
export function chiSquare(counts, probabilities) {
  const n = counts.reduce((sum, c) => sum + c, 0);
  let stat = 0;
  probabilities.forEach((p, i) => {
    const expected = n * p;
    stat += (counts[i] - expected) ** 2 / expected;
  });
  return stat;
}

export const TWO_53 = 2 ** 53;
