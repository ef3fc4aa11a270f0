"""Send a survey's e-mailed invitations or reminders: one message per address, each logged as soon as it is sent.

Shared by the dashboard and ``ldp-survey mail``. Every address's outcome is written to the
store right after its message, so a run cut short (a crash, a lost connection) loses nothing:
run it again and it goes on with the addresses not yet done; a failed address keeps its error
in the send log and is tried again. A dropped connection is opened again once; a second loss
in a row stops the run with a MailError, and what was done is kept.

An address's link is rebuilt from the secret key (``secret.link_tokens``); when the key has
changed since the address was added, its link cannot be rebuilt: nothing is sent to it, and
the run counts it in ``MailRun.stale`` so the caller says why (``stale_words``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.invitations import invitation_links, invitation_message
from .mail import MailConfig, MailError, Mailer


def stale_words(count: int, kind: str) -> str:
    """Say why ``count`` addresses were sent no ``kind``: the secret key changed since their links were made."""
    many = count != 1
    words = (f"{count} address{'es were' if many else ' was'} sent no {kind}: the secret key (LDP_SURVEY_SECRET_KEY, "
             f"or the key file beside the database) has changed since {'they were' if many else 'it was'} added, "
             f"so {'their links' if many else 'its link'} cannot be rebuilt")
    if kind == "reminder":
        words += ("; the invitations themselves still work for anyone who kept the first e-mail, and only the old "
                  "key can send those links again")
    else:
        words += "; only the old key can send them"
    return words


class NotOpen(MailError):
    """The survey is a draft or closed: its links would not work, so nothing is sent."""


@dataclass
class MailRun:
    """What a run did: how many messages were sent and which addresses failed, with why."""

    kind: str
    sent: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    stale: int = 0


def send_mail(store, config: MailConfig, slug: str, base: str, kind: str, token_for: Callable[[str, str], str], *,
              template: tuple[str, str] | None = None,
              progress: Callable[[int, int], None] | None = None, limit: int | None = None,
              seconds: float | None = None) -> MailRun:
    """Send ``kind`` ("invitation" or "reminder") to every address due one (``Store.addresses_to_mail``).

    ``base`` is the public address of the site; ``token_for`` rebuilds each link's token
    (``secret.link_tokens``), and an address whose link it cannot rebuild is sent nothing
    (counted in ``stale``); ``progress(done, total)`` is called after each
    address; ``limit`` sends to at most that many, and ``seconds`` starts no message after that
    long (the rest stay due, for the next run). Raises NotOpen (nothing sent)
    unless the survey is open, and MailError when the server cannot be reached at all or twice in a row.
    """
    title = store.get_design(slug)["title"]
    status = store.survey_status(slug)
    if status != "open":
        raise NotOpen(f"the survey is {'a draft' if status == 'draft' else 'closed'}: its links do not work now, so "
                      f"nothing was sent; {'publish' if status == 'draft' else 'reopen'} it first")
    due = store.addresses_to_mail(slug, kind, token_for)
    run = MailRun(kind, stale=sum(address["token"] is None for address in due))
    due = [address for address in due if address["token"] is not None][:limit]
    if not due:
        return run
    links = invitation_links(base, slug, [address["token"] for address in due])
    deadline = None if seconds is None else time.monotonic() + seconds
    with Mailer(config) as mailer:
        for done, (address, link) in enumerate(zip(due, links), 1):
            if deadline is not None and time.monotonic() > deadline:
                break
            subject, body = invitation_message(kind, title, link, template)
            error = _send(mailer, address["email"], subject, body)
            store.record_mail(slug, address["id"], kind, error)
            if error is None:
                run.sent += 1
            else:
                run.failed.append((address["email"], error))
            if progress is not None:
                progress(done, len(due))
    return run


def _send(mailer: Mailer, to: str, subject: str, body: str) -> str | None:
    """Send one message, opening the connection again once if it was lost; return None or the error of this address."""
    try:
        mailer.send(to, subject, body)
        return None
    except MailError as exc:
        if mailer.connected:
            return str(exc)  # the server refused this message; the connection goes on
    mailer.connect()  # raises MailError when the server is gone: the run stops, what was done is kept
    try:
        mailer.send(to, subject, body)
        return None
    except MailError as exc:
        return str(exc)
