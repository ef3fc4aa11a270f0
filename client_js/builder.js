/**
 * Survey builder (templates/builder.html): add, remove and reorder questions (by their buttons or
 * by dragging their handle) and change their kind in place, and keep the precision preview beside
 * each question current, from the server's preview endpoint. While the form has errors, the last
 * preview stays, marked as out of date.
 *
 * Without this module the page works through its submit buttons, which the server applies.
 * Every number and sentence of the preview comes from the server (survey/planning.py); this
 * file computes none and builds its elements with textContent only.
 */

const DEBOUNCE_MS = 400;
const ACTION = /^(add|kind|remove|up|down):(.+)$/;
// "questions-3" or "questions-__index__" as a whole word or before "-": a question's prefix.
const PREFIX = /questions-(?:\d+|__index__)(?=-|\s|$)/g;

const form = document.getElementById('builder');
const list = document.getElementById('questions');
const summary = document.getElementById('builder-summary');
const crosstabPreview = document.getElementById('crosstab-preview');
const pairSelects = [document.getElementById('pair_a'), document.getElementById('pair_b')];
const powerPreview = document.getElementById('power-preview');
const powerSelect = document.getElementById('power_question');
const status = document.getElementById('builder-status');

function questions() {
  return [...list.querySelectorAll(':scope > fieldset.question')];
}

function announce(message) {
  status.textContent = '';
  window.setTimeout(() => { status.textContent = message; }, 50);
}

/** Give every question's fields, labels, errors and buttons the names of its position. */
function renumber() {
  questions().forEach((fieldset, index) => {
    fieldset.dataset.index = String(index);
    for (const element of [fieldset, ...fieldset.querySelectorAll('*')]) {
      for (const attribute of ['id', 'name', 'for', 'aria-describedby']) {
        const value = element.getAttribute(attribute);
        if (value !== null) element.setAttribute(attribute, value.replace(PREFIX, `questions-${index}`));
      }
      if (element.tagName === 'BUTTON') element.value = element.value.replace(/:(?:\d+|__index__)$/, `:${index}`);
    }
    for (const number of fieldset.querySelectorAll('[data-number]')) number.textContent = String(index + 1);
  });
}

function firstInput(fieldset) {
  return fieldset.querySelector('input:not([type=hidden]), textarea');
}

function addQuestion(kind) {
  const template = document.getElementById(`question-template-${kind}`);
  if (template === null) return;
  list.append(template.content.cloneNode(true));
  renumber();
  const added = questions().at(-1);
  firstInput(added).focus();
  announce(`Question ${questions().length} added.`);
}

function removeQuestion(index) {
  const fieldset = questions()[index];
  fieldset.remove();
  renumber();
  const rest = questions();
  const next = index < rest.length ? rest[index] : rest.at(-1);
  (next ? firstInput(next) : document.getElementById('add-yes_no')).focus();
  announce(`Question ${index + 1} removed.`);
}

function moveQuestion(index, step) {
  const all = questions();
  const target = index + step;
  if (target < 0 || target >= all.length) {
    announce(`Question ${index + 1} is already ${step < 0 ? 'first' : 'last'}.`);
    return;
  }
  if (step < 0) all[target].before(all[index]);
  else all[target].after(all[index]);
  renumber();
  document.getElementById(`questions-${target}-${step < 0 ? 'up' : 'down'}`).focus();
  announce(`Question moved to position ${target + 1}.`);
}

let dragged = null;

/** Return the question a drag is over and whether the drop goes after it (pointer in its lower half), or null. */
function dropTarget(event) {
  const target = event.target.closest('fieldset.question');
  if (dragged === null || target === null || target === dragged || target.parentElement !== list) return null;
  const box = target.getBoundingClientRect();
  return { target, after: event.clientY > box.top + box.height / 2 };
}

function clearDropMarks() {
  for (const fieldset of questions()) fieldset.classList.remove('drop-before', 'drop-after');
}

list.addEventListener('dragstart', (event) => {
  const handle = event.target.closest('.drag-handle');
  if (handle === null) return;
  dragged = handle.closest('fieldset.question');
  dragged.classList.add('dragging');
  event.dataTransfer.effectAllowed = 'move';
  event.dataTransfer.setData('text/plain', `Question ${Number(dragged.dataset.index) + 1}`);
  event.dataTransfer.setDragImage(dragged, 16, 16);
});

