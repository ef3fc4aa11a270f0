/**
 * The offline queue of the respondent page (offline field mode): the bodies of sends that could not
 * reach the server, kept in IndexedDB until they are sent, one record per body.
 *
 * A record is {submission, slug, body}: `body` is exactly the JSON text that would have been POSTed
 * (the randomized reports, the design hash, the submission id and an invitation if any; built by
 * respond-reports.js), `submission` its submission id and `slug` its survey. Never a true answer,
 * never the form's state, and no time: records are keyed and read back in the order of their random
 * submission ids, so neither this device nor the server learns in which order they were given.
 *
 * flushQueue sends a survey's records one at a time with the page's own transmit (respond-send.js,
 * the same idempotent send: a repeat of a stored submission id is stored once). A record leaves the
 * queue only when the server has answered it: stored, already stored, or refused (it would be
 * refused again). A lost send stops the flush and keeps its record for the next one.
 */

const DATABASE = 'ldp-survey-offline';
const STORE = 'queue';
const BY_SURVEY = 'slug';

/** Return a promise of an IndexedDB request's result. */
function done(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Return a promise that settles when a transaction has committed. */
function committed(transaction) {
  return new Promise((resolve, reject) => {
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
    transaction.onabort = () => reject(transaction.error);
  });
}

/** Open the queue's database (created on first use); reject where IndexedDB is unavailable. */
export function openQueue(factory = globalThis.indexedDB) {
  if (!factory) return Promise.reject(new Error('IndexedDB is unavailable'));
  const request = factory.open(DATABASE, 1);
  request.onupgradeneeded = () => {
    const store = request.result.createObjectStore(STORE, { keyPath: 'submission' });
    store.createIndex(BY_SURVEY, 'slug');
  };
  return done(request);
}

/** Return the submission id of a body to send (the JSON text of respond-reports.js), or throw. */
export function submissionOf(body) {
  const submission = JSON.parse(body)?.submission;
  if (typeof submission !== 'string' || submission === '') throw new Error('the body has no submission id');
  return submission;
}

/** Keep `body` (the exact text to POST) for survey `slug` until it is sent; a repeat of its id replaces it. */
export async function enqueue(db, slug, body) {
  const transaction = db.transaction(STORE, 'readwrite');
  transaction.objectStore(STORE).put({ submission: submissionOf(body), slug, body });
  await committed(transaction);
}

/** Return survey `slug`'s queued records, in the order of their (random) submission ids. */
export async function queued(db, slug) {
  const transaction = db.transaction(STORE, 'readonly');
  const records = await done(transaction.objectStore(STORE).index(BY_SURVEY).getAll(slug));
  return records.sort((a, b) => (a.submission < b.submission ? -1 : Number(a.submission > b.submission)));
}

/** Remove the record of a submission id. */
export async function dequeue(db, submission) {
  const transaction = db.transaction(STORE, 'readwrite');
  transaction.objectStore(STORE).delete(submission);
  await committed(transaction);
}

/**
 * Send survey `slug`'s queued bodies one at a time with `transmit(body)` (respond-send.js's result);
 * return {sent, earlier, refused: [result], lost: result | null, waiting}: how many were stored now,
 * how many had been stored before, the refusals, the lost send that stopped the flush, and how many
 * are still queued.
 */
export async function flushQueue(db, slug, transmit) {
  const summary = { sent: 0, earlier: 0, refused: [], lost: null, waiting: 0 };
  const records = await queued(db, slug);
  for (const [index, record] of records.entries()) {
    const result = await transmit(record.body);
    if (result.outcome === 'lost') {
      summary.lost = result;
      summary.waiting = records.length - index;
      return summary;
    }
    await dequeue(db, record.submission);
    if (result.outcome === 'stored') summary.sent += 1;
    else if (result.outcome === 'earlier') summary.earlier += 1;
    else summary.refused.push(result);
  }
  return summary;
}
