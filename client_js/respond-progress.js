/**
 * The progress line of a long survey on the respondent page (respond.js): "Question 3 of 12 · 2
 * answered" and a progress bar of the answered share, kept current as the respondent moves through
 * the questions and answers them. The line is a polite status region, so a screen reader says it
 * when it changes without interrupting. Only shown questions count (a sampled or hidden question does
 * not), and only with PROGRESS_FROM or more of them.
 */

// A survey with fewer shown questions than this needs no progress line.
export const PROGRESS_FROM = 4;

/** Return whether a question's fieldset holds an answer (a ticked option or a typed number). */
export function isAnswered(fieldset) {
  return [...fieldset.querySelectorAll('input')].some((input) => (
    input.type === 'radio' || input.type === 'checkbox' ? input.checked : input.type === 'number' && input.value !== ''));
}

/** Return the progress sentence: the current question's place among the shown ones, and how many are answered. */
export function progressText(place, count, answered) {
  return `Question ${place} of ${count} · ${answered} answered`;
}

/** Keep the page's progress line current for the questions' `fieldsets` (a Map of id to fieldset); return its update. */
export function setUpProgress(form, fieldsets) {
  const box = document.getElementById('progress');
  if (!box) return () => {};
  const line = document.getElementById('progress-text');
  const bar = document.getElementById('progress-bar');
  let current = null;
  const update = () => {
    const shown = [...fieldsets.values()].filter((fieldset) => !fieldset.hidden);
    box.hidden = shown.length < PROGRESS_FROM;
    if (box.hidden) return;
    const answered = shown.filter(isAnswered).length;
    const text = progressText(Math.max(shown.indexOf(current), 0) + 1, shown.length, answered);
    // Only a change is written, so the status region is said only when it says something new.
    if (line.textContent !== text) line.textContent = text;
    bar.max = shown.length;
    bar.value = answered;
    bar.textContent = `${answered} of ${shown.length}`;
  };
  const moved = (event) => {
    const fieldset = event.target.closest?.('fieldset[data-question]');
    if (fieldset) current = fieldset;
    update();
  };
  for (const type of ['focusin', 'input', 'change']) form.addEventListener(type, moved);
  update();
  return update;
}
