/**
 * Offline field mode of the respondent page (docs/how-to/offline.md): the page works without a
 * connection once it was opened with one, and the answers given offline wait on this device as
 * randomized bodies only, then are sent when the connection returns.
 *
 * setUpOffline registers the service worker (sw.js) and keeps the page's own files in its cache;
 * it sends the survey's queued bodies (offline-queue.js) when the page opens, when the browser
 * says it is online again, and every FLUSH_EVERY_MS while the page is open, one at a time with
 * the page's own idempotent send (respond-send.js); and it says in #offline-status (a polite live
 * region) how many are waiting, and in #offline-refused how many the server refused, and why.
 * keep(body) queues the body of a send that reached no server: the very text it would have POSTed.
 *
 * Test mode keeps nothing on this device: respond.js does not call this module there.
 */

import { enqueue, flushQueue, openQueue, queued } from './offline-queue.js';
import { formSender } from './respond-send.js';
import { _ } from './messages.js';

// The service worker's cache (sw.js names the same).
const CACHE = 'ldp-survey-offline-v1';
// How often an open page tries again to send what waits (ms), besides on load and the online event.
const FLUSH_EVERY_MS = 30_000;

/** Return the thanks of a page whose answers wait on this device to be sent. */
export const QUEUED_THANKS = () => _('Your answers could not reach the server now. This device keeps their '
  + 'randomized reports, and nothing else. It sends them when the connection comes back. If it does not, open '
  + 'this survey again when you are online. Your true answers never left this device. They have been cleared '
  + 'from this page.');

/** Return the words for how many answers wait on this device (empty when none). */
function waitingText(count) {
  if (count === 0) return '';
  const waiting = count === 1
    ? _('1 answer waiting to be sent. This device keeps only its randomized reports until then.')
    : _('%(count)s answers waiting to be sent. This device keeps only their randomized reports until then.',
      { count });
  if (navigator.onLine !== false) return waiting;
  return [waiting, _('This device is offline. They are sent when the connection comes back, while a page of '
    + 'this survey is open.')].join(' ');
}

/** Return why the server refused a queued body, from its status and error field (respond-send.js). */
function refusalReason(result) {
  if (result.field === 'interview') {
    return _('the interviewer session had ended, expired more than 3 days before, or used its whole allowance');
  }
  if (result.status === 410) return _('the survey has closed');
  if (result.field === 'invite') return _('their invitation link was used or is wrong');
  if (result.status === 409 || result.field === 'design') return _('the survey was changed after they were given');
  return _('the server did not accept them (error %(status)s)', { status: result.status ?? '?' });
}

/** Return the sentence saying that `results` (refusals of queued bodies) were refused, grouped by reason. */
function refusedText(results) {
  const reasons = new Map();
  results.forEach((result) => {
    const reason = refusalReason(result);
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  });
  return [...reasons].map(([reason, count]) => _('%(count)s answer(s) waiting on this device were refused, because '
    + '%(reason)s. They were removed from this device. Nothing about them was stored.', { count, reason }))
    .join(' ');
}

/** Register the service worker and keep this page's files (GET responses only) in its cache. */
async function keepFiles(holder) {
  if (!('serviceWorker' in navigator) || !globalThis.caches) return;
  // Awaited first: by then the page has run, and a panel's ids have left the address (respond-completion.js).
  await navigator.serviceWorker.register(holder.dataset.worker);
  const files = [...document.querySelectorAll('script[src], link[rel="stylesheet"], link[rel="manifest"]')]
    .map((element) => element.src || element.href);
  const urls = [...new Set([window.location.href, holder.dataset.design, ...files])];
  const cache = await caches.open(CACHE);
  await cache.addAll(urls.map((url) => new Request(url, { credentials: 'omit' })));
}

/** Refresh the kept copy of this page, when one is kept (its counts change as answers are sent). */
async function refreshPage() {
  if (!globalThis.caches || navigator.onLine === false) return;
  const cache = await caches.open(CACHE);
  const request = new Request(window.location.href, { credentials: 'omit' });
  if (await cache.match(request, { ignoreVary: true })) await cache.add(request);
}

/** Show how many wait, and what this page's flushes (a lost send leaves some to the next) sent and saw refused. */
function show(offline, waiting, summary) {
  // The live regions stay in the page (a region shown only when it has words may not be read out).
  offline.status.textContent = waitingText(waiting);
  offline.onWaiting(waiting);
  offline.status.classList.toggle('notice', waiting > 0);
  if (!summary) return;
  offline.onSent(summary.sent + summary.earlier);
  const sent = offline.sentSoFar += summary.sent + summary.earlier;
  offline.refusedSoFar.push(...summary.refused);
  if (sent > 0) {
    offline.sent.textContent = _('%(count)s answer(s) waiting on this device were sent and counted once.',
      { count: sent });
    offline.sent.classList.add('notice');
  }
  if (summary.refused.length > 0) {
    offline.refused.textContent = refusedText(offline.refusedSoFar);
    offline.refused.hidden = false;
  }
}

/** Send what waits for this survey, one at a time, unless a flush runs or a 503's wait is not over. */
async function flush(offline) {
  if (offline.flushing || performance.now() < offline.notBefore) return;
  offline.flushing = true;
  try {
    const db = await offline.db;
    const summary = await flushQueue(db, offline.slug, offline.sender.transmit);
    if (summary.lost?.retryAfter !== undefined) offline.notBefore = performance.now() + summary.lost.retryAfter * 1000;
    show(offline, (await queued(db, offline.slug)).length, summary);
  } catch {
    // IndexedDB unavailable or failing: nothing was queued here, so nothing waits.
  } finally {
    offline.flushing = false;
  }
}

/**
 * Set up offline field mode for the survey `slug` from the page's #offline-status element (its
 * data-action, data-worker and data-design URLs, and data-queue: the queue's name, the slug unless
 * an interviewer session has its own); return {keep(body), refreshCopy()} — keep resolving to whether
 * the body is queued —, or null when the page has no such element. `hooks.onWaiting(n)` hears how many
 * wait after each change, `hooks.onSent(n)` how many of them a flush had stored (respond-handover.js).
 */
export function setUpOffline(slug, questions = new Map(), hooks = {}) {
  const holder = document.getElementById('offline-status');
  if (!holder) return null;
  const queue = holder.dataset.queue || slug;
  const offline = {
    slug: queue,
    onWaiting: hooks.onWaiting ?? (() => {}),
    onSent: hooks.onSent ?? (() => {}),
    status: holder,
    sent: document.getElementById('offline-sent'),
    refused: document.getElementById('offline-refused'),
    sender: formSender(holder, questions),
    db: openQueue(),
    flushing: false,
    notBefore: 0,
    sentSoFar: 0,
    refusedSoFar: [],
  };
  offline.db.catch(() => {});
  keepFiles(holder).catch(() => {
    // Without a service worker the page still queues and sends; it cannot be reopened offline.
  });
  window.addEventListener('online', () => flush(offline));
  window.addEventListener('offline', () => flush(offline));
  setInterval(() => flush(offline), FLUSH_EVERY_MS);
  flush(offline);
  return {
    async keep(body) {
      try {
        const db = await offline.db;
        await enqueue(db, queue, body);
        show(offline, (await queued(db, queue)).length, null);
        return true;
      } catch {
        return false;
      }
    },
    refreshCopy() {
      refreshPage().catch(() => {
        // Offline, or no cache: the copy is refreshed at the next load online.
      });
    },
  };
}
