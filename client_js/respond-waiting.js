/**
 * The "waiting to be sent" slot of the interviewer's bar in handover mode (templates/_handover_bar.html): a leaf
 * module, so that a queue of sends made offline can fill it from any module without an import cycle. On a page
 * without the slot (the ordinary respondent page) it does nothing.
 */

/** Show `n` sends waiting on this device on the interviewer's bar (a whole number, 0 or more). */
export function setWaiting(n) {
  const slot = document.getElementById('handover-waiting');
  if (slot) slot.textContent = String(Math.max(0, Math.trunc(Number(n) || 0)));
}
