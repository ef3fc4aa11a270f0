// Conformance of every mechanism in the registry (client_js/mechanisms/index.js): each one, and
// any added later, gets every check. (a) the registry finds it by (kind, name) and its module
// exports the full shape; (b) it replays tests/vectors.json word for word as survey/core/replay.py
// does; (c) its reports fit their exact distribution (Pearson chi-square at alpha = 1e-4) and
// its empirical epsilon lower bound stays below the design's ε′ (docs/explanation/privacy.md, audits; Clopper–Pearson
// bounds as in Jagielski, Ullman & Oprea 2020); (d) every report it draws is in its domain;
// (e) its series memo fits and gives in-domain reports for every answer; (f) it describes a report
// in words. The statistical checks are verdict functions, also applied to planted broken copies,
// which must fail them. Seeded words keep this file deterministic and fast; the larger audits with
// the real crypto source are tests/js/audit.test.mjs and frequency.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { makeRandom } from '../../client_js/random.js';
import { findMechanism, mechanismOf, MECHANISMS } from '../../client_js/mechanisms/index.js';
import { auditEpsilon, comparisonCount, drawsToDetect } from './epsilon-audit.mjs';
import {
  auditSize, multiRRAudit, multiSampledAudit, oueAudit, subsetAudit,
} from './frequency-audits.mjs';
import {
  chiSquare, chiSquareCritical, listFill, readVectors, REPO, seededFill, TWO_53,
} from './helpers.mjs';
import { extremeGroups, groupProbabilities, piecewiseLevelProbabilities } from './piecewise.mjs';
import { hybridExtremeGroups, hybridLevelProbabilities } from './hybrid.mjs';
import { opmExtremeGroups, opmLevelProbabilities } from './opm.mjs';

const VECTORS = readVectors();
const row = (epsilon, d) => VECTORS.thresholds.find((r) => r.epsilon === epsilon && r.d === d);
const SHAPE = ['parameters', 'randomize', 'isReport', 'makeMemo', 'memoFits', 'memoReport', 'describe'];
const FOLDER = path.join(REPO, 'client_js', 'mechanisms');
const SHARED = new Set(['common.js', 'index.js']);

const FIT_DRAWS = 20000; // reports per input for the goodness of fit
const EPSILON_DELTA = 0.25; // smallest excess of ε′ the conformance audit is sized to catch (audit.test.mjs: 0.1)
const MEMOS = 50; // memos drawn per mechanism for the memo checks
const [MIN, MAX] = [18, 90];

const options = (d) => Array.from({ length: d }, (_, i) => `option ${i}`);
const bitVectors = (d) => Array.from({ length: 2 ** d }, (_, mask) => Array.from({ length: d }, (__, i) => (mask >> i) & 1));
const range = (low, high) => Array.from({ length: high - low + 1 }, (_, i) => low + i);
const isBits = (report, d) => Array.isArray(report) && report.length === d && report.every((b) => b === 0 || b === 1);
const ones = (report) => report.reduce((sum, bit) => sum + bit, 0);
const intIn = (low, high) => (report) => Number.isInteger(report) && report >= low && report <= high;

/** Return a view of binary randomized response's reports (0, 1) of inputs with P(report 1) = high(x). */
function binaryView(inputs, high, epsilon) {
  return { inputs, outputs: 2, epsilon, index: (report) => report, declared: (x) => [1 - high(x), high(x)] };
}

/** Return a view of a level mechanism: outputs are groups of levels, groupOf(level), with the exact probabilities. */
function levelView(inputs, levelProbabilities, groupOf, outputs, epsilon) {
  return {
    inputs, outputs, epsilon, index: groupOf,
    declared: (value) => groupProbabilities(levelProbabilities(value), groupOf, outputs),
  };
}

/** Return the grouping of `levels` levels into at most 64 contiguous groups of equal size (as piecewiseFit). */
function contiguousGroups(levels) {
  const size = Math.ceil(levels / 64);
  return { groupOf: (level) => Math.floor(level / size), outputs: Math.ceil(levels / size) };
}

/**
 * Return the test fixture of every mechanism, keyed "kind/name": a design question; its answers
 * (all of them, for the memo); the independent domain of its reports; `fit`, the view its
 * goodness of fit draws through; and `privacy`, the view whose declared largest log-ratio is ε′.
 * A view has inputs, outputs (numbered 0..outputs-1), index(report) and declared(input).
 */
