/**
 * A panel's completion on the respondent page (respond.js): the participant ids a recruiting panel
 * (Prolific, MTurk, a market-research panel) adds to the link, and the completion code or redirect
 * that ends the survey (the design's `panel`, docs/how-to/invitations-and-panels.md).
 *
 * The ids stay in this browser. On load, the parameters the design declares are read from the
 * address and removed from it (history.replaceState), so they are in no bookmark, shared link or
 * later request; only after the server acknowledged the answers are they substituted into the
 * redirect, here, %-encoded. They are never sent to this survey's server: the answers' body holds
 * reports only, and the page sends no Referer. For a reload before sending, they are kept in this
 * tab's sessionStorage (never in test mode) and forgotten once the completion is shown.
 */

const KEPT_PREFIX = 'ldp-survey:panel:';
// Longer values are cut: no panel id is this long, and the redirect must stay a sane URL.
const MAX_VALUE = 200;

function session() {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

/** Remove `names` from the page's address (keeping every other parameter); return the values found. */
function takeFromAddress(names) {
  const url = new URL(window.location.href);
  const found = {};
  for (const name of names) {
    if (url.searchParams.has(name)) found[name] = url.searchParams.get(name).slice(0, MAX_VALUE);
    url.searchParams.delete(name);
  }
  if (Object.keys(found).length > 0) window.history.replaceState(window.history.state, '', url.href);
  return found;
}

/**
 * Return the design's panel parameters from the address (removing them from it), or those this tab
 * kept from an earlier load of the page; {} for a survey without a panel.
 */
export function takePanelParameters(design, { keep = true } = {}) {
  if (!design.panel) return {};
  const found = takeFromAddress(design.panel.parameters);
  const store = keep ? session() : null;
  const key = KEPT_PREFIX + design.slug;
  try {
    if (Object.keys(found).length > 0) {
      store?.setItem(key, JSON.stringify(found));
      return found;
    }
    const kept = JSON.parse(store?.getItem(key) ?? '{}');
    return kept && typeof kept === 'object' ? kept : {};
  } catch {
    return found;
  }
}

/** Return `redirect` with {code} and each {PARAMETER} replaced by its %-encoded value ('' when absent). */
export function completionUrl(redirect, code, values) {
  return redirect.replace(/\{([^{}]*)\}/g, (_, name) => {
    const value = name === 'code' ? code : values[name];
    return encodeURIComponent(typeof value === 'string' ? value : '');
  });
}

/**
 * Show the completion (code and/or the redirect's link) once the answers were acknowledged, and go
 * to the redirect when `follow` (never in test mode, where the link is shown instead). It sits in
 * the thanks, or after the element `after` (the "already answered" notice of a revisit).
 */
export function showCompletion(design, values, { follow, test, after = null }) {
  const section = document.getElementById('completion');
  if (!design.panel || !section) return;
  if (after) after.after(section);
  const { code, redirect } = design.panel;
  try {
    session()?.removeItem(KEPT_PREFIX + design.slug);
  } catch {
    // Nothing was kept.
  }
  section.hidden = false;
  if (!redirect) return;
  // The page's one navigation away (tests/js/lint.test.mjs): to the completion URL, and only from here.
  const url = new URL(completionUrl(redirect, code ?? '', values), window.location.href).href;
  document.getElementById('completion-link').setAttribute('href', url);
  if (test) document.getElementById('completion-test').hidden = false;
  else if (follow) window.location.assign(url);
}
