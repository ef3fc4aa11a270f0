/**
 * Respondent form of ldp-survey: read the true answers, randomize them on this device,
 * and send only the randomized reports.
 *
 * True-answer inputs carry no name attribute, so a plain form submission cannot send
 * them (DESIGN.md §1, invariant 1); this module is the only way answers leave the page,
 * as one JSON request to the form's same-origin data-action URL, sent a fixed delay after
 * the respondent presses send so that the request's timing says nothing about the report.
 */

import { randomizeQuestion } from './mechanisms.js';
import { addOptionFilter } from './option-filter.js';

const ANSWERED_PREFIX = 'ldp-survey:answered:';
// How long after the press of send the request leaves, whatever the randomization took:
// its running time can depend on the report, a timing channel (Haeberlen, Pierce & Narayan 2011).
const SEND_DELAY_MS = 400;
const ARROW_STEPS = { ArrowDown: 1, ArrowRight: 1, ArrowUp: -1, ArrowLeft: -1 };

function rememberAnswered(slug) {
  try {
    window.localStorage.setItem(ANSWERED_PREFIX + slug, 'yes');
  } catch {
    // Storage can be unavailable (private browsing); the notice is only a courtesy.
  }
}

function wasAnswered(slug) {
  try {
    return window.localStorage.getItem(ANSWERED_PREFIX + slug) !== null;
  } catch {
    return false;
  }
}

