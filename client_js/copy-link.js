// The dashboard's "Copy link" buttons: copy the link in the field a button names, and say so in
// its status line (a polite live region, so a screen reader announces it). Where the clipboard
// API is missing or refused (an insecure origin, a denied permission), the link is selected
// instead and the status says how to copy it by hand. Without JavaScript the buttons stay
// hidden and the read-only field can be selected and copied as it is.

const COPIED = 'Copied';
const BY_HAND = 'Selected: press Ctrl+C (⌘C on a Mac) to copy the link';

/** Put `text` on the clipboard; resolve true when it is there, false when the browser cannot. */
export async function writeClipboard(text) {
  if (!window.isSecureContext || !navigator.clipboard || !navigator.clipboard.writeText) return false;
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** Copy the link of the field `button` names (data-copy-target) and announce it (data-copy-status). */
async function copyFrom(button) {
  const field = document.getElementById(button.dataset.copyTarget);
  const status = document.getElementById(button.dataset.copyStatus);
  status.textContent = '';
  if (await writeClipboard(field.value)) {
    status.textContent = COPIED;
    return;
  }
  field.focus();
  field.select();
  status.textContent = BY_HAND;
}

for (const button of document.querySelectorAll('button[data-copy-target]')) {
  button.hidden = false;
  button.addEventListener('click', () => copyFrom(button));
}
