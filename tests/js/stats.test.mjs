// The distribution functions of stats.mjs against reference values computed with
// SciPy 1.17.1 (scipy.special.betainc, scipy.stats.beta.ppf, scipy.stats.norm.ppf and
// scipy.stats.binomtest(k, n).proportion_ci(level, method='exact')), hard-coded here.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { betaQuantile, clopperPearson, logGamma, normalQuantile, regularizedBeta } from './stats.mjs';

function assertClose(actual, expected, relative, label) {
  const error = Math.abs(actual - expected) / Math.abs(expected);
  assert.ok(error <= relative, `${label}: ${actual} vs ${expected} (relative error ${error})`);
}

test('logGamma matches factorials and Γ(1/2) = √π', () => {
  assertClose(logGamma(10), Math.log(362880), 1e-14, 'ln Γ(10)');
  assertClose(logGamma(0.5), 0.5 * Math.log(Math.PI), 1e-14, 'ln Γ(1/2)');
  assertClose(logGamma(101), 363.73937555556347, 1e-14, 'ln Γ(101) = ln 100!');
  assert.throws(() => logGamma(0), /x > 0, got 0/);
});

test('regularizedBeta matches scipy.special.betainc', () => {
  const cases = [
    [0.4, 2, 3, 0.5247999999999999],
    [0.3, 0.5, 0.5, 0.36901011956554536],
    [0.25, 10, 20, 0.16630494959787945],
    [0.27, 2422, 6578, 0.5767798621200737],
    [0.2995, 30000, 70000, 0.3653398750074575],
  ];
  for (const [x, a, b, expected] of cases) assertClose(regularizedBeta(x, a, b), expected, 1e-9, `I_${x}(${a}, ${b})`);
  assert.equal(regularizedBeta(0, 2, 3), 0);
  assert.equal(regularizedBeta(1, 2, 3), 1);
  assert.throws(() => regularizedBeta(1.5, 2, 3), /x in \[0, 1\], got 1.5/);
});

test('betaQuantile matches scipy.stats.beta.ppf, including far tails and large parameters', () => {
  const cases = [
    [0.025, 5, 96, 0.016431879182052155],
    [0.975, 6, 95, 0.11283491110546275],
    [1e-5, 3000, 7001, 0.28066438175022185],
    [0.99999, 3001, 7000, 0.3198355523938152],
    [2.5e-6, 1, 20000, 1.250001562424479e-10],
    [0.5, 0.5, 0.5, 0.4999999999999999],
    [1e-4, 9000, 14000, 0.37937841615931306],
  ];
  for (const [p, a, b, expected] of cases) assertClose(betaQuantile(p, a, b), expected, 1e-8, `B⁻¹(${p}; ${a}, ${b})`);
});

test('clopperPearson matches scipy.stats.binomtest exact intervals', () => {
  const seven = clopperPearson(7, 100, 0.05);
  assertClose(seven.lower, 0.028605288907418584, 1e-8, 'lower of 7/100');
  assertClose(seven.upper, 0.13891972845586648, 1e-8, 'upper of 7/100');
  const none = clopperPearson(0, 50, 0.01);
  assert.equal(none.lower, 0);
  assertClose(none.upper, 0.1005450833748586, 1e-8, 'upper of 0/50');
  const all = clopperPearson(50, 50, 0.01);
  assertClose(all.lower, 0.8994549166251414, 1e-8, 'lower of 50/50');
  assert.equal(all.upper, 1);
  assert.throws(() => clopperPearson(51, 50, 0.01), /k must be an integer from 0 to 50, got 51/);
});

test('normalQuantile matches scipy.stats.norm.ppf', () => {
  const cases = [
    [0.975, 1.959963984540054],
    [0.999, 3.090232306167813],
    [1 - 1.25e-4, 3.662259930887615],
    [1 - 5e-6, 4.417173413467605],
    [0.9, 1.2815515655446004],
  ];
  for (const [p, expected] of cases) {
    assertClose(normalQuantile(p), expected, 2e-9, `z(${p})`);
    assertClose(normalQuantile(1 - p), -expected, 2e-9, `z(${1 - p})`);
  }
});
