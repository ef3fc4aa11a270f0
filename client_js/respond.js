/**
 * Respondent form of ldp-survey: read the true answers, randomize each on this device as it
 * is given, show the report that will be sent under its question, and send only the reports.
 *
 * Every shown question has a line saying the exact report sending will send for it, or that
 * nothing is sent (report-line.js words it). A multi-select left blank is the answer "none
 * ticked": its report is made when the page loads and shown like any other, since sending
 * nothing for it would tell the server it was blank. A question that needs an answer and has
 * none blocks the send, and its line says nothing is sent. The body is built from the reports
 * the lines show, and a report made only when send is pressed (never the case when every
 * answer was read as it was given) stops the send, so the respondent sees it first.
 *
 * True-answer inputs carry no name attribute, so a plain form submission cannot send
 * them (docs/explanation/privacy.md); this module is the only way answers leave the page,
 * as one JSON request to the form's same-origin data-action URL, sent a fixed delay after
 * the respondent presses send so that the request's timing says nothing about the report.
 *
 * The request carries a random submission id, kept until the server acknowledges it: a
 * retry after a lost answer is stored once. Once a send was attempted, its reports may
 * have reached the server, so a changed answer keeps its report unless the respondent
 * confirms a new one (which spends that question's ε′ again, and the page says so). In a
 * series, reports come from the memo of series.js, the same in every wave.
 *
 * A 503 (the server cannot store answers now; nothing was stored) is a lost send that retries
 * itself: the page shows the server's sentence and sends the very same body again after the
 * reply's Retry-After, until it is stored or the respondent sends it first.
 *
 * In test mode (the form's data-test, the survey's owner trying it) the randomization and the
 * send are the same, but nothing is kept on this device: no answered mark, no pending send and
 * no series memo reach localStorage, which an in-memory store replaces for the page's life.
 */

import { mechanismOf } from './mechanisms/index.js';
import { askedQuestions } from './question-sample.js';
import { u32 } from './random.js';
import { describeReport, isNoneTicked, notAskedLine, reportLine, waitingLine } from './report-line.js';
import { canMemoize, forgetSeries, loadMemo, memoReport } from './series.js';
import { addOptionFilter } from './option-filter.js';
import { LOST_MESSAGE, outcome } from './refusals.js';

const ANSWERED_PREFIX = 'ldp-survey:answered:';
// How long after the press of send the request leaves, whatever the randomization took:
// its running time can depend on the report, a timing channel (Haeberlen, Pierce & Narayan 2011).
const SEND_DELAY_MS = 400;
const EARLIER_MESSAGE = 'Your answers had already arrived from an earlier send and were counted once; this '
  + 'send was not stored again. Your true answers never left this device.';
const ARROW_STEPS = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 };
// The wait before sending again after a 503 without a usable Retry-After, and the bounds of any wait (s).
const RETRY_DEFAULT_S = 10;
const RETRY_MIN_S = 1;
const RETRY_MAX_S = 300;
// Below this width the privacy explanation starts folded, so the questions are near the top.
const NARROW_SCREEN = '(max-width: 40rem)';

/** Return a Storage-like object kept in memory only (test mode: this device keeps nothing). */
export function memoryStorage() {
  const items = new Map();
  return {
    getItem: (key) => (items.has(key) ? items.get(key) : null),
    setItem: (key, value) => { items.set(key, String(value)); },
    removeItem: (key) => { items.delete(key); },
    key: (index) => [...items.keys()][index] ?? null,
    get length() { return items.size; },
  };
}

let pageStorage = null;