const FIXTURES = {
  'yes_no/rr': () => {
    const { rr_flip_threshold: flipThreshold, rr_epsilon_float: epsilon } = row(1, 2);
    const f = flipThreshold / TWO_53;
    const view = binaryView([0, 1], (x) => (x === 1 ? 1 - f : f), epsilon);
    return {
      question: { id: 'smoker', kind: 'yes_no', mechanism: 'rr', flip_threshold: flipThreshold, epsilon },
      answers: [0, 1], inDomain: intIn(0, 1), fit: view, privacy: view,
    };
  },
  'choice/grr': () => {
    const d = 5;
    const { grr_keep_threshold: keepThreshold, grr_epsilon_float: epsilon } = row(1, d);
    const p = keepThreshold / TWO_53;
    const inputs = range(0, d - 1);
    const view = {
      inputs, outputs: d, epsilon, index: (report) => report,
      declared: (x) => inputs.map((y) => (y === x ? p : (1 - p) / (d - 1))),
    };
    return {
      question: { id: 'team', kind: 'choice', mechanism: 'grr', options: options(d), keep_threshold: keepThreshold, epsilon },
      answers: inputs, inDomain: intIn(0, d - 1), fit: view, privacy: view,
    };
  },
  'choice/oue': () => {
    const d = 3;
    const { oue_q_threshold: qThreshold } = row(1, d);
    const view = oueAudit({ d, qThreshold });
    return {
      question: { id: 'pet', kind: 'choice', mechanism: 'oue', options: options(d), q_threshold: qThreshold, epsilon: view.epsilon },
      answers: view.inputs, inDomain: (report) => isBits(report, d), fit: view, privacy: view,
    };
  },
  'choice/ss': () => {
    const d = 5;
    const { ss_k: k, ss_keep_threshold: keepThreshold } = row(1, d);
    const view = subsetAudit({ d, k, keepThreshold });
    return {
      question: {
        id: 'sport', kind: 'choice', mechanism: 'ss', options: options(d), subset_size: k, keep_threshold: keepThreshold,
        epsilon: view.epsilon,
      },
      answers: view.inputs, inDomain: (report) => isBits(report, d) && ones(report) === k, fit: view, privacy: view,
    };
  },
  'multi/rr': () => {
    const d = 3;
    const { rr_flip_threshold: flipThreshold } = row(1, 2);
    const view = multiRRAudit({ d, flipThreshold });
    return {
      question: { id: 'habits', kind: 'multi', mechanism: 'rr', options: options(d), flip_threshold: flipThreshold, epsilon: view.epsilon },
      answers: bitVectors(d), inDomain: (report) => isBits(report, d), fit: view, privacy: view,
    };
  },
  'multi/sampled': () => {
    const d = 3;
    const { rr_flip_threshold: flipThreshold } = row(1, 2);
    const view = multiSampledAudit({ d, flipThreshold });
    return {
      question: { id: 'tools', kind: 'multi', mechanism: 'sampled', options: options(d), flip_threshold: flipThreshold, epsilon: view.epsilon },
      answers: bitVectors(d), inDomain: (report) => isBits(report, d) && ones(report) <= 1, fit: view, privacy: view,
    };
  },
  'number/duchi': () => {
    const { rr_flip_threshold: flipThreshold, rr_epsilon_float: epsilon } = row(1, 2);
    const f = flipThreshold / TWO_53;
    const high = (value) => f + (1 - 2 * f) * ((value - MIN) / (MAX - MIN));
    return {
      question: { id: 'age', kind: 'number', mechanism: 'duchi', min: MIN, max: MAX, flip_threshold: flipThreshold, epsilon },
      answers: range(MIN, MAX), inDomain: intIn(0, 1),
      fit: binaryView([MIN, 40, 61, MAX], high, epsilon), privacy: binaryView([MIN, MAX], high, epsilon),
    };
  },
  'number/piecewise': () => {
    const { ratio_a: ratioA, ratio_b: ratioB, bins, epsilon_float: epsilon } = VECTORS.piecewise.find((r) => r.epsilon === 2);
    const parameters = { min: MIN, max: MAX, ratioA, ratioB };
    const levels = (value) => piecewiseLevelProbabilities(value, parameters);
    const { groupOf, outputs } = contiguousGroups(bins);
    return {
      question: {
        id: 'hours', kind: 'number', mechanism: 'piecewise', min: MIN, max: MAX, ratio_a: ratioA, ratio_b: ratioB, bins, epsilon,
      },
      answers: range(MIN, MAX), inDomain: intIn(0, bins - 1),
      fit: levelView([MIN, 40, 61, MAX], levels, groupOf, outputs, epsilon),
      privacy: levelView([MIN, MAX], levels, extremeGroups(parameters), 3, epsilon),
    };
  },
  'number/hybrid': () => {
    const {
      ratio_a: ratioA, ratio_b: ratioB, bins, levels: count, epsilon_float: epsilon,
    } = VECTORS.hybrid.find((r) => r.epsilon === 2);
    const parameters = { min: MIN, max: MAX, ratioA, ratioB };
    const levels = (value) => hybridLevelProbabilities(value, parameters);
    const piecewise = contiguousGroups(bins);
    const groupOf = (level) => (level < bins ? piecewise.groupOf(level) : piecewise.outputs + level - bins);
    return {
      question: {
        id: 'hours', kind: 'number', mechanism: 'hybrid', min: MIN, max: MAX, ratio_a: ratioA, ratio_b: ratioB, bins,
        levels: count, epsilon,
      },
      answers: range(MIN, MAX), inDomain: intIn(0, bins + 1),
      fit: levelView([MIN, 40, 61, MAX], levels, groupOf, piecewise.outputs + 2, epsilon),
      privacy: levelView([MIN, MAX], levels, hybridExtremeGroups(parameters), 5, epsilon),
    };
  },
  'number/opm': () => {
    const {
      ratio_a: ratioA, ratio_b: ratioB, steps, band, levels: count, epsilon_float: epsilon,
    } = VECTORS.opm.find((r) => r.epsilon === 4);
    const parameters = { min: MIN, max: MAX, ratioA, ratioB, steps, band };
    const levels = (value) => opmLevelProbabilities(value, parameters);
    const { groupOf, outputs } = contiguousGroups(count);
    return {
      question: {
        id: 'hours', kind: 'number', mechanism: 'opm', min: MIN, max: MAX, ratio_a: ratioA, ratio_b: ratioB, steps,
        band, levels: count, epsilon,
      },
      answers: range(MIN, MAX), inDomain: intIn(0, count - 1),
      fit: levelView([MIN, 40, 61, MAX], levels, groupOf, outputs, epsilon),
      privacy: levelView([MIN, MAX], levels, opmExtremeGroups(parameters), 3, epsilon),
    };
  },
};

