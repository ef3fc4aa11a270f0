#!/usr/bin/env node
// Larger goodness-of-fit audit of the shipped question sampler (client_js/question-sample.js) with the
// real crypto.getRandomValues source: for every (k, m) below, n draws, the chi-square of the drawn
// m-subsets against the uniform distribution over all C(k, m) subsets and each question's inclusion
// count against Binomial(n, m/k) (docs/explanation/privacy.md, audit 1; tests/js/sampling-audit.mjs does the arithmetic).
//
// Usage: node bench/audit/sampling.mjs [--n 1000000] [--alpha 1e-6]
// Example: node bench/audit/sampling.mjs --n 200000

import { auditSampling } from '../../tests/js/sampling-audit.mjs';

const CASES = [[5, 1], [5, 2], [6, 3], [8, 2], [10, 3], [12, 4]];

function option(name, fallback) {
  const index = process.argv.indexOf(name);
  if (index === -1) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`Error: ${name} needs a positive number, got ${process.argv[index + 1]}`);
    process.exit(2);
  }
  return value;
}

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log('Usage: node bench/audit/sampling.mjs [--n DRAWS] [--alpha ALPHA]\n'
    + 'Audits the browser\'s draw of m of k questions (sample allocation) for uniformity.\n'
    + 'Example: node bench/audit/sampling.mjs --n 200000');
  process.exit(0);
}

const n = Math.round(option('--n', 1000000));
const alpha = option('--alpha', 1e-6);
console.log(`Question sampling audit: ${n} draws per case, family-wise alpha ${alpha} per case`);
console.log('  k   m  subsets  chi-square  critical  max |z| inclusion  z critical  verdict  seconds');
let failures = 0;
for (const [k, m] of CASES) {
  const start = process.hrtime.bigint();
  const result = auditSampling({ k, m, n, alpha });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const maxZ = Math.max(...result.inclusion.map((row) => Math.abs(row.z)));
  if (!result.passed) failures += 1;
  console.log(`${String(k).padStart(3)} ${String(m).padStart(3)} ${String(result.cells).padStart(8)} `
    + `${result.chiSquare.toFixed(1).padStart(11)} ${result.critical.toFixed(1).padStart(9)} `
    + `${maxZ.toFixed(2).padStart(18)} ${result.zCritical.toFixed(2).padStart(11)} `
    + `${(result.passed ? 'pass' : 'FAIL').padStart(8)} ${seconds.toFixed(1).padStart(8)}`);
}
process.exit(failures ? 1 : 0);