function storage() {
  if (pageStorage) return pageStorage;
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

function rememberAnswered(slug) {
  try {
    storage().setItem(ANSWERED_PREFIX + slug, 'yes');
  } catch {
    // Storage can be unavailable (private browsing); the notice is only a courtesy.
  }
}

// The body of a send not yet acknowledged (noisy reports and the submission id only), so that
// after a reload the very same reports are offered again rather than new ones.
const PENDING_PREFIX = 'ldp-survey:pending:';

function keepPending(slug, body) {
  try {
    storage().setItem(PENDING_PREFIX + slug, body);
  } catch {
    // Without storage a reload loses the pending send; a retry on this page still works.
  }
}

function pendingBody(slug) {
  try {
    return storage().getItem(PENDING_PREFIX + slug);
  } catch {
    return null;
  }
}

function forgetPending(slug) {
  try {
    storage().removeItem(PENDING_PREFIX + slug);
  } catch {
    // Nothing was kept.
  }
}

function wasAnswered(slug) {
  try {
    return storage().getItem(ANSWERED_PREFIX + slug) !== null;
  } catch {
    return false;
  }
}

/** Make the unnamed radios of one group mutually exclusive, with one tab stop and arrow keys. */
function setUpRadioGroup(group) {
  const radios = [...group.querySelectorAll('input[type="radio"]')];
  const updateTabStops = () => {
    const current = radios.find((radio) => radio.checked) ?? radios[0];
    radios.forEach((radio) => { radio.tabIndex = radio === current ? 0 : -1; });
  };
  const select = (chosen) => {
    radios.forEach((radio) => { radio.checked = radio === chosen; });
    updateTabStops();
  };
  radios.forEach((radio) => {
    radio.addEventListener('change', () => { if (radio.checked) select(radio); });
    radio.addEventListener('keydown', (event) => {
      const step = ARROW_STEPS[event.key];
      if (step === undefined) return;
      event.preventDefault();
      // Arrows move among the options the filter shows (all of them when there is none).
      const shown = radios.filter((other) => other === radio || !other.closest('.option')?.hidden);
      const at = shown.indexOf(radio);
      const next = shown[(at + step + shown.length) % shown.length];
      select(next);
      next.focus();
      next.dispatchEvent(new Event('change', { bubbles: true }));
    });
  });
  updateTabStops();
}

/** Return {value} or {message} for one question's true answer, read from its fieldset. */
function readAnswer(question, fieldset) {
  if (question.kind === 'yes_no' || question.kind === 'choice') {
    const checked = fieldset.querySelector('input[type="radio"]:checked');
    if (!checked) return { message: 'Please choose an answer.' };
    return { value: Number(checked.value) };
  }
  if (question.kind === 'multi') {
    const boxes = [...fieldset.querySelectorAll('input[type="checkbox"]')];
    return { value: boxes.map((box) => (box.checked ? 1 : 0)) };
  }
  if (question.kind === 'number') {
    const input = fieldset.querySelector('input[type="number"]');
    const range = `from ${question.min} to ${question.max}`;
    const raw = input.value.trim();
    if (input.validity.badInput) return { message: `Please enter a number using digits only, ${range}.` };
    if (raw === '') return { message: `Please enter a whole number ${range}.` };
    if (!/^[+-]?\d+$/.test(raw)) return { message: `Please enter a whole number without decimals, ${range}.` };
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < question.min || value > question.max) {
      return { message: `Please enter a whole number ${range}; ${raw} is outside that range.` };
    }
    return { value };
  }
  return { message: `This question has an unknown kind ${String(question.kind)}.` };
}

/** Resolve once performance.now() has reached `deadline` (setTimeout alone may fire early). */
function waitUntil(deadline) {
  return new Promise((resolve) => {
    const check = () => {
      const left = deadline - performance.now();
      if (left <= 0) resolve();
      else setTimeout(check, left);
    };
    check();
  });
}

function answerInputs(fieldset) {
  return [...fieldset.querySelectorAll('input:not([type="search"])')];
}

/** Make "Prefer not to say" (a multi question's last option when it has decline) exclusive of the others. */
function setUpDecline(fieldset) {
  const boxes = [...fieldset.querySelectorAll('input[type="checkbox"]')];
  const decline = boxes[boxes.length - 1];
  boxes.forEach((box) => {
    box.addEventListener('change', () => {
      if (!box.checked) return;
      if (box === decline) boxes.forEach((other) => { if (other !== decline) other.checked = false; });
      else decline.checked = false;
    });
  });
}