/** Make the unnamed radios of one group mutually exclusive, with one tab stop and arrow keys. */
function setUpRadioGroup(group) {
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
function readAnswer(question, fieldset) {
  if (question.kind === 'yes_no' || question.kind === 'choice') {
    const checked = fieldset.querySelector('input[type="radio"]:checked');
    if (!checked) return { message: 'Please choose an answer.' };
    return { value: Number(checked.value) };
  }
  if (question.kind === 'multi') {
    const boxes = [...fieldset.querySelectorAll('input[type="checkbox"]')];
    return { value: boxes.map((box) => (box.checked ? 1 : 0)) };
  }
  if (question.kind === 'number') {
    const input = fieldset.querySelector('input[type="number"]');
    const range = `from ${question.min} to ${question.max}`;
    const raw = input.value.trim();
    if (input.validity.badInput) return { message: `Please enter a number using digits only, ${range}.` };
    if (raw === '') return { message: `Please enter a whole number ${range}.` };
    if (!/^[+-]?\d+$/.test(raw)) return { message: `Please enter a whole number without decimals, ${range}.` };
    const value = Number(raw);
    if (!Number.isSafeInteger(value) || value < question.min || value > question.max) {
      return { message: `Please enter a whole number ${range}; ${raw} is outside that range.` };
    }
    return { value };
  }
  return { message: `This question has an unknown kind ${String(question.kind)}.` };
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

function answerInputs(fieldset) {
  return [...fieldset.querySelectorAll('input:not([type="search"])')];
}

/** Make "Prefer not to say" (a multi question's last option when it has decline) exclusive of the others. */
function setUpDecline(fieldset) {
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

function markInvalid(fieldset, message) {
  fieldset.classList.add('has-error');
  fieldset.querySelector('.field-error').textContent = message;
  answerInputs(fieldset).forEach((input) => input.setAttribute('aria-invalid', 'true'));
}

function clearInvalid(fieldset) {
  fieldset.classList.remove('has-error');
  fieldset.querySelector('.field-error').textContent = '';
  answerInputs(fieldset).forEach((input) => input.removeAttribute('aria-invalid'));
}

function clearAnswers(fieldsets) {
  fieldsets.forEach((fieldset) => {
    answerInputs(fieldset).forEach((input) => {
      if (input.type === 'radio' || input.type === 'checkbox') input.checked = false;
      else input.value = '';
    });
  });
}

async function serverMessage(response) {
  const fallback = `The server could not accept your answers (HTTP ${response.status}). Please try again.`;
  try {
    const body = await response.json();
    if (body && typeof body.error === 'string' && body.error) return { message: body.error, field: body.field };
  } catch {
    return { message: fallback };
  }
  return { message: fallback };
}

function setUpSurvey(form, design) {
  const slug = design.slug;
  const errorRegion = document.getElementById('form-error');
  const thanks = document.getElementById('thanks');
  const notice = document.getElementById('already-answered');
  const button = form.querySelector('button[type="submit"]');
  const buttonLabel = button.textContent;
  const fieldsets = new Map(
    [...form.querySelectorAll('fieldset[data-question]')].map((fs) => [fs.dataset.question, fs]));
  const action = new URL(form.dataset.action, window.location.href);
  if (action.origin !== window.location.origin) {
    throw new Error(`the form would send to another origin (${action.origin}); refusing`);
  }
  for (const question of design.questions) {
    if (!fieldsets.has(question.id)) throw new Error(`the page has no field for question ${question.id}`);
  }

  if (wasAnswered(slug)) {
    form.hidden = true;
    notice.hidden = false;
    return;
  }

  form.querySelectorAll('[data-radio-group]').forEach(setUpRadioGroup);
  fieldsets.forEach((fieldset) => addOptionFilter(fieldset));
  design.questions
    .filter((question) => question.kind === 'multi' && question.decline)
    .forEach((question) => setUpDecline(fieldsets.get(question.id)));
  fieldsets.forEach((fieldset) => {
    fieldset.addEventListener('input', () => clearInvalid(fieldset));
    fieldset.addEventListener('change', () => clearInvalid(fieldset));
  });

  // A report already sent once may be resent unchanged for free (post-processing), but
  // randomizing the same answer again would spend its budget again: keep each question's
  // report while its true answer stays the same, until the server confirms the response.
  const reports = new Map();
  let sending = false;

  const showError = (message) => { errorRegion.textContent = message; };
  const setSending = (value) => {
    sending = value;
    button.disabled = value;
    button.textContent = value ? 'Sending…' : buttonLabel;
    form.setAttribute('aria-busy', value ? 'true' : 'false');
  };

  const validate = () => {
    const values = {};
    const bad = [];
    for (const question of design.questions) {
      const fieldset = fieldsets.get(question.id);
      const result = readAnswer(question, fieldset);
      if ('message' in result) {
        markInvalid(fieldset, result.message);
        bad.push(fieldset);
      } else {
        clearInvalid(fieldset);
        values[question.id] = result.value;
      }
    }
    return { values, bad };
  };

  const reportBody = (values) => {
    const answers = {};
    for (const question of design.questions) {
      const key = JSON.stringify(values[question.id]);
      const kept = reports.get(question.id);
      if (kept === undefined || kept.key !== key) {
        reports.set(question.id, { key, report: randomizeQuestion(question, values[question.id]) });
      }
      answers[question.id] = reports.get(question.id).report;
    }
    return JSON.stringify({ design: design.hash, answers });
  };

  const succeed = () => {
    reports.clear();
    clearAnswers(fieldsets);
    rememberAnswered(slug);
    errorRegion.textContent = '';
    form.hidden = true;
    thanks.hidden = false;
    thanks.focus();
  };

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (sending) return;
    const pressedAt = performance.now();
    showError('');
    const { values, bad } = validate();
    if (bad.length > 0) {
      const count = bad.length === 1 ? 'One question needs' : `${bad.length} questions need`;
      showError(`${count} your attention before sending; see the message under each.`);
      bad[0].focus();
      return;
    }
    setSending(true);
    let body;
    try {
      body = reportBody(values);
    } catch (error) {
      setSending(false);
      showError(`Your answers could not be randomized: ${error.message}`);
      return;
    }
    await waitUntil(pressedAt + SEND_DELAY_MS);
    let response;
    try {
      response = await fetch(action, {
        method: 'POST',
        credentials: 'same-origin',
        headers: {
          'Content-Type': 'application/json',
          'X-CSRFToken': document.querySelector('meta[name="csrf-token"]')?.content ?? '',
        },
        body,
      });
    } catch {
      setSending(false);
      showError('Your answers could not be sent: the server did not respond. '
        + 'Your answers are still here; check your connection and try again.');
      button.focus();
      return;
    }
    if (response.status === 201) {
      setSending(false);
      succeed();
      return;
    }
    const { message, field } = await serverMessage(response);
    setSending(false);
    showError(message);
    const fieldset = typeof field === 'string' ? fieldsets.get(field) : undefined;
    if (fieldset) {
      markInvalid(fieldset, message);
      fieldset.focus();
    } else {
      button.focus();
    }
  });

  button.disabled = false;
}

function start() {
  const form = document.querySelector('form[data-action]');
  if (!form) return;
  const errorRegion = document.getElementById('form-error');
  try {
    const design = JSON.parse(document.getElementById('design').textContent);
    setUpSurvey(form, design);
  } catch (error) {
    if (errorRegion) errorRegion.textContent = `This survey cannot be answered: ${error.message}`;
  }
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
