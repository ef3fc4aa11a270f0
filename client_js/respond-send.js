/**
 * Sending of the respondent page (respond.js): the only way answers leave the page, as one JSON
 * request of noisy reports to the form's same-origin data-action URL, sent a fixed delay after the
 * respondent presses send so that the request's timing says nothing about the report.
 *
 * The request carries a random submission id, kept until the server acknowledges it: a retry
 * after a lost answer is stored once. The body of a send not yet acknowledged is kept on this
 * device (the pending body), so that after a reload the very same reports are offered again.
 *
 * A 503 (the server cannot store answers now; nothing was stored) is a lost send that retries
 * itself: the page shows the server's sentence and sends the very same body again after the
 * reply's Retry-After, until it is stored or the respondent sends it first.
 *
 * Every send ends in one of five outcomes, settled in one place (settle): stored, earlier (a
 * repeat of a stored send), lost, refused (the respondent can answer again) and a final refusal.
 */

import { u32 } from './random.js';
import { LOST_MESSAGE, outcome } from './refusals.js';
import { storage } from './respond-device.js';
import { _ } from './messages.js';

// How long after the press of send the request leaves, whatever the randomization took:
// its running time can depend on the report, a timing channel (Haeberlen, Pierce & Narayan 2011).
const SEND_DELAY_MS = 400;
const EARLIER_MESSAGE = () => _('Your answers had already arrived from an earlier send and were counted once; '
  + 'this send was not stored again. Your true answers never left this device.');
// The wait before sending again after a 503 without a usable Retry-After, and the bounds of any wait (s).
const RETRY_DEFAULT_S = 10;
const RETRY_MIN_S = 1;
const RETRY_MAX_S = 300;

// The body of a send not yet acknowledged (noisy reports and the submission id only), so that
// after a reload the very same reports are offered again rather than new ones.
const PENDING_PREFIX = 'ldp-survey:pending:';

/** Keep the body of a send until the server acknowledges it. */
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

/** Forget the body of the pending send of survey `slug`. */
export function forgetPending(slug) {
  try {
    storage().removeItem(PENDING_PREFIX + slug);
  } catch {
    // Nothing was kept.
  }
}

/** Return the kept body of an unacknowledged send for this design, or null (forgetting one that is not). */
export function keptPending(slug, hash) {
  const pending = pendingBody(slug);
  if (pending === null) return null;
  let kept = null;
  try {
    kept = JSON.parse(pending);
  } catch {
    kept = null;
  }
  if (kept && kept.design === hash && typeof kept.submission === 'string') return pending;
  forgetPending(slug);
  return null;
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

/** Return a new submission id: 128 random bits as 32 lowercase hex digits. */
export function newSubmissionId() {
  let id = '';
  for (let i = 0; i < 4; i += 1) id += u32().toString(16).padStart(8, '0');
  return id;
}

/** Return the form's data-action as a URL, refusing one of another origin. */
function formAction(form) {
  const action = new URL(form.dataset.action, window.location.href);
  if (action.origin !== window.location.origin) {
    throw new Error(`the form would send to another origin (${action.origin}); refusing`);
  }
  return action;
}

/**
 * Send one body; return {outcome: 'stored' | 'earlier' | 'lost' | 'refused', message, final, field, status},
 * `retryAfter` (seconds) for a 503 (the server's sentence is then the message), and `network` when no
 * reply came at all.
 *
 * A respondent's answers go with no cookie. Only in test mode (the survey's owner trying it) do the
 * owner's session and the page's CSRF token go with them, to the test endpoint, which stores apart.
 */
async function transmit(action, testing, questions, body) {
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
    // No reply at all (offline, or no server): offline.js may queue the body (`network`).
    return { outcome: 'lost', message: LOST_MESSAGE(), final: false, network: true };
  }
  const { field, error } = response.status === 201 ? { field: null, error: null } : await errorBody(response);
  const sent = { ...outcome(response.status, field, questions), field, status: response.status };
  if (response.status !== 503) return sent;
  const retryAfter = retrySeconds(response.headers.get('Retry-After'));
  return { ...sent, message: error ?? sent.message, retryAfter };
}

/**
 * Return the sender of a form: transmit(body) sends now; send(slug, body, pressedAt) keeps the body
 * pending and sends it SEND_DELAY_MS after the press; later(send, seconds) schedules the automatic
 * send after a 503 and cancel() drops it (any send the respondent starts cancels it).
 */
export function formSender(form, questions) {
  const action = formAction(form);
  const testing = form.dataset.test === 'yes';
  let retryTimer = null;
  const sender = {
    transmit: (body) => transmit(action, testing, questions, body),
    async send(slug, body, pressedAt) {
      keepPending(slug, body);
      await waitUntil(pressedAt + SEND_DELAY_MS);
      return sender.transmit(body);
    },
    later(send, seconds) {
      clearTimeout(retryTimer);
      retryTimer = setTimeout(() => {
        retryTimer = null;
        send();
      }, seconds * 1000);
    },
    cancel() { clearTimeout(retryTimer); },
  };
  return sender;
}

/**
 * End the interviewer session of a page in handover mode (respond-handover.js): a POST of an empty object to the
 * session's end address, beside the form's data-action; return whether the server ended it.
 */
export async function endSession(form) {
  const sent = await transmit(new URL('end', formAction(form)), false, new Set(), '{}');
  return sent.status === 200;
}

/** Return a lost send's message; after a 503, say when the page will send again by itself. */
function lostMessage(sent) {
  if (sent.retryAfter === undefined) return sent.message;
  return `${sent.message} ${_('Sending again in %(seconds)s seconds.', { seconds: sent.retryAfter })}`;
}

/**
 * Settle a send of survey `slug`: forget its pending body unless it was lost, then take the page's
 * step for its outcome: finish(text) for stored and earlier, lost(message, retryAfter),
 * refuse(message) for a final refusal and refused(message, field) for one the respondent can fix.
 */
export function settle(slug, sent, steps) {
  if (sent.outcome !== 'lost') forgetPending(slug);
  if (sent.outcome === 'stored') steps.finish();
  else if (sent.outcome === 'earlier') steps.finish(EARLIER_MESSAGE());
  else if (sent.outcome === 'lost') steps.lost(lostMessage(sent), sent.retryAfter);
  else if (sent.final) steps.refuse(sent.message);
  else steps.refused(sent.message, sent.field);
}