const keyOf = (mechanism) => `${mechanism.kind}/${mechanism.name}`;

/** Return the fixture of a registered mechanism; a mechanism without one fails every check that needs it. */
function fixtureOf(mechanism) {
  const make = FIXTURES[keyOf(mechanism)];
  assert.ok(make, `no conformance fixture for ${keyOf(mechanism)}: add one to FIXTURES`);
  return make();
}

/**
 * Return the goodness-of-fit verdict {ok, failures} of `mechanism` on its fixture: for each fit
 * input, FIT_DRAWS reports (each mapped to its output number) against the exact distribution.
 */
function fitVerdict(mechanism, fixture, rnd) {
  const { question, fit } = fixture;
  const failures = [];
  for (const input of fit.inputs) {
    const counts = new Array(fit.outputs).fill(0);
    for (let i = 0; i < FIT_DRAWS; i += 1) {
      const output = fit.index(mechanism.randomize(question, input, rnd));
      if (output === undefined) {
        failures.push(`input ${JSON.stringify(input)}: a report outside the declared support`);
        break;
      }
      counts[output] += 1;
    }
    const stat = chiSquare(counts, fit.declared(input));
    const critical = chiSquareCritical(fit.outputs - 1);
    if (!(stat < critical)) {
      failures.push(`input ${JSON.stringify(input)}: chi-square ${stat.toFixed(1)} >= ${critical.toFixed(1)}`);
    }
  }
  return { ok: failures.length === 0, failures };
}

