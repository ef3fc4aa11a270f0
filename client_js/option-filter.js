/**
 * A filter box above a long list of options, so that a choice among hundreds stays usable.
 *
 * The box is added by script (the form cannot be sent without script anyway), has a label,
 * and carries no name: what is typed never leaves the page. Options whose label does not
 * contain the typed text (ignoring case and accents) are hidden, never unchecked; a status
 * line says how many are shown.
 */

import { _ } from './messages.js';

export const MIN_OPTIONS_FOR_FILTER = 10;

/** Return text lowercased without accents, for matching "cafe" to "Café". */
export function foldText(text) {
  return text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().trim();
}

/** Return whether an option labelled `label` matches the filter text `query`. */
export function optionMatches(label, query) {
  return foldText(label).includes(foldText(query));
}

function statusText(shown, total) {
  if (shown === total) return _('All %(total)s options shown.', { total });
  if (shown === 0) return _('No option matches; all %(total)s are still there when you clear the filter.', { total });
  return _('%(shown)s of %(total)s options shown.', { shown, total });
}

/** Add a filter box above the options of one fieldset if it has at least `minOptions`; return the box or null. */
export function addOptionFilter(fieldset, minOptions = MIN_OPTIONS_FOR_FILTER) {
  const list = fieldset.querySelector('.options');
  if (!list) return null;
  const options = [...list.querySelectorAll('.option')];
  if (options.length < minOptions) return null;
  const id = `${fieldset.id}-filter`;
  const wrapper = document.createElement('div');
  wrapper.className = 'option-filter';
  const label = document.createElement('label');
  label.htmlFor = id;
  label.textContent = _('Find an option');
  const input = document.createElement('input');
  input.type = 'search';
  input.id = id;
  input.autocomplete = 'off';
  input.spellcheck = false;
  input.setAttribute('aria-controls', list.id || `${fieldset.id}-options`);
  if (!list.id) list.id = `${fieldset.id}-options`;
  const status = document.createElement('p');
  status.className = 'hint option-filter-status';
  status.id = `${id}-status`;
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  input.setAttribute('aria-describedby', status.id);
  wrapper.append(label, input, status);
  list.before(wrapper);
  list.classList.add('many-options');
  const labels = options.map((option) => option.querySelector('label')?.textContent ?? '');

  const apply = () => {
    let shown = 0;
    options.forEach((option, index) => {
      const visible = optionMatches(labels[index], input.value);
      option.hidden = !visible;
      if (visible) shown += 1;
    });
    status.textContent = statusText(shown, options.length);
  };
  input.addEventListener('input', apply);
  // Enter in the box filters; it must not send the survey.
  input.addEventListener('keydown', (event) => { if (event.key === 'Enter') event.preventDefault(); });
  apply();
  return input;
}
