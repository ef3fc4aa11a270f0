/**
 * Respondent page of ldp-survey (templates/respond.html, served by survey/web/respond.py): read
 * the true answers, randomize each on this device as it is given, show the report that will be
 * sent under its question, and send only the reports.
 *
 * Its parts: respond-fields.js reads the answer fields, respond-reports.js keeps each question's
 * report and the line under it, respond-send.js sends, and respond-device.js holds what this
 * device keeps. This module wires them to the page.
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
 * them (docs/explanation/privacy.md); respond-send.js is the only way answers leave the page.
 * In a series, reports come from the memo of series.js, the same in every wave (randomized again
 * per wave when the design has two layers).
 *
 * Offline field mode (offline.js): a send that reaches no server waits on this device as its
 * randomized body only, and is sent when the connection returns.
 *
 * In test mode (the form's data-test, the survey's owner trying it) the randomization and the
 * send are the same, but nothing is kept on this device: no answered mark, no pending send and
 * no series memo reach localStorage, which an in-memory store replaces for the page's life.
 *
 * In handover mode (an interviewer session's link) the page's entry is respond-handover.js, which sets the
 * survey up through setUpSurvey once per respondent: nothing is kept on the device, series memos are off, and
 * once a respondent's reports are acknowledged (or, offline, queued) the page starts again for the next one
 * instead of thanking; a send made offline waits in the session's own queue (offline.js, data-queue).
 */

import { randomizeQuestion } from './mechanisms/index.js';
import { askedQuestions } from './question-sample.js';
import { Branching } from './respond-branching.js';
import { describeReport } from './report-line.js';
import { canMemoize, forgetSeries, loadMemo, waveEpsilon, waveReport } from './series.js';
import { addOptionFilter } from './option-filter.js';
import { keepNothing, rememberAnswered, storage, wasAnswered } from './respond-device.js';
import { clearAnswers, clearInvalid, markInvalid, setUpDecline, setUpRadioGroup, showOnly } from './respond-fields.js';
import { ReportState } from './respond-reports.js';
import { forgetPending, formSender, keptPending, newSubmissionId, settle } from './respond-send.js';
import { showCompletion, takePanelParameters } from './respond-completion.js';
import { setUpProgress } from './respond-progress.js';
import { QUEUED_THANKS, setUpOffline } from './offline.js';
import { _ } from './messages.js';

// Below this width the privacy explanation starts folded, so the questions are near the top.
const NARROW_SCREEN = '(max-width: 40rem)';

/** Fold the privacy explanation on a narrow screen (its summary stays, and opens it by keyboard or touch). */
function foldOnNarrowScreen() {
  const details = document.getElementById('protection');
  if (details && window.matchMedia(NARROW_SCREEN).matches) details.open = false;
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
  if (counts.reused) {
    parts.push(_('%(count)s question(s) reuse the reports this device kept from an earlier wave',
      { count: counts.reused }));
  }
  if (counts.new) parts.push(_('%(count)s question(s) have new reports, kept for later waves', { count: counts.new }));
  if (counts.changed) {
    parts.push(_('%(count)s question(s) changed since an earlier wave (another randomization), so they were '
      + 'randomized again: their answers cost their ε′ again', { count: counts.changed }));
  }
  if (counts.fresh) {
    parts.push(_('%(count)s question(s) cannot be kept on this device and are randomized afresh in every wave, '
      + 'each answer costing its ε′ again: %(questions)s',
    { count: counts.fresh, questions: fresh.map((text) => `“${text}”`).join(', ') }));
  }
  const epsilon1 = waveEpsilon(design);
  if (epsilon1 !== null) {
    parts.push(_('this wave randomizes the kept reports again (two layers, per-wave ε₁ = %(epsilon)s), so its '
      + 'reports differ from earlier waves\' and do not show whether an answer changed beyond what ε₁ allows',
    { epsilon: epsilon1 }));
  }
  return { memos, status: `${parts.join('; ')}.` };
}