/**
 * Return the privacy verdict {ok, audit, n} of `mechanism` on its fixture: auditEpsilon of its
 * reports over the privacy view, sized to catch an excess of EPSILON_DELTA over ε′. ok means no
 * empirical lower bound above ε′, ε̂ within its sampling error of ε′ and no report outside the support.
 */
function epsilonVerdict(mechanism, fixture, rnd) {
  const { question, privacy } = fixture;
  const n = auditSize(privacy, EPSILON_DELTA);
  let outside = 0;
  const draw = (input) => {
    const output = privacy.index(mechanism.randomize(question, input, rnd));
    if (output === undefined) outside += 1;
    return output ?? 0;
  };
  const audit = auditEpsilon({ ...privacy, n, draw });
  return { ok: audit.problems.length === 0 && outside === 0, audit, n, outside };
}

test('the registry lists each (kind, name) once, and every module in client_js/mechanisms/ is registered', async () => {
  const keys = MECHANISMS.map(keyOf);
  assert.equal(new Set(keys).size, keys.length, `duplicate pairs in ${keys}`);
  assert.ok(Object.isFrozen(MECHANISMS));
  const files = readdirSync(FOLDER).filter((name) => name.endsWith('.js') && !SHARED.has(name));
  const exported = await Promise.all(files.map((name) => import(pathToFileURL(path.join(FOLDER, name)).href)));
  exported.forEach(({ default: mechanism }, i) => {
    assert.ok(MECHANISMS.includes(mechanism), `mechanisms/${files[i]} default-exports no registered mechanism`);
  });
  assert.equal(files.length, MECHANISMS.length, 'one module per mechanism');
});

test('an unknown pair or a non-object question is refused with a clear error', () => {
  assert.equal(findMechanism('choice', 'laplace'), undefined);
  assert.throws(() => mechanismOf({ id: 'q', kind: 'choice', mechanism: 'laplace' }),
    (e) => e instanceof RangeError && /unsupported kind\/mechanism choice\/laplace/.test(e.message)
      && MECHANISMS.every((m) => e.message.includes(keyOf(m))));
  assert.throws(() => mechanismOf(null), TypeError);
});

