// Distribution functions the node tests need and JavaScript lacks: the regularized
// incomplete beta function, its inverse (Beta quantiles, hence Clopper–Pearson bounds)
// and the standard normal quantile. Tests may use floating-point Math freely; client_js/ may not.

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
  1.5056327351493116e-7,
];

/** Return ln Γ(x) for x > 0 by the Lanczos approximation (g = 7, 9 terms; relative error ~1e-15). */
export function logGamma(x) {
  if (!(x > 0)) throw new RangeError(`logGamma needs x > 0, got ${x}`);
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let sum = LANCZOS[0];
  for (let i = 1; i < LANCZOS.length; i += 1) sum += LANCZOS[i] / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/**
 * Return the continued fraction of I_x(a, b) by the modified Lentz method.
 *
 * Numerical Recipes (Press et al. 2007, §6.4, betacf); converges fast for x < (a+1)/(a+b+2).
 */
function betaContinuedFraction(x, a, b) {
  const tiny = 1e-300;
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 100000; m += 1) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) return h;
  }
  throw new Error(`the incomplete beta continued fraction did not converge at x=${x}, a=${a}, b=${b}`);
}

/** Return the regularized incomplete beta function I_x(a, b) for x in [0, 1], a, b > 0. */
export function regularizedBeta(x, a, b) {
  if (!(a > 0 && b > 0)) throw new RangeError(`regularizedBeta needs a, b > 0, got a=${a}, b=${b}`);
  if (!(x >= 0 && x <= 1)) throw new RangeError(`regularizedBeta needs x in [0, 1], got ${x}`);
  if (x === 0 || x === 1) return x;
  const logFront = a * Math.log(x) + b * Math.log1p(-x) - (logGamma(a) + logGamma(b) - logGamma(a + b));
  if (x < (a + 1) / (a + b + 2)) return (Math.exp(logFront) * betaContinuedFraction(x, a, b)) / a;
  return 1 - (Math.exp(logFront) * betaContinuedFraction(1 - x, b, a)) / b;
}

/** Return the p-quantile of Beta(a, b): the x with I_x(a, b) = p, by bisection to double precision. */
export function betaQuantile(p, a, b) {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`betaQuantile needs p in [0, 1], got ${p}`);
  if (p === 0 || p === 1) return p;
  let lo = 0;
  let hi = 1;
  for (;;) {
    const mid = (lo + hi) / 2;
    if (mid <= lo || mid >= hi) return mid;
    if (regularizedBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
}

/**
 * Return the two-sided Clopper–Pearson interval {lower, upper} of k successes in n at level 1 − alpha.
 *
 * Clopper & Pearson (1934): lower = B⁻¹(alpha/2; k, n−k+1), upper = B⁻¹(1−alpha/2; k+1, n−k),
 * so each side misses with probability at most alpha/2.
 */
export function clopperPearson(k, n, alpha) {
  if (!(Number.isInteger(n) && n >= 1)) throw new RangeError(`n must be a positive integer, got ${n}`);
  if (!(Number.isInteger(k) && k >= 0 && k <= n)) throw new RangeError(`k must be an integer from 0 to ${n}, got ${k}`);
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`alpha must be in (0, 1), got ${alpha}`);
  return {
    lower: k === 0 ? 0 : betaQuantile(alpha / 2, k, n - k + 1),
    upper: k === n ? 1 : betaQuantile(1 - alpha / 2, k + 1, n - k),
  };
}

const ACKLAM_A = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
  1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00];
const ACKLAM_B = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
  6.680131188771972e+01, -1.328068155288572e+01];
const ACKLAM_C = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
  -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00];
const ACKLAM_D = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
  3.754408661907416e+00];

const poly = (coefficients, x) => coefficients.reduce((acc, c) => acc * x + c, 0);

/** Return the standard normal p-quantile by Acklam's rational approximation (relative error < 1.2e-9). */
export function normalQuantile(p) {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile needs p in (0, 1), got ${p}`);
  const low = 0.02425;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return poly(ACKLAM_C, q) / (poly(ACKLAM_D, q) * q + 1);
  }
  if (p > 1 - low) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (poly(ACKLAM_A, r) * q) / (poly(ACKLAM_B, r) * r + 1);
}
