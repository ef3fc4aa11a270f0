/**
 * Service worker of the respondent pages (offline field mode, docs/how-to/offline.md), served as
 * /s/offline-worker.js by survey/web/offline.py, so that its scope is /s/: the survey pages.
 *
 * It keeps nothing by itself. The respondent page (offline.js) puts into its cache the GET
 * responses of its own files while online: the page, the public design, its joined script, the
 * stylesheet and the manifest. For those, and only those, this worker answers network first: a
 * response from the server always wins, and replaces the kept copy (a survey changed or closed
 * since is never shown stale while online); the kept copy answers only when the network cannot.
 * A page the server no longer has (404 or 410) is dropped from the cache.
 *
 * Only GET requests are looked at. A POST (the reports sent) goes to the network untouched: this
 * worker never sees, keeps or replays a body; the queue of randomized bodies is offline-queue.js's.
 * This is a classic script (no imports): a worker's code is this one file, as written.
 */

// Bumped when what the cache holds changes shape; offline.js names the same cache.
const CACHE = 'ldp-survey-offline-v1';

self.addEventListener('install', (event) => {
  event.waitUntil(self.skipWaiting());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    const names = await caches.keys();
    await Promise.all(names.filter((name) => name.startsWith('ldp-survey-offline-') && name !== CACHE)
      .map((name) => caches.delete(name)));
    await self.clients.claim();
  })());
});

/** Return the kept copy of a request's response, or undefined (the cache ignores Vary: one copy per URL). */
async function keptCopy(cache, request) {
  return cache.match(request, { ignoreVary: true });
}

/** Answer a GET the page asked to keep: the network's response (refreshing the copy), else the kept copy. */
async function networkFirst(request) {
  const cache = await caches.open(CACHE);
  const kept = await keptCopy(cache, request);
  let response;
  try {
    response = await fetch(request);
  } catch (error) {
    if (kept) return kept;
    throw error;
  }
  if (kept && response.ok && response.type === 'basic') {
    await cache.put(request, response.clone());
  } else if (kept && (response.status === 404 || response.status === 410)) {
    await cache.delete(request, { ignoreVary: true });
  }
  return response;
}

/** Return whether a request is one this worker may answer: a same-origin GET. */
function handled(request) {
  return request.method === 'GET' && new URL(request.url).origin === self.location.origin;
}

self.addEventListener('fetch', (event) => {
  if (!handled(event.request)) return;
  event.respondWith(networkFirst(event.request));
});