/** Load a series' memos and wire its forget button; return {memos}, emptied when the respondent forgets. */
function setUpSeries(design, handover) {
  const series = { memos: new Map() };
  // In handover mode no memo is kept or used: each respondent's reports are drawn afresh.
  if (!design.series || handover) return series;
  const status = document.getElementById('series-status');
  const loaded = seriesMemos(design);
  series.memos = loaded.memos;
  status.textContent = loaded.status;
  document.getElementById('series-forget').addEventListener('click', () => {
    const store = storage();
    const removed = store ? forgetSeries(store, design.series) : 0;
    series.memos = new Map();
    status.textContent = _('Forgotten: this device no longer keeps reports of this series (%(removed)s removed); '
      + 'the reports of this page will not be kept.', { removed });
  });
  return series;
}

/** Return the page's parts: its elements, its questions and fieldsets, and its sender (else throw). */
function pageOf(form, design) {
  const button = form.querySelector('button[type="submit"]');
  const page = {
    form,
    design,
    slug: design.slug,
    errorRegion: document.getElementById('form-error'),
    thanks: document.getElementById('thanks'),
    notice: document.getElementById('already-answered'),
    refused: document.getElementById('refused'),
    sendNote: document.getElementById('send-note'),
    button,
    buttonLabel: button.textContent,
    fieldsets: new Map([...form.querySelectorAll('fieldset[data-question]')].map((fs) => [fs.dataset.question, fs])),
    questions: new Map(design.questions.map((q) => [q.id, q])),
    reports: null,
    submission: null,
    sending: false,
  };
  page.sender = formSender(form, page.questions);
  for (const question of design.questions) {
    if (!page.fieldsets.has(question.id)) {
      throw new Error(_('the page has no field for question %(id)s', { id: question.id }));
    }
  }
  return page;
}

function showError(page, message) {
  page.errorRegion.textContent = message;
}

function setSending(page, value) {
  page.sending = value;
  page.button.disabled = value;
  page.button.textContent = value ? _('Sending…') : page.buttonLabel;
  page.form.setAttribute('aria-busy', value ? 'true' : 'false');
}

/** End the page after a final refusal: nothing was stored and no press of send can change that. */
function refuse(page, message) {
  page.reports.clear();
  page.submission = null;
  forgetPending(page.slug);
  clearAnswers(page.fieldsets);
  page.errorRegion.textContent = '';
  page.form.hidden = true;
  page.refused.textContent = message;
  page.refused.hidden = false;
  page.refused.focus();
}

/** End the page after the answers were stored (or queued offline: `follow` false), thanking with `text`. */
function finish(page, text, follow = true) {
  page.reports.clear();
  page.submission = null;
  clearAnswers(page.fieldsets);
  if (page.handover) {
    // Stored (or stored earlier) and counted by the session, or queued on this device to be sent through it.
    page.handover.next(follow ? 'sent' : 'queued');
    return;
  }
  rememberAnswered(page.slug);
  page.errorRegion.textContent = '';
  page.form.hidden = true;
  if (text) document.getElementById('thanks-text').textContent = text;
  page.thanks.hidden = false;
  page.thanks.focus();
  // Offline, a panel's redirect would fail: its link is shown to follow once online.
  showCompletion(page.design, page.panelValues, { follow, test: page.form.dataset.test === 'yes' });
}

/** Return the steps that end the page, shared by every send (see settle in respond-send.js). */
function endings(page) {
  return { finish: (text) => finish(page, text), refuse: (message) => refuse(page, message) };
}

