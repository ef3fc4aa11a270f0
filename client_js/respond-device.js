/**
 * What the respondent page (respond.js) keeps on this device: localStorage, or in test mode an
 * in-memory store for the page's life, so that nothing reaches localStorage; and the mark that
 * this device has answered a survey.
 */

const ANSWERED_PREFIX = 'ldp-survey:answered:';

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

/** Keep nothing on this device from now on: storage() is an in-memory store for the page's life. */
export function keepNothing() {
  pageStorage = memoryStorage();
}

/** Return the page's storage: localStorage, the in-memory store of test mode, or null if unavailable. */
export function storage() {
  if (pageStorage) return pageStorage;
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** Mark that this device has answered the survey `slug`. */
export function rememberAnswered(slug) {
  try {
    storage().setItem(ANSWERED_PREFIX + slug, 'yes');
  } catch {
    // Storage can be unavailable (private browsing); the notice is only a courtesy.
  }
}

/** Return whether this device has answered the survey `slug`. */
export function wasAnswered(slug) {
  try {
    return storage().getItem(ANSWERED_PREFIX + slug) !== null;
  } catch {
    return false;
  }
}