for (const mechanism of MECHANISMS) {
  const key = keyOf(mechanism);

  test(`${key}: the registry finds it and it has the full shape`, () => {
    assert.equal(findMechanism(mechanism.kind, mechanism.name), mechanism);
    assert.ok(Object.isFrozen(mechanism), 'frozen');
    assert.ok(typeof mechanism.kind === 'string' && typeof mechanism.name === 'string');
    for (const method of SHAPE) assert.equal(typeof mechanism[method], 'function', `${key} lacks ${method}`);
    assert.equal(mechanismOf(fixtureOf(mechanism).question), mechanism);
    const parameters = mechanism.parameters(fixtureOf(mechanism).question);
    assert.ok(Array.isArray(parameters) && parameters.every((value) => value !== undefined),
      `${key}: parameters(question) gives an array of the design's values, got ${JSON.stringify(parameters)}`);
  });

  test(`${key}: replays the Python mirror's vectors word for word`, () => {
    // A series' two-layer draws (a `wave` entry) add the per-wave layer: vectors.test.mjs replays them whole.
    const cases = VECTORS.streams.filter((c) => c.call === 'question' && !c.question.wave
      && c.question.kind === mechanism.kind && c.question.mechanism === mechanism.name);
    assert.ok(cases.length > 0, `tests/vectors.json has no stream for ${key} (tests/make_vectors.py)`);
    for (const testCase of cases) {
      const fill = listFill(testCase.words);
      const report = mechanism.randomize(testCase.question, testCase.true, makeRandom(fill));
      assert.deepEqual(report, testCase.expected, testCase.name);
      assert.equal(fill.used(), testCase.words.length, `${testCase.name}: the words Python consumed, no more, no less`);
    }
  });

  test(`${key}: its reports fit their exact distribution and leak no more than ε′`, (t) => {
    const fixture = fixtureOf(mechanism);
    const fit = fitVerdict(mechanism, fixture, makeRandom(seededFill(1)));
    assert.ok(fit.ok, fit.failures.join('; '));
    const privacy = epsilonVerdict(mechanism, fixture, makeRandom(seededFill(2)));
    t.diagnostic(`N=${privacy.n}/input: max LB ${privacy.audit.maxLowerBound.toFixed(3)}, ε′ ${fixture.privacy.epsilon.toFixed(3)}`);
    assert.ok(privacy.audit.maxLowerBound <= fixture.question.epsilon, 'the lower bound stays below the design ε′');
    assert.ok(privacy.ok, JSON.stringify(privacy.audit.problems));
  });

  test(`${key}: every report it draws is in its domain, and described in words`, () => {
    const { question, answers, inDomain } = fixtureOf(mechanism);
    const rnd = makeRandom(seededFill(3));
    for (const answer of answers) {
      for (let i = 0; i < 20; i += 1) {
        const report = mechanism.randomize(question, answer, rnd);
        assert.ok(inDomain(report), `${JSON.stringify(answer)} gave ${JSON.stringify(report)}`);
        assert.ok(mechanism.isReport(question, report), `isReport refuses ${JSON.stringify(report)}`);
        const words = mechanism.describe(question, report);
        assert.ok(typeof words === 'string' && words.trim() !== '', `no words for ${JSON.stringify(report)}`);
      }
    }
  });

  test(`${key}: its memo fits, survives storage, and gives an in-domain report for every answer`, () => {
    const { question, answers, inDomain } = fixtureOf(mechanism);
    const rnd = makeRandom(seededFill(4));
    assert.equal(mechanism.memoFits(question, {}), false, 'an empty memo does not fit');
    for (let i = 0; i < MEMOS; i += 1) {
      const memo = mechanism.makeMemo(question, rnd);
      const stored = JSON.parse(JSON.stringify(memo));
      assert.ok(mechanism.memoFits(question, memo) && mechanism.memoFits(question, stored), JSON.stringify(memo));
      for (const answer of answers) {
        const report = mechanism.memoReport(question, stored, answer);
        assert.ok(inDomain(report) && mechanism.isReport(question, report),
          `memo ${JSON.stringify(memo)}, answer ${JSON.stringify(answer)}: ${JSON.stringify(report)}`);
      }
    }
  });
}

/** Return a copy of a registered mechanism with another randomize: a planted bug. */
const planted = (key, randomize) => Object.freeze({ ...findMechanism(...key.split('/')), randomize });

const BROKEN = [
  {
    label: 'GRR whose "skip the true index" comparison is > instead of >=',
    key: 'choice/grr',
    mechanism: planted('choice/grr', (question, index, rnd) => {
      const d = question.options.length;
      if (rnd.bern53(question.keep_threshold)) return index;
      const other = rnd.below(d - 1);
      return other + (other > index ? 1 : 0);
    }),
  },
  {
    label: 'RR flipping with 0.8 times the published probability',
    key: 'yes_no/rr',
    mechanism: planted('yes_no/rr', (question, bit, rnd) => bit ^ (rnd.bern53(Math.round(0.8 * question.flip_threshold)) ? 1 : 0)),
  },
];

for (const { label, key, mechanism } of BROKEN) {
  test(`the checks catch a planted bug: ${label}`, () => {
    const fixture = FIXTURES[key]();
    assert.equal(fitVerdict(mechanism, fixture, makeRandom(seededFill(5))).ok, false, 'the fit must fail');
    const privacy = epsilonVerdict(mechanism, fixture, makeRandom(seededFill(6)));
    assert.equal(privacy.ok, false, 'the ε audit must fail');
    assert.ok(privacy.audit.problems.some((problem) => problem.kind === 'leaks'), JSON.stringify(privacy.audit.problems));
  });
}

test('the RR plant leaks more than the conformance audit is sized to catch', () => {
  const { rr_flip_threshold: flipThreshold, rr_epsilon_float: realised } = row(1, 2);
  const f = Math.round(0.8 * flipThreshold) / TWO_53;
  const excess = Math.log((1 - f) / f) - realised;
  assert.ok(excess > EPSILON_DELTA);
  assert.ok(drawsToDetect({ delta: excess, p: 1 - f, q: f, comparisons: comparisonCount(2, 2) })
    <= auditSize(FIXTURES['yes_no/rr']().privacy, EPSILON_DELTA));
});
