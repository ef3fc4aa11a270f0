// Larger empirical epsilon audit of the shipped frequency oracles (docs/explanation/privacy.md, audits), run by hand:
//   node bench/audit/frequency.mjs [--delta 0.1]
// Each audit draws, from the real crypto.getRandomValues source through client_js/mechanisms/,
// enough reports per input to catch an excess of --delta in epsilon with power 0.99 (family-wise
// alpha 1e-6 per audit), and prints the largest Clopper–Pearson lower bound on epsilon beside the
// published ε′ and the point estimate ε̂. The suite (tests/js/frequency.test.mjs) runs smaller
// versions of the same audits at delta 0.2. Exit status 1 if any audit finds a problem.

import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { makeRandom } from '../../client_js/random.js';
import { auditEpsilon } from '../../tests/js/epsilon-audit.mjs';
import {
  auditSize, multiRRAudit, multiSampledAudit, oueAudit, subsetAudit,
} from '../../tests/js/frequency-audits.mjs';
import { readVectors } from '../../tests/js/helpers.mjs';

const { values } = parseArgs({ options: { delta: { type: 'string', default: '0.1' }, help: { type: 'boolean' } } });
if (values.help) {
  console.log('usage: node bench/audit/frequency.mjs [--delta D]   (default D = 0.1; smaller D, more draws)');
  process.exit(0);
}
const delta = Number(values.delta);
if (!(delta > 0 && delta < 1)) {
  console.error(`--delta must be a number in (0, 1), got ${values.delta}`);
  process.exit(2);
}

const ROWS = readVectors().thresholds;
const row = (epsilon, d) => ROWS.find((r) => r.epsilon === epsilon && r.d === d);
const rnd = makeRandom();

const audits = [
  oueAudit({ d: 4, qThreshold: row(1, 5).oue_q_threshold, rnd }),
  oueAudit({ d: 3, qThreshold: row(2, 5).oue_q_threshold, rnd }),
  multiRRAudit({ d: 3, flipThreshold: row(0.5, 2).rr_flip_threshold, rnd }),
  multiSampledAudit({ d: 5, flipThreshold: row(1, 2).rr_flip_threshold, rnd }),
  multiSampledAudit({ d: 3, flipThreshold: row(2, 2).rr_flip_threshold, rnd }),
  subsetAudit({ d: 5, k: row(0.5, 5).ss_k, keepThreshold: row(0.5, 5).ss_keep_threshold, rnd }),
  subsetAudit({ d: 5, k: row(1, 5).ss_k, keepThreshold: row(1, 5).ss_keep_threshold, rnd }),
];

console.log(`delta ${delta}: each audit sized to catch ε′ + ${delta} with power 0.99`);
console.log('| mechanism | inputs × reports | N per input | ε′ | max LB | ε̂ ± tolerance | seconds | result |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
let failed = false;
for (const audit of audits) {
  const n = auditSize(audit, delta);
  const start = performance.now();
  const result = auditEpsilon({ ...audit, n });
  const seconds = (performance.now() - start) / 1000;
  const verdict = result.problems.length === 0 ? 'ok' : result.problems.map((p) => p.message).join('; ');
  failed ||= result.problems.length > 0;
  console.log(`| ${audit.name} | ${audit.inputs.length} × ${audit.outputs} | ${n.toLocaleString('en')} | `
    + `${audit.epsilon.toFixed(4)} | ${result.maxLowerBound.toFixed(4)} | `
    + `${result.epsilonHat.toFixed(4)} ± ${result.tolerance.toFixed(4)} | ${seconds.toFixed(1)} | ${verdict} |`);
}
process.exit(failed ? 1 : 0);
