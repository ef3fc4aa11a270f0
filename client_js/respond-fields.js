/**
 * The answer fields of the respondent page (respond.js): one fieldset per question, whose inputs
 * carry no name attribute (a plain form submission cannot send them). Reads a true answer, marks
 * a field invalid, and makes radios and "Prefer not to say" behave.
 */

import { _ } from './messages.js';

const ARROW_STEPS = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 };

/** Make the unnamed radios of one group mutually exclusive, with one tab stop and arrow keys. */
export function setUpRadioGroup(group) {
  const radios = [...group.querySelectorAll('input[type="radio"]')];
  const updateTabStops = () => {
    const current = radios.find((radio) => radio.checked) ?? radios[0];
    radios.forEach((radio) => { radio.tabIndex = radio === current ? 0 : -1; });
  };
  const select = (chosen) => {
    radios.forEach((radio) => { radio.checked = radio === chosen; });
    updateTabStops();
  };
  radios.forEach((radio) => {
    radio.addEventListener('change', () => { if (radio.checked) select(radio); });
    radio.addEventListener('keydown', (event) => {
      const step = ARROW_STEPS[event.key];
      if (step === undefined) return;
      event.preventDefault();
      // Arrows move among the options the filter shows (all of them when there is none).
      const shown = radios.filter((other) => other === radio || !other.closest('.option')?.hidden);
      const at = shown.indexOf(radio);
      const next = shown[(at + step + shown.length) % shown.length];
      select(next);
      next.focus();
      next.dispatchEvent(new Event('change', { bubbles: true }));
    });
  });
  updateTabStops();
}

/** Return {value} or {message} for one question's true answer, read from its fieldset. */
export function readAnswer(question, fieldset) {
  if (question.kind === 'yes_no' || question.kind === 'choice') {
    const checked = fieldset.querySelector('input[type="radio"]:checked');
    if (!checked) return { message: _('Please choose an answer.') };
    return { value: Number(checked.value) };
  }
  if (question.kind === 'multi') {
    const boxes = [...fieldset.querySelectorAll('input[type="checkbox"]')];
    return { value: boxes.map((box) => (box.checked ? 1 : 0)) };
  }
  if (question.kind === 'number') {
    const input = fieldset.querySelector('input[type="number"]');
    const range = { min: question.min, max: question.max };
    const raw = input.value.trim();
    if (input.validity.badInput) {
      return { message: _('Please enter a number using digits only, from %(min)s to %(max)s.', range) };
    }
    if (raw === '') return { message: _('Please enter a whole number from %(min)s to %(max)s.', range) };
    if (!/^[+-]?\d+$/.test(raw)) {
      return { message: _('Please enter a whole number without decimals, from %(min)s to %(max)s.', range) };
    }
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < question.min || value > question.max) {
      return { message: _('Please enter a whole number from %(min)s to %(max)s; %(raw)s is outside that range.',
        { ...range, raw }) };
    }
    return { value };
  }
  return { message: _('This question has an unknown kind %(kind)s.', { kind: String(question.kind) }) };
}

/** Return the answer inputs of a fieldset (not the option filter's search box). */
function answerInputs(fieldset) {
  return [...fieldset.querySelectorAll('input:not([type="search"])')];
}

/** Make "Prefer not to say" (a multi question's last option when it has decline) exclusive of the others. */
export function setUpDecline(fieldset) {
  const boxes = [...fieldset.querySelectorAll('input[type="checkbox"]')];
  const decline = boxes[boxes.length - 1];
  boxes.forEach((box) => {
    box.addEventListener('change', () => {
      if (!box.checked) return;
      if (box === decline) boxes.forEach((other) => { if (other !== decline) other.checked = false; });
      else decline.checked = false;
    });
  });
}

/** Show `message` under a fieldset and mark its inputs invalid. */
export function markInvalid(fieldset, message) {
  fieldset.classList.add('has-error');
  fieldset.querySelector('.field-error').textContent = message;
  answerInputs(fieldset).forEach((input) => input.setAttribute('aria-invalid', 'true'));
}

/** Remove a fieldset's message and invalid marks. */
export function clearInvalid(fieldset) {
  fieldset.classList.remove('has-error');
  fieldset.querySelector('.field-error').textContent = '';
  answerInputs(fieldset).forEach((input) => input.removeAttribute('aria-invalid'));
}

/** Empty every answer of the fieldsets. */
export function clearAnswers(fieldsets) {
  fieldsets.forEach((fieldset) => {
    answerInputs(fieldset).forEach((input) => {
      if (input.type === 'radio' || input.type === 'checkbox') input.checked = false;
      else input.value = '';
    });
  });
}

/** Show the fieldsets of the asked questions, numbered 1..m, and hide every other one. */
export function showOnly(asked, fieldsets) {
  const shown = new Set(asked.map((question) => question.id));
  let number = 0;
  fieldsets.forEach((fieldset, id) => {
    fieldset.hidden = !shown.has(id);
    if (fieldset.hidden) return;
    number += 1;
    const label = fieldset.querySelector('.question-number');
    if (label) label.textContent = `${number}.`;
  });
}
