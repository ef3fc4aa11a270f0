/**
 * The respondent page's words in its language. Every message is marked _('English text', {name}) in
 * the module that shows it; pybabel extracts these marks into the catalogs (babel.cfg), and the
 * server passes the page's translations as the JSON blob #messages (survey/web/i18n.py), keyed by
 * the English text. A message the blob lacks (or Node, with no page) stays in English.
 */

let catalog = null;

/** Return the page's translations, read once from its #messages blob ({} when there is none). */
function translations() {
  if (catalog === null) {
    catalog = {};
    try {
      const blob = typeof document === 'undefined' ? null : document.getElementById('messages');
      if (blob) catalog = JSON.parse(blob.textContent) ?? {};
    } catch {
      catalog = {};
    }
  }
  return catalog;
}

/** Return `message` in the page's language, its %(name)s placeholders filled from `values`. */
export function _(message, values = {}) {
  const translated = translations()[message];
  const text = typeof translated === 'string' && translated !== '' ? translated : message;
  return text.replace(/%\((\w+)\)s/g, (whole, name) => (name in values ? String(values[name]) : whole));
}
