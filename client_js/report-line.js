/**
 * The line under each question of the respondent page: the exact report that sending will send
 * for it, or that it sends nothing (issue 25).
 *
 * Every shown question carries one such line, in every state: answered (the report made for the
 * answer), a multi-select left blank (a legitimate answer, "none ticked", whose report is made when
 * the page loads and is sent like any other: skipping it would tell the server the answer was
 * blank), an answer changed after a send that may have arrived (the report kept from the earlier
 * answer), no answer yet to a question that needs one (sending waits, so nothing is sent), and a
 * question not asked of this respondent under sample allocation (nothing is sent for it). The
 * page sends exactly the reports these lines show; this module only words them.
 */

import { findMechanism } from './mechanisms/index.js';
import { _ } from './messages.js';

/** The words of a multi-select answer with no box ticked. */
export const NONE_TICKED = 'none ticked';
/** The words of a multi-select answer with no box ticked, in the page's language. */
const noneTickedWords = () => _('none ticked');

/** Return the plain words of a report: what the researcher will see for this question. */
export function describeReport(question, report) {
  // Under a series' two layers a number's report is a level of its per-wave layer: of that many levels.
  const shown = question.wave?.bins ? { ...question, bins: question.wave.bins } : question;
  return findMechanism(question.kind, question.mechanism)?.describe(shown, report) ?? JSON.stringify(report);
}

/** Return whether a true answer is a multi-select's blank: no box ticked. */
export function isNoneTicked(question, value) {
  return question.kind === 'multi' && Array.isArray(value) && value.every((bit) => bit === 0);
}

/**
 * Return the line of a question whose report will be sent.
 *
 * `noneTicked`: the report was made for a multi-select left blank; `earlier`: the answer changed
 * after a send that may have arrived, and the report of the earlier answer is kept.
 */
export function reportLine(question, report, { noneTicked = false, earlier = false } = {}) {
  const words = describeReport(question, report);
  if (earlier) {
    return _('We will send (after randomizing), the report kept from your earlier answer: %(report)s — this may '
      + 'not be your answer.', { report: words });
  }
  if (noneTicked) {
    return _('We will send (after randomizing) for your answer “%(none)s”: %(report)s — this may not be your '
      + 'answer.', { none: noneTickedWords(), report: words });
  }
  return _('We will send (after randomizing): %(report)s — this may not be your answer.', { report: words });
}

/** Return the line of a shown question with no usable answer yet: sending waits for one, so nothing is sent. */
export function waitingLine(question) {
  if (question.kind === 'number') {
    return _('No report yet, and nothing is sent until there is one: enter a whole number from %(min)s to %(max)s '
      + 'and the randomized report that will be sent shows here first.', { min: question.min, max: question.max });
  }
  return _('No report yet, and nothing is sent until there is one: choose an answer and the randomized report '
    + 'that will be sent shows here first.');
}

/** Return the line of a question not asked of this respondent (sample allocation). */
export function notAskedLine() {
  return _('Not asked of you: nothing is sent for this question.');
}