function markInvalid(fieldset, message) {
  fieldset.classList.add('has-error');
  fieldset.querySelector('.field-error').textContent = message;
  answerInputs(fieldset).forEach((input) => input.setAttribute('aria-invalid', 'true'));
}

function clearInvalid(fieldset) {
  fieldset.classList.remove('has-error');
  fieldset.querySelector('.field-error').textContent = '';
  answerInputs(fieldset).forEach((input) => input.removeAttribute('aria-invalid'));
}

function clearAnswers(fieldsets) {
  fieldsets.forEach((fieldset) => {
    answerInputs(fieldset).forEach((input) => {
      if (input.type === 'radio' || input.type === 'checkbox') input.checked = false;
      else input.value = '';
    });
  });
}

/** Return a refused send's JSON error body as {field, error} (each a string or null). */
async function errorBody(response) {
  try {
    const body = await response.json();
    const text = (value) => (body && typeof value === 'string' ? value : null);
    return { field: text(body?.field), error: text(body?.error) };
  } catch {
    return { field: null, error: null };
  }
}

/** Return the seconds of a Retry-After header (a whole number), within the page's bounds. */
function retrySeconds(header) {
  const seconds = /^\s*\d+\s*$/.test(header ?? '') ? Number(header) : RETRY_DEFAULT_S;
  return Math.min(RETRY_MAX_S, Math.max(RETRY_MIN_S, seconds));
}

/** Fold the privacy explanation on a narrow screen (its summary stays, and opens it by keyboard or touch). */
function foldOnNarrowScreen() {
  const details = document.getElementById('protection');
  if (details && window.matchMedia(NARROW_SCREEN).matches) details.open = false;
}

/** Return a new submission id: 128 random bits as 32 lowercase hex digits. */
function newSubmissionId() {
  let id = '';
  for (let i = 0; i < 4; i += 1) id += u32().toString(16).padStart(8, '0');
  return id;
}

/**
 * Return ε′ as a short number for the page: rounded UP to two significant digits (never below
 * the bound it states), ignoring float noise below 1e-12 relative (2 shows as "2").
 */
function shortEpsilon(epsilon) {
  const value = Number(epsilon) * (1 - 1e-12);
  if (!(value > 0)) return '0';
  const scale = 10 ** Math.max(1 - Math.floor(Math.log10(value)), 0);
  return String(Number((Math.ceil(value * scale) / scale).toPrecision(12)));
}

/** Return {memos, status} for a series design: the memo of every question that has one. */
function seriesMemos(design) {
  const memos = new Map();
  const counts = { reused: 0, new: 0, changed: 0, fresh: 0 };
  const fresh = [];
  const store = storage();
  for (const question of design.questions) {
    if (!store || !canMemoize(question)) {
      counts.fresh += 1;
      fresh.push(question.text);
      continue;
    }
    try {
      const { memo, status } = loadMemo(store, design.series, question);
      memos.set(question.id, memo);
      counts[status] += 1;
    } catch {
      counts.fresh += 1;
      fresh.push(question.text);
    }
  }
  const parts = [];
  if (counts.reused) parts.push(`${counts.reused} question(s) reuse the reports this device kept from an earlier wave`);
  if (counts.new) parts.push(`${counts.new} question(s) have new reports, kept for later waves`);
  if (counts.changed) {
    parts.push(`${counts.changed} question(s) changed since an earlier wave (another randomization), so they were `
      + 'randomized again: their answers cost their ε′ again');
  }
  if (counts.fresh) {
    parts.push(`${counts.fresh} question(s) cannot be kept on this device and are randomized afresh in every wave, `
      + `each answer costing its ε′ again: ${fresh.map((text) => `“${text}”`).join(', ')}`);
  }
  return { memos, status: `${parts.join('; ')}.` };
}

