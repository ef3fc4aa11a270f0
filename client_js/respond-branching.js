/**
 * Display logic without leakage on the respondent page (respond.js; survey/core/branching.py).
 *
 * A design question with `show_if: {question, values}` applies only when the true answer to that
 * earlier question is one of `values` (1/0 for yes/no, an option index for choice). Whether it
 * applies depends on a true answer, so it must not change what is sent: a question that does not
 * apply is hidden, yet its report is still made, from its declared `not_applicable` value (the
 * "Does not apply" option, or a number's declared value) by the same mechanism at the same ε′.
 * Every respondent so sends a report for every asked question, and the bodies of both branches
 * have the same keys and shape. The page never offers "Does not apply" as an answer.
 *
 * Under sample allocation an earlier question that decides whether an asked one applies is
 * shown even when it was not drawn: its answer stays on this device and nothing is sent for it.
 */

import { clearInvalid, markInvalid, readAnswer } from './respond-fields.js';

/** Return whether a design question has display logic. */
export function isBranched(question) {
  return Boolean(question && question.show_if);
}

/** Return the true value a branched question's report is made from when it does not apply. */
export function notApplicableValue(question) {
  if (question.kind === 'multi') {
    return question.options.map((_, index) => (index === question.not_applicable ? 1 : 0));
  }
  return question.not_applicable;
}

/** Return whether a question applies, given `valueOf(id)`: an earlier question's true value, or undefined. */
export function applies(question, valueOf) {
  if (!isBranched(question)) return true;
  const value = valueOf(question.show_if.question);
  return value !== undefined && question.show_if.values.includes(value);
}

/** Remove the "Does not apply" option of a branched choice or multi fieldset, and renumber the others' set size. */
function removeNotApplicableOption(question, fieldset) {
  if (question.kind !== 'choice' && question.kind !== 'multi') return;
  const input = fieldset.querySelector(`input[value="${question.not_applicable}"]:not([type="search"])`);
  input?.closest('.option')?.remove();
  fieldset.querySelectorAll('input[aria-setsize]').forEach((radio) => {
    radio.setAttribute('aria-setsize', String(question.options.length - 1));
  });
}

/** Add the note of an earlier question shown only to decide whether a drawn one applies. */
function addDecidingNote(fieldset) {
  const note = document.createElement('p');
  note.className = 'branch-note';
  note.textContent = 'This question decides whether a later question applies to you. Your answer to it stays '
    + 'on this device: nothing is sent for it.';
  fieldset.querySelector('legend').after(note);
}

/** The display logic of one page: which questions apply, and the true answer each report is made from. */
export class Branching {
  constructor(design, fieldsets, asked) {
    this.questions = design.questions;
    this.byId = new Map(design.questions.map((question) => [question.id, question]));
    this.fieldsets = fieldsets;
    this.askedIds = new Set(asked.map((question) => question.id));
    this.deciding = this.decidingIds();
    this.shown = new Map();
    this.questions.filter(isBranched).forEach((question) => {
      removeNotApplicableOption(question, fieldsets.get(question.id));
    });
    this.deciding.forEach((id) => addDecidingNote(fieldsets.get(id)));
    this.status = null;
    if (!this.questions.some(isBranched)) return;
    this.status = document.createElement('p');
    this.status.className = 'visually-hidden';
    this.status.setAttribute('role', 'status');
    this.status.id = 'branching-status';
    fieldsets.values().next().value?.closest('form')?.prepend(this.status);
  }

  /** Tell a screen reader which questions appeared or were skipped after an answer. */
  announce(changed) {
    const shown = changed.filter((question) => this.shown.get(question.id)).map((question) => `“${question.text}”`);
    const skipped = changed.filter((question) => !this.shown.get(question.id)).map((question) => `“${question.text}”`);
    const parts = [];
    if (shown.length) parts.push(`Now asked: ${shown.join(', ')}.`);
    if (skipped.length) parts.push(`No longer asked (a randomized report is still sent): ${skipped.join(', ')}.`);
    this.status.textContent = parts.join(' ');
  }

  /** Return the ids of questions not drawn that an asked question's rule (or a chain of them) depends on. */
  decidingIds() {
    const needed = new Set();
    const visit = (question) => {
      if (!isBranched(question)) return;
      const parent = this.byId.get(question.show_if.question);
      if (!this.askedIds.has(parent.id)) needed.add(parent.id);
      visit(parent);
    };
    this.questions.filter((question) => this.askedIds.has(question.id)).forEach(visit);
    return needed;
  }

  /** Return whether a question applies to this respondent, from the answers given so far. */
  applies(question) {
    return applies(question, (id) => {
      const parent = this.byId.get(id);
      const answer = this.read(parent, this.fieldsets.get(id));
      return 'message' in answer ? undefined : answer.value;
    });
  }

  /** Return {value} or {message} for a question's true answer: its declared value when it does not apply. */
  read(question, fieldset) {
    if (!isBranched(question)) return readAnswer(question, fieldset);
    if (!this.applies(question)) return { value: notApplicableValue(question) };
    const answer = readAnswer(question, fieldset);
    // The removed "Does not apply" box is never ticked by someone it applies to.
    if (question.kind === 'multi' && 'value' in answer) {
      answer.value.splice(question.not_applicable, 0, 0);
    }
    return answer;
  }

  /** Mark a shown deciding question without an answer (under sample allocation); return their fieldsets. */
  unansweredDeciding() {
    const bad = [];
    this.deciding.forEach((id) => {
      const fieldset = this.fieldsets.get(id);
      if (fieldset.hidden) return;
      const answer = readAnswer(this.byId.get(id), fieldset);
      if ('message' in answer) {
        markInvalid(fieldset, answer.message);
        bad.push(fieldset);
      } else {
        clearInvalid(fieldset);
      }
    });
    return bad;
  }

  /** Show the questions that apply (and are asked or decide one), number them; return those whose state changed. */
  update() {
    const changed = [];
    let number = 0;
    for (const question of this.questions) {
      const fieldset = this.fieldsets.get(question.id);
      const wanted = this.askedIds.has(question.id) || this.deciding.has(question.id);
      const show = wanted && this.applies(question);
      if (this.shown.has(question.id) && this.shown.get(question.id) !== show) changed.push(question);
      this.shown.set(question.id, show);
      fieldset.hidden = !show;
      if (!show) continue;
      number += 1;
      const label = fieldset.querySelector('.question-number');
      if (label) label.textContent = `${number}.`;
    }
    if (changed.length && this.status) this.announce(changed);
    return changed;
  }
}