/** Offer to send again the reports of a send from an earlier visit that was never acknowledged. */
function offerPending(page, body) {
  const section = document.getElementById('pending');
  const again = document.getElementById('pending-send');
  const error = document.getElementById('pending-error');
  const list = document.getElementById('pending-reports');
  const kept = JSON.parse(body).answers ?? {};
  list.replaceChildren(...Object.entries(kept).filter(([qid]) => page.questions.has(qid)).map(([qid, report]) => {
    const item = document.createElement('li');
    item.textContent = `“${page.questions.get(qid).text}”: ${describeReport(page.questions.get(qid), report)}`;
    return item;
  }));
  page.form.hidden = true;
  section.hidden = false;
  again.addEventListener('click', async () => {
    page.sender.cancel();
    again.disabled = true;
    error.textContent = '';
    const sent = await page.sender.transmit(body);
    again.disabled = false;
    if (sent.outcome !== 'lost') section.hidden = true;
    settle(page.slug, sent, {
      ...endings(page),
      lost: (message, retryAfter) => {
        error.textContent = message;
        if (retryAfter !== undefined) page.sender.later(() => again.click(), retryAfter);
      },
      refused: (message) => {
        page.form.hidden = false;
        showError(page, _('The earlier send was not accepted and nothing of it was stored: %(message)s You can '
          + 'answer below.', { message }));
      },
    });
  });
}

/** Return the body to send for the page's answers, or null after saying why nothing is sent. */
function checkedBody(page) {
  const { bad, fresh } = page.reports.validate();
  // A question shown only to decide whether a drawn one applies needs its answer too (nothing is sent for it).
  bad.unshift(...page.branching.unansweredDeciding());
  if (bad.length > 0) {
    showError(page, bad.length === 1
      ? _('One question needs your attention before sending; see the message under it.')
      : _('Questions that need your attention before sending: %(count)s; see the message under each.',
        { count: bad.length }));
    bad[0].focus();
    return null;
  }
  if (fresh.length > 0) {
    // Never the case when each answer was read as it was given; then nothing is sent unseen.
    showError(page, fresh.length === 1
      ? _('Nothing was sent: one question has a report made only now. Check what is shown under it, then send again.')
      : _('Nothing was sent: questions with a report made only now: %(count)s. Check what is shown under each, then '
        + 'send again.', { count: fresh.length }));
    fresh[0].focus();
    return null;
  }
  page.submission = page.submission ?? newSubmissionId();
  try {
    return page.reports.body(page.design.hash, page.submission, page.form.dataset.invite);
  } catch (error) {
    showError(page, _('Nothing was sent: %(reason)s.', { reason: error.message }));
    return null;
  }
}

/** Show a refusal the respondent can see the cause of: at its question when it names one. */
function showRefused(page, message, field) {
  // Refused, nothing stored: pressing send again would send the same and be refused again.
  page.sendNote.hidden = true;
  showError(page, message);
  const fieldset = typeof field === 'string' ? page.fieldsets.get(field) : undefined;
  if (fieldset) {
    markInvalid(fieldset, message);
    fieldset.focus();
  } else {
    page.button.focus();
  }
}

/** Send the page's reports when the respondent presses send. */
async function submit(page, event) {
  event.preventDefault();
  if (page.sending) return;
  page.sender.cancel();
  const pressedAt = performance.now();
  showError(page, '');
  const body = checkedBody(page);
  if (body === null) return;
  setSending(page, true);
  page.reports.attempted = true;
  const sent = await page.sender.send(page.slug, body, pressedAt);
  setSending(page, false);
  // Offline field mode: a send that reached no server from a device that knows it is offline waits on
  // this device, randomized (offline.js); online, a failed send is offered again as before.
  if (sent.network && navigator.onLine === false && page.offline && await page.offline.keep(body)) {
    forgetPending(page.slug);
    finish(page, QUEUED_THANKS(), false);
    return;
  }
  settle(page.slug, sent, {
    ...endings(page),
    lost: (message, retryAfter) => {
      showError(page, message);
      const again = () => { if (!page.form.hidden) page.form.requestSubmit(); };
      if (retryAfter !== undefined) page.sender.later(again, retryAfter);
      page.button.focus();
    },
    refused: (message, field) => showRefused(page, message, field),
  });
}