list.addEventListener('dragover', (event) => {
  const drop = dropTarget(event);
  clearDropMarks();
  if (drop === null) return;
  event.preventDefault();
  event.dataTransfer.dropEffect = 'move';
  drop.target.classList.add(drop.after ? 'drop-after' : 'drop-before');
});

list.addEventListener('drop', (event) => {
  const drop = dropTarget(event);
  if (drop === null) return;
  event.preventDefault();
  if (drop.after) drop.target.after(dragged);
  else drop.target.before(dragged);
  renumber();
  announce(`Question moved to position ${Number(dragged.dataset.index) + 1}.`);
  schedule();
});

list.addEventListener('dragend', () => {
  dragged?.classList.remove('dragging');
  dragged = null;
  clearDropMarks();
});

/** Show the fields of the question's chosen kind, hide the others (their values stay), and name the kind. */
function showKind(fieldset) {
  const select = fieldset.querySelector('select[name$="-kind"]');
  const kind = select.value;
  for (const part of fieldset.querySelectorAll('[data-kinds]')) {
    part.hidden = !part.dataset.kinds.split(' ').includes(kind);
  }
  for (const hint of fieldset.querySelectorAll(`.hint[data-hint-${kind}]`)) {
    hint.textContent = hint.getAttribute(`data-hint-${kind}`);
  }
  const name = select.selectedOptions[0].textContent;
  fieldset.querySelector('[data-kind-name]').textContent = name;
  return name;
}

