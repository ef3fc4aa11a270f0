/**
 * The respondent's words for each answer of the server to a send: never the server's own
 * (developer) text, and the advice to press send again only where another press can work.
 *
 * outcome(status, field) returns {outcome, message, final}: 'stored', 'earlier' (a repeat of
 * a stored send), 'lost' (nothing or maybe something stored; the very same send can be tried
 * again) or 'refused' (nothing stored; sending the same again would be refused again). A
 * final refusal ends the page: the form cannot be sent from it at all.
 */

import { _ } from './messages.js';

// Each message is a function: it is worded in the page's language when it is shown (messages.js).
export const LOST_MESSAGE = () => _('Your answers could not be sent, or the server\'s reply was lost. Your answers '
  + 'are still here; check your connection and press send again: it is safe, your answers will be counted once.');
export const BUSY_MESSAGE = () => _('Too many answers were sent from your network in the last minute, so nothing '
  + 'was stored. Please wait a minute and press send again: your answers will be counted once.');
export const CLOSED_MESSAGE = () => _('This survey has closed, so your answers were not accepted and nothing about '
  + 'them was stored. Your true answers never left this device. Thank you for your time.');
export const INVITE_USED_MESSAGE = () => _('This invitation link has already been used to answer this survey (each '
  + 'link can be used once), so your answers were not accepted and nothing about them was stored. If you did not '
  + 'answer it yourself, ask the person who sent it for a new link.');
export const INVITE_INVALID_MESSAGE = () => _('This invitation link is not valid for this survey, so your answers '
  + 'were not accepted and nothing about them was stored. Please open the survey from the whole link you were sent.');
export const CHANGED_MESSAGE = () => _('This survey was changed while this page was open, so your answers were not '
  + 'accepted and nothing about them was stored. Please reload the page to answer the current version.');
export const FOREIGN_MESSAGE = () => _('Answers can be sent only from the survey\'s own page, so your answers were '
  + 'not accepted and nothing about them was stored.');
export const QUESTION_MESSAGE = () => _('The report for this question was not accepted, and nothing was stored. '
  + 'Please reload the page and answer again.');

/** Return the message of a refusal this page cannot fix, for any other 4xx status. */
function otherRefusal(status) {
  return _('The server did not accept your answers (error %(status)s), so your answers were not accepted and '
    + 'nothing about them was stored. Please reload the page and answer again.', { status });
}

/** Return {outcome, message, final} for the HTTP status of a send and the `field` of its JSON error body. */
export function outcome(status, field, questionIds = new Set()) {
  if (status === 201) return { outcome: 'stored', final: false };
  if (status === 409 && field === 'submission') return { outcome: 'earlier', final: false };
  // A 429 stored nothing and a server error may or may not have stored it: the very same send
  // (same id) can be tried again safely.
  if (status === 429) return { outcome: 'lost', message: BUSY_MESSAGE(), final: false };
  if (status >= 500) return { outcome: 'lost', message: LOST_MESSAGE(), final: false };
  if (status === 410) return { outcome: 'refused', message: CLOSED_MESSAGE(), final: true };
  if (field === 'invite') {
    const message = status === 409 ? INVITE_USED_MESSAGE() : INVITE_INVALID_MESSAGE();
    return { outcome: 'refused', message, final: true };
  }
  if (status === 409) return { outcome: 'refused', message: CHANGED_MESSAGE(), final: true };
  if (status === 403) return { outcome: 'refused', message: FOREIGN_MESSAGE(), final: true };
  if (status === 400 && questionIds.has(field)) return { outcome: 'refused', message: QUESTION_MESSAGE(), final: false };
  return { outcome: 'refused', message: otherRefusal(status), final: true };
}