/** Randomize each answer as it is given, and make a new report when the respondent confirms one. */
function listenToAnswers(page) {
  page.fieldsets.forEach((fieldset, qid) => {
    const question = page.questions.get(qid);
    const box = page.reports.changed(question);
    box.querySelector('button').addEventListener('click', () => page.reports.confirmNewReport(question));
    const onAnswer = (event) => {
      // The option filter's search box holds no answer.
      if (box.contains(event.target) || event.target.type === 'search') return;
      clearInvalid(fieldset);
      page.reports.answerGiven(question);
      // A question that starts or stops applying gets the report of its new true answer.
      page.branching.update().forEach((other) => page.reports.answerGiven(other));
    };
    fieldset.addEventListener('input', onAnswer);
    fieldset.addEventListener('change', onAnswer);
  });
}

/**
 * Set up the survey's form for one respondent; `handover` (respond-handover.js) ends it with handover.next(),
 * `offline` (offline.js) keeps a body whose send reached no server while the device is offline.
 */
export function setUpSurvey(form, design, handover = null, offline = null) {
  const page = pageOf(form, design);
  page.handover = handover;
  page.offline = offline;
  // A panel's participant ids leave the address now, and this page's JavaScript alone holds them.
  page.panelValues = takePanelParameters(design, { keep: form.dataset.test !== 'yes' && !handover });
  if (!handover && wasAnswered(page.slug)) {
    form.hidden = true;
    page.notice.hidden = false;
    showCompletion(design, page.panelValues, { follow: false, test: form.dataset.test === 'yes', after: page.notice });
    return;
  }
  // Under sample allocation only the drawn questions are shown, validated and sent.
  const asked = askedQuestions(design, { remember: !handover });
  showOnly(asked, page.fieldsets);
  // Questions shown only when an earlier answer makes them apply still send a report (respond-branching.js).
  page.branching = new Branching(design, page.fieldsets, asked);
  page.branching.update();
  page.fieldsets.forEach((fieldset) => addOptionFilter(fieldset));
  design.questions
    .filter((question) => question.kind === 'multi' && question.decline)
    .forEach((question) => setUpDecline(page.fieldsets.get(question.id)));
  const series = setUpSeries(design, handover);
  form.querySelectorAll('[data-radio-group]').forEach(setUpRadioGroup);
  page.reports = new ReportState(page.fieldsets, asked, (question, value) => {
    const memo = series.memos.get(question.id);
    return memo === undefined ? randomizeQuestion(question, value) : waveReport(question, memo, value);
  }, (question, fieldset) => page.branching.read(question, fieldset));
  listenToAnswers(page);
  setUpProgress(form, page.fieldsets);
  // Every line from the start: a multi-select's blank is an answer ("none ticked"), so its report
  // is made now and shown; a question that needs an answer says that nothing is sent until it has one.
  design.questions.forEach((question) => page.reports.answerGiven(question));
  const pending = keptPending(page.slug, design.hash);
  if (pending !== null) offerPending(page, pending);
  form.addEventListener('submit', (event) => submit(page, event));
  page.button.disabled = false;
}

function start() {
  const form = document.querySelector('form[data-action]');
  // A page in handover mode is run by its own entry, respond-handover.js.
  if (form && form.dataset.handover === 'yes') return;
  // A closed survey's page has no form, but still sends (and so reports) what waits on this device.
  const slug = document.querySelector('article.survey')?.dataset.slug;
  if (!form) {
    if (slug) setUpOffline(slug);
    return;
  }
  const errorRegion = document.getElementById('form-error');
  try {
    foldOnNarrowScreen();
    const design = JSON.parse(document.getElementById('design').textContent);
    if (form.dataset.test === 'yes') keepNothing();
    const questions = new Map(design.questions.map((question) => [question.id, question]));
    setUpSurvey(form, design, null, form.dataset.test === 'yes' ? null : setUpOffline(design.slug, questions));
  } catch (error) {
    if (errorRegion) errorRegion.textContent = _('This survey cannot be answered: %(reason)s', { reason: error.message });
  }
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