/** Show the fieldsets of the asked questions, numbered 1..m, and hide every other one. */
function showOnly(asked, fieldsets) {
  const shown = new Set(asked.map((question) => question.id));
  let number = 0;
  fieldsets.forEach((fieldset, id) => {
    fieldset.hidden = !shown.has(id);
    if (fieldset.hidden) return;
    number += 1;
    const label = fieldset.querySelector('.question-number');
    if (label) label.textContent = `${number}.`;
  });
}

function setUpSurvey(form, design) {
  const slug = design.slug;
  const errorRegion = document.getElementById('form-error');
  const thanks = document.getElementById('thanks');
  const notice = document.getElementById('already-answered');
  const refused = document.getElementById('refused');
  const sendNote = document.getElementById('send-note');
  const button = form.querySelector('button[type="submit"]');
  const buttonLabel = button.textContent;
  const fieldsets = new Map(
    [...form.querySelectorAll('fieldset[data-question]')].map((fs) => [fs.dataset.question, fs]));
  const questions = new Map(design.questions.map((q) => [q.id, q]));
  const action = new URL(form.dataset.action, window.location.href);
  if (action.origin !== window.location.origin) {
    throw new Error(`the form would send to another origin (${action.origin}); refusing`);
  }
  for (const question of design.questions) {
    if (!fieldsets.has(question.id)) throw new Error(`the page has no field for question ${question.id}`);
  }

  if (wasAnswered(slug)) {
    form.hidden = true;
    notice.hidden = false;
    return;
  }

  // Under sample allocation only the drawn questions are shown, validated and sent.
  const asked = askedQuestions(design);
  showOnly(asked, fieldsets);
  fieldsets.forEach((fieldset) => addOptionFilter(fieldset));
  design.questions
    .filter((question) => question.kind === 'multi' && question.decline)
    .forEach((question) => setUpDecline(fieldsets.get(question.id)));

  /**
   * Send one body; return {outcome: 'stored' | 'earlier' | 'lost' | 'refused', message, final, field}, and
   * `retryAfter` (seconds) for a 503: the server's sentence is then the message.
   *
   * A respondent's answers go with no cookie. Only in test mode (the survey's owner trying it) do the
   * owner's session and the page's CSRF token go with them, to the test endpoint, which stores apart.
   */
  const testing = form.dataset.test === 'yes';
  const transmit = async (body) => {
    let response;
    try {
      response = await fetch(action, testing ? {
        method: 'POST',
        credentials: 'same-origin',
        headers: {
          'Content-Type': 'application/json',
          'X-CSRFToken': document.querySelector('meta[name="csrf-token"]')?.content ?? '',
        },
        body,
      } : {
        method: 'POST',
        credentials: 'omit',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
    } catch {
      return { outcome: 'lost', message: LOST_MESSAGE, final: false };
    }
    const { field, error } = response.status === 201 ? { field: null, error: null } : await errorBody(response);
    const sent = { ...outcome(response.status, field, questions), field };
    if (response.status !== 503) return sent;
    const retryAfter = retrySeconds(response.headers.get('Retry-After'));
    return { ...sent, message: error ?? sent.message, retryAfter };
  };

  /** Show a lost send's message; after a 503, say when the page will send again by itself. */
  const lostMessage = (sent) => (sent.retryAfter === undefined ? sent.message
    : `${sent.message} Sending again in ${sent.retryAfter} seconds.`);

  let memos = new Map();
  if (design.series) {
    const status = document.getElementById('series-status');
    const loaded = seriesMemos(design);
    memos = loaded.memos;
    status.textContent = loaded.status;
    document.getElementById('series-forget').addEventListener('click', () => {
      const store = storage();
      const removed = store ? forgetSeries(store, design.series) : 0;
      memos = new Map();
      status.textContent = `Forgotten: this device no longer keeps reports of this series (${removed} removed); `
        + 'the reports of this page will not be kept.';
    });
  }

  form.querySelectorAll('[data-radio-group]').forEach(setUpRadioGroup);

  // Each question's report, made when its answer is given: {key, report, noneTicked, spent}. Once a
  // send was attempted these may have reached the server, so they change only when the respondent
  // confirms (`attempted`); `submission` is the id of every attempt until one is acknowledged.
  const reports = new Map();
  const askedIds = new Set(asked.map((question) => question.id));
  let attempted = false;
  let submission = null;
  let sending = false;

  const makeReport = (question, value) => {
    const memo = memos.get(question.id);
    return memo === undefined ? mechanismOf(question).randomize(question, value) : memoReport(question, memo, value);
  };

  const lineOf = (question) => fieldsets.get(question.id).querySelector('.report-preview');
  const changed = (question) => fieldsets.get(question.id).querySelector('.report-changed');

  /** Write one question's line: `report` (JSON text) is set only when that report will be sent. */
  const writeLine = (question, text, report) => {
    const line = lineOf(question);
    line.textContent = text;
    line.dataset.sends = report === undefined ? 'nothing' : 'report';
    if (report === undefined) delete line.dataset.report;
    else line.dataset.report = report;
    line.hidden = false;
  };

  /** Show under a question the exact report sending will send for it, or that nothing is sent. */
  const showLine = (question) => {
    if (!askedIds.has(question.id)) {
      writeLine(question, notAskedLine());
      return;
    }
    const answer = readAnswer(question, fieldsets.get(question.id));
    const entry = reports.get(question.id);
    const earlier = changed(question).pending !== undefined;
    if ('message' in answer || entry === undefined || (!earlier && entry.key !== JSON.stringify(answer.value))) {
      writeLine(question, waitingLine(question));
      return;
    }
    const text = reportLine(question, entry.report, { noneTicked: entry.noneTicked, earlier });
    writeLine(question, text, JSON.stringify(entry.report));
  };

  /** Empty every line (the page is done: nothing more will be sent). */
  const clearLines = () => {
    fieldsets.forEach((fieldset) => {
      const line = fieldset.querySelector('.report-preview');
      line.hidden = true;
      line.textContent = '';
      delete line.dataset.report;
      delete line.dataset.sends;
    });
  };

  const offerNewReport = (question, value, key) => {
    const box = changed(question);
    const entry = reports.get(question.id);
    box.querySelector('.report-changed-text').textContent = 'You changed this answer after a send that may have '
      + `reached the server. The report already made (${describeReport(question, entry.report)}) is kept, so that `
      + 'your privacy loss does not grow. A new report for your new answer would spend this question\'s '
      + `privacy loss again (ε′ = ${shortEpsilon(question.epsilon)} more).`;
    box.hidden = false;
    box.pending = { value, key };
  };

  const confirmNewReport = (question) => {
    const box = changed(question);
    if (!box.pending) return;
    const { value, key } = box.pending;
    const entry = reports.get(question.id);
    const spent = (entry.spent ?? 1) + 1;
    reports.set(question.id, { key, report: makeReport(question, value), noneTicked: isNoneTicked(question, value), spent });
    box.pending = undefined;
    box.querySelector('.report-changed-text').textContent = 'A new report was made for your new answer. If the '
      + `earlier send reached the server, this question has now cost ε′ = ${shortEpsilon(spent * question.epsilon)} `
      + `(${spent} reports at ${shortEpsilon(question.epsilon)} each) instead of ${shortEpsilon(question.epsilon)}.`;
    box.querySelector('button').hidden = true;
    showLine(question);
  };

  /** Take a valid true answer: make its report unless it has one; return whether a new report was made. */
  const takeAnswer = (question, value) => {
    const key = JSON.stringify(value);
    const entry = reports.get(question.id);
    const box = changed(question);
    if (entry !== undefined && entry.key === key) {
      if (box.pending) {
        box.pending = undefined;
        box.hidden = true;
      }
      return false;
    }
    if (entry !== undefined && attempted) {
      offerNewReport(question, value, key);
      return false;
    }
    reports.set(question.id, { key, report: makeReport(question, value), noneTicked: isNoneTicked(question, value) });
    return true;
  };

  /** Randomize a question's answer as it is given and show its line (quietly: errors are shown when sending). */
  const answerGiven = (question) => {
    const result = readAnswer(question, fieldsets.get(question.id));
    const made = 'message' in result || !askedIds.has(question.id) ? false : takeAnswer(question, result.value);
    showLine(question);
    return made;
  };

  fieldsets.forEach((fieldset, qid) => {
    const question = questions.get(qid);
    const box = changed(question);
    box.querySelector('button').addEventListener('click', () => confirmNewReport(question));
    const onAnswer = (event) => {
      // The option filter's search box holds no answer.
      if (box.contains(event.target) || event.target.type === 'search') return;
      clearInvalid(fieldset);
      answerGiven(question);
    };
    fieldset.addEventListener('input', onAnswer);
    fieldset.addEventListener('change', onAnswer);
  });

  // Every line from the start: a multi-select's blank is an answer ("none ticked"), so its report
  // is made now and shown; a question that needs an answer says that nothing is sent until it has one.
  design.questions.forEach((question) => answerGiven(question));

  const showError = (message) => { errorRegion.textContent = message; };
  const setSending = (value) => {
    sending = value;
    button.disabled = value;
    button.textContent = value ? 'Sending…' : buttonLabel;
    form.setAttribute('aria-busy', value ? 'true' : 'false');
  };

  /** End the page after a final refusal: nothing was stored and no press of send can change that. */
  const refuse = (message) => {
    reports.clear();
    submission = null;
    forgetPending(slug);
    clearAnswers(fieldsets);
    clearLines();
    errorRegion.textContent = '';
    form.hidden = true;
    refused.textContent = message;
    refused.hidden = false;
    refused.focus();
  };

  /** Check every asked answer; return {bad, fresh}: fieldsets with no usable answer, and with a report made only now. */
  const validate = () => {
    const bad = [];
    const fresh = [];
    for (const question of asked) {
      const fieldset = fieldsets.get(question.id);
      const result = readAnswer(question, fieldset);
      if ('message' in result) {
        markInvalid(fieldset, result.message);
        showLine(question);
        bad.push(fieldset);
      } else {
        clearInvalid(fieldset);
        if (answerGiven(question)) fresh.push(fieldset);
      }
    }
    return { bad, fresh };
  };

  /** Return the request body: exactly the reports the asked questions' lines show (else throw, sending nothing). */
  const reportBody = () => {
    const answers = {};
    for (const question of asked) {
      const { report } = reports.get(question.id);
      const line = lineOf(question);
      if (line.hidden || line.dataset.sends !== 'report' || line.dataset.report !== JSON.stringify(report)) {
        throw new Error(`the report shown for “${question.text}” is not the one that would be sent`);
      }
      answers[question.id] = report;
    }
    const body = { design: design.hash, answers, submission };
    if (form.dataset.invite) body.invite = form.dataset.invite;
    return JSON.stringify(body);
  };

  // The automatic send after a 503, cancelled by any send the respondent starts.
  let retryTimer = null;
  const later = (send, seconds) => {
    clearTimeout(retryTimer);
    retryTimer = setTimeout(() => {
      retryTimer = null;
      send();
    }, seconds * 1000);
  };

  /** Offer to send again the reports of a send from an earlier visit that was never acknowledged. */
  function offerPending(body) {
    const section = document.getElementById('pending');
    const again = document.getElementById('pending-send');
    const error = document.getElementById('pending-error');
    const list = document.getElementById('pending-reports');
    const kept = JSON.parse(body).answers ?? {};
    list.replaceChildren(...Object.entries(kept).filter(([qid]) => questions.has(qid)).map(([qid, report]) => {
      const item = document.createElement('li');
      item.textContent = `“${questions.get(qid).text}”: ${describeReport(questions.get(qid), report)}`;
      return item;
    }));
    form.hidden = true;
    section.hidden = false;
    again.addEventListener('click', async () => {
      clearTimeout(retryTimer);
      again.disabled = true;
      error.textContent = '';
      const sent = await transmit(body);
      again.disabled = false;
      if (sent.outcome === 'lost') {
        error.textContent = lostMessage(sent);
        if (sent.retryAfter !== undefined) later(() => again.click(), sent.retryAfter);
        return;
      }
      forgetPending(slug);
      section.hidden = true;
      if (sent.final) {
        refuse(sent.message);
        return;
      }
      if (sent.outcome === 'refused') {
        form.hidden = false;
        showError(`The earlier send was not accepted and nothing of it was stored: ${sent.message} `
          + 'You can answer below.');
        return;
      }
      finish(sent.outcome === 'earlier' ? EARLIER_MESSAGE : undefined);
    });
  }

  const finish = (text) => {
    reports.clear();
    submission = null;
    clearAnswers(fieldsets);
    clearLines();
    rememberAnswered(slug);
    errorRegion.textContent = '';
    form.hidden = true;
    if (text) document.getElementById('thanks-text').textContent = text;
    thanks.hidden = false;
    thanks.focus();
  };

  const pending = pendingBody(slug);
  if (pending !== null) {
    let kept = null;
    try {
      kept = JSON.parse(pending);
    } catch {
      kept = null;
    }
    if (kept && kept.design === design.hash && typeof kept.submission === 'string') {
      offerPending(pending);
    } else {
      forgetPending(slug);
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (sending) return;
    clearTimeout(retryTimer);
    const pressedAt = performance.now();
    showError('');
    const { bad, fresh } = validate();
    if (bad.length > 0) {
      const count = bad.length === 1 ? 'One question needs' : `${bad.length} questions need`;
      showError(`${count} your attention before sending; see the message under each.`);
      bad[0].focus();
      return;
    }
    if (fresh.length > 0) {
      // Never the case when each answer was read as it was given; then nothing is sent unseen.
      const count = fresh.length === 1 ? 'One question has a report' : `${fresh.length} questions have reports`;
      showError(`Nothing was sent: ${count} made only now. Check what is shown under each, then send again.`);
      fresh[0].focus();
      return;
    }
    submission = submission ?? newSubmissionId();
    let body;
    try {
      body = reportBody();
    } catch (error) {
      showError(`Nothing was sent: ${error.message}.`);
      return;
    }
    setSending(true);
    attempted = true;
    keepPending(slug, body);
    await waitUntil(pressedAt + SEND_DELAY_MS);
    const sent = await transmit(body);
    const { message, field } = sent;
    setSending(false);
    if (sent.outcome !== 'lost') forgetPending(slug);
    if (sent.outcome === 'stored') {
      finish();
      return;
    }
    if (sent.outcome === 'earlier') {
      finish(EARLIER_MESSAGE);
      return;
    }
    if (sent.outcome === 'lost') {
      showError(lostMessage(sent));
      if (sent.retryAfter !== undefined) later(() => { if (!form.hidden) form.requestSubmit(); }, sent.retryAfter);
      button.focus();
      return;
    }
    if (sent.final) {
      refuse(message);
      return;
    }
    // Refused, nothing stored: pressing send again would send the same and be refused again.
    sendNote.hidden = true;
    showError(message);
    const fieldset = typeof field === 'string' ? fieldsets.get(field) : undefined;
    if (fieldset) {
      markInvalid(fieldset, message);
      fieldset.focus();
    } else {
      button.focus();
    }
  });

  button.disabled = false;
}

function start() {
  const form = document.querySelector('form[data-action]');
  if (!form) return;
  const errorRegion = document.getElementById('form-error');
  try {
    foldOnNarrowScreen();
    const design = JSON.parse(document.getElementById('design').textContent);
    if (form.dataset.test === 'yes') pageStorage = memoryStorage();
    setUpSurvey(form, design);
  } catch (error) {
    if (errorRegion) errorRegion.textContent = `This survey cannot be answered: ${error.message}`;
  }
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
