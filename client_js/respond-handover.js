/**
 * Handover mode of the respondent page, its entry in that mode (templates/_handover_bar.html and
 * _handover_start.html): one device handed from respondent to respondent through an interviewer session's
 * secret link (docs/how-to/handover.md). respond.js sets the survey up for each respondent; the ordinary
 * page's script does not carry this module.
 *
 * Every respondent starts on the start screen, with the privacy explanation open above it. Once their
 * reports are sent, the form is replaced by a copy of it made when the page loaded, before any answer
 * or listener: no answer, report line or message of theirs stays in the page, and no history entry
 * leads back to it. Nothing is kept on the device: the page's storage is a new in-memory store for
 * every respondent (no "already answered" mark, no pending body, no series memo, no drawn sample in
 * localStorage or sessionStorage), and series memos are off.
 *
 * The interviewer's bar counts the responses sent in this session, those waiting to be sent (setWaiting of
 * respond-waiting.js: the session's queue of sends made offline), and has a way to end the session from here,
 * after a confirmation.
 *
 * Offline (offline.js, docs/how-to/handover.md): the page, kept by the service worker, reloads without a
 * connection; a respondent's send that reaches no server while the device is offline waits in the session's
 * own IndexedDB queue as its randomized body only, and the page starts again for the next respondent as
 * online. The queue is sent through the session when the connection returns; the bar then counts those
 * stored as answered. An ended session's page (no form) still sends what waits and says what was refused.
 */

import { keepNothing } from './respond-device.js';
import { setWaiting } from './respond-waiting.js';
import { endSession } from './respond-send.js';
import { setUpSurvey } from './respond.js';
import { setUpOffline } from './offline.js';
import { _ } from './messages.js';

function setAnswered(n) {
  document.getElementById('handover-answered').textContent = String(n);
}

/** Show the start screen for the next respondent (after `outcome`: 'sent', 'queued' or none), the form hidden. */
function showStart(state, outcome) {
  state.form.hidden = true;
  document.getElementById('handover-sent').hidden = outcome !== 'sent';
  document.getElementById('handover-queued').hidden = outcome !== 'queued';
  document.getElementById('handover-full').hidden = true;
  const protection = document.getElementById('protection');
  if (protection) protection.open = true;
  const start = document.getElementById('handover-start');
  start.hidden = false;
  // From the top: the interviewer's bar, then the privacy explanation, then this screen's button.
  window.scrollTo(0, 0);
  start.focus({ preventScroll: true });
}

/** Replace the form by a fresh copy of the one the page loaded with, set up for the next respondent. */
function freshForm(state) {
  const fresh = state.pristine.cloneNode(true);
  state.form.replaceWith(fresh);
  state.form = fresh;
  fresh.hidden = true;
  keepNothing();
  state.setUp(fresh, state.design, state.handover, state.offline);
}

/** Wire the start button: the respondent starts on the form, at its first question, while the allowance lasts. */
function wireStart(state) {
  document.getElementById('handover-begin').addEventListener('click', () => {
    // Offline the server cannot refuse yet: answers beyond the allowance would only be refused later.
    const full = state.answered + state.waiting >= state.allowance;
    document.getElementById('handover-full').hidden = !full;
    if (full) return;
    document.getElementById('handover-start').hidden = true;
    document.getElementById('handover-sent').hidden = true;
    document.getElementById('handover-queued').hidden = true;
    state.form.hidden = false;
    const first = [...state.form.querySelectorAll('fieldset[data-question]')].find((fieldset) => !fieldset.hidden);
    (first ?? state.form).focus();
  });
}

/** End the page after the session ended: nothing can be answered here any more. */
function closePage(state) {
  const fresh = state.pristine.cloneNode(true);
  fresh.hidden = true;
  state.form.replaceWith(fresh);
  state.form = fresh;
  for (const id of ['handover-start', 'handover-end', 'handover-confirm']) document.getElementById(id).hidden = true;
  const ended = document.getElementById('handover-ended');
  ended.hidden = false;
  ended.focus();
}

/** Wire the end button and its confirmation: ending asks first, then tells the server. */
function wireEnd(state) {
  const button = document.getElementById('handover-end');
  const confirm = document.getElementById('handover-confirm');
  const status = document.getElementById('handover-status');
  const ask = (open) => {
    confirm.hidden = !open;
    button.setAttribute('aria-expanded', open ? 'true' : 'false');
    (open ? document.getElementById('handover-end-no') : button).focus();
  };
  button.addEventListener('click', () => ask(confirm.hidden));
  document.getElementById('handover-end-no').addEventListener('click', () => ask(false));
  document.getElementById('handover-end-yes').addEventListener('click', async () => {
    status.textContent = '';
    if (await endSession(state.form)) {
      closePage(state);
      // The server now answers 410 for this page: asking for it drops the service worker's copy (sw.js).
      state.offline?.refreshCopy();
    } else {
      status.textContent = document.getElementById('handover-end-failed').textContent;
    }
  });
}

/**
 * Run the page in handover mode: `setUp(form, design, handover, offline)` sets up one respondent's form
 * (respond.js); handover.next(outcome) is what it calls once that respondent's reports were stored ('sent')
 * or queued offline ('queued'). `makeOffline(hooks)` (setUpOffline) returns the session's queue, or null.
 */
export function startHandover(form, design, setUp, makeOffline = () => null) {
  const bar = document.getElementById('interviewer-bar').dataset;
  const state = { form, design, setUp, pristine: form.cloneNode(true), waiting: 0 };
  state.answered = Number(bar.answered) || 0;
  state.allowance = Number(bar.allowance) || Infinity;
  const count = (n) => {
    state.answered += n;
    setAnswered(state.answered);
    // The kept copy of this page carries the count: an offline reload shows it as it is now.
    if (n > 0) state.offline?.refreshCopy();
  };
  state.handover = {
    next(outcome) {
      // A stored send counts once in the session (a repeat is stored once, but its first reply was lost here).
      if (outcome === 'sent') count(1);
      freshForm(state);
      showStart(state, outcome);
    },
  };
  keepNothing();
  setWaiting(0);
  const waiting = (n) => {
    state.waiting = n;
    setWaiting(n);
  };
  state.offline = makeOffline({ onWaiting: waiting, onSent: count });
  setUp(form, design, state.handover, state.offline);
  wireStart(state);
  wireEnd(state);
  showStart(state, null);
}

function start() {
  const form = document.querySelector('form[data-handover="yes"]');
  if (!form) {
    // An ended session's (or a closed survey's) page: it sends what waits for the session and says what was refused.
    const slug = document.querySelector('article.survey')?.dataset.slug;
    if (slug) setUpOffline(slug);
    return;
  }
  try {
    const design = JSON.parse(document.getElementById('design').textContent);
    const questions = new Map(design.questions.map((question) => [question.id, question]));
    startHandover(form, design, setUpSurvey, (hooks) => setUpOffline(design.slug, questions, hooks));
  } catch (error) {
    document.getElementById('form-error').textContent = _('This survey cannot be answered: %(reason)s',
      { reason: error.message });
  }
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