function changeKind(index) {
  const name = showKind(questions()[index]);
  announce(`Question ${index + 1} is now a ${name} question.`);
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function warning(text) {
  const paragraph = element('p', undefined, 'warning');
  paragraph.append(element('strong', 'Warning:'), ` ${text}.`);
  return paragraph;
}

function showPreview(container, numbers) {
  const terms = element('dl', undefined, 'preview-numbers');
  for (const [term, text] of numbers.terms) terms.append(element('dt', term), element('dd', text));
  container.replaceChildren(terms, ...numbers.warnings.map(warning));
  delete container.dataset.stale;
}

/** Keep each question's last preview, marked as out of date for ``reason``; return whether any was kept. */
function markStale(reason) {
  let kept = false;
  for (const container of list.querySelectorAll('.question-preview')) {
    container.querySelector(':scope > .stale-note')?.remove();
    if (container.querySelector('.preview-numbers') === null) continue;
    const note = element('p', undefined, 'stale-note');
    note.append(element('strong', 'Out of date:'), ` ${reason}`);
    container.prepend(note);
    container.dataset.stale = 'yes';
    kept = true;
  }
  return kept;
}

function showSummary(lines, warnings = []) {
  summary.replaceChildren(...lines.map((line) => element('p', line)), ...warnings.map(warning));
}

/** Offer the server's list of questions in a select (unless it already holds them), and select the chosen one. */
function offerChoices(select, choices, chosen) {
  const current = [...select.options].map((option) => [option.value, option.textContent]);
  if (JSON.stringify(current) !== JSON.stringify(choices)) {
    select.replaceChildren(...choices.map(([value, label]) => {
      const option = element('option', label);
      option.value = value;
      return option;
    }));
  }
  if (chosen !== null) select.value = chosen;
}

/** Offer the server's list of questions in both selects of the crosstab pair, and select the pair it planned. */
function showPairChoices(choices, chosen) {
  pairSelects.forEach((select, index) => offerChoices(select, choices, chosen[index]));
}

/** Show the server's power sentence, and offer its yes/no questions. */
function showPower(power) {
  offerChoices(powerSelect, power.choices, power.question);
  powerPreview.replaceChildren(...power.lines.map((line) => element('p', line)));
}

function showCrosstab(crosstab) {
  showPairChoices(crosstab.choices, [crosstab.a, crosstab.b]);
  crosstabPreview.replaceChildren(...crosstab.lines.map((line) => element('p', line)),
    ...(crosstab.warning ? [warning(crosstab.warning)] : []));
}

/** Show the server's errors beside their fields, except on empty fields the researcher has not reached yet. */
function showErrors(errors) {
  let shown = 0;
  for (const holder of form.querySelectorAll('.field-error[id$="-error"]')) {
    const name = holder.id.slice(0, -'-error'.length);
    const control = document.getElementById(name);
    const messages = errors[name] || [];
    const pending = control !== null && 'value' in control && control.type !== 'hidden'
      && control.value.trim() === '' && control.dataset.touched !== 'yes';
    const show = messages.length > 0 && !pending;
    holder.textContent = show ? messages.join(' ') : '';
    if (control !== null && control.tagName !== 'FIELDSET' && control.tagName !== 'DIV') {
      if (show) control.setAttribute('aria-invalid', 'true');
      else control.removeAttribute('aria-invalid');
    }
    if (show) shown += 1;
  }
  return shown;
}

let timer = null;
let sequence = 0;

async function refresh() {
  sequence += 1;
  const mine = sequence;
  let data;
  try {
    const response = await fetch(form.dataset.previewUrl, {
      method: 'POST', body: new URLSearchParams(new FormData(form)), credentials: 'same-origin',
      headers: { Accept: 'application/json' },
    });
    data = await response.json();
    if (!response.ok) throw new Error(data.error || `status ${response.status}`);
  } catch (error) {
    if (mine === sequence) {
      const reason = `the preview could not be updated (${error.message}).`;
      markStale(reason);
      showSummary([reason[0].toUpperCase() + reason.slice(1)]);
    }
    return;
  }
  if (mine !== sequence) return;
  const shown = showErrors(data.errors);
  if (data.questions && data.questions.length === questions().length) {
    questions().forEach((fieldset, index) => {
      showPreview(document.getElementById(`questions-${index}-preview`), data.questions[index]);
    });
    showSummary(data.summary.lines, data.summary.warnings);
    if (data.crosstab) showCrosstab(data.crosstab);
    if (data.power) showPower(data.power);
  } else {
    const todo = shown > 0 ? `fix the ${shown} marked field${shown === 1 ? '' : 's'}` : 'fill in the empty fields';
    const kept = markStale(`${todo} to update this preview.`);
    showSummary([kept ? `The preview below is out of date: ${todo} to update it.`
      : `${todo[0].toUpperCase()}${todo.slice(1)} to see the preview.`]);
    crosstabPreview.replaceChildren(element('p', `${todo[0].toUpperCase()}${todo.slice(1)} to see the crosstab precision.`));
    powerPreview.replaceChildren(element('p', `${todo[0].toUpperCase()}${todo.slice(1)} to see the power.`));
  }
}

function schedule() {
  sequence += 1; // an answer already on its way describes an older form: drop it
  window.clearTimeout(timer);
  timer = window.setTimeout(refresh, DEBOUNCE_MS);
}

form.addEventListener('click', (event) => {
  const button = event.target.closest('button[name="action"]');
  const match = button && ACTION.exec(button.value);
  if (!match) return;
  event.preventDefault();
  const [, verb, argument] = match;
  if (verb === 'add') addQuestion(argument);
  else if (verb === 'kind') changeKind(Number(argument));
  else if (verb === 'remove') removeQuestion(Number(argument));
  else moveQuestion(Number(argument), verb === 'up' ? -1 : 1);
  schedule();
});

/** Flag a translation field of a text as missing while it is blank (the server's note, kept in data-missing). */
function flagMissing(control) {
  const note = document.getElementById(`${control.id}-missing`);
  if (note !== null && note.classList.contains('translation-missing')) {
    note.textContent = control.value.trim() ? '' : note.dataset.missing || '';
  }
}

form.addEventListener('input', (event) => {
  event.target.dataset.touched = 'yes';
  flagMissing(event.target);
  schedule();
});
form.addEventListener('change', (event) => {
  const fieldset = event.target.closest('fieldset.question');
  if (fieldset !== null && event.target.name === `${fieldset.id}-kind`) changeKind(Number(fieldset.dataset.index));
  schedule();
});

// The number of questions per respondent matters only when questions are sampled.
const allocation = document.getElementById('allocation');
const sampleField = document.getElementById('sample').closest('.form-field');
function showSampleField() {
  sampleField.hidden = allocation.value !== 'sample';
}
allocation.addEventListener('change', showSampleField);
showSampleField();

for (const control of form.querySelectorAll('[aria-invalid="true"]')) control.dataset.touched = 'yes';
form.dataset.enhanced = 'yes';
refresh();
