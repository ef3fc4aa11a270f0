"""Turn invitation tokens into the single-use links given to invitees, one per line or as CSV.

Standard library only: the CLI and the dashboard both print what this returns.
"""

from __future__ import annotations

import csv
import io
from urllib.parse import parse_qs, quote, urlsplit


def check_base(base: str) -> str:
    """Return the public address without a trailing slash; raise ValueError unless it is an http(s) URL."""
    parts = urlsplit(base.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"the base address must be an http:// or https:// URL such as "
                         f"https://surveys.example.org, got {base!r}")
    return base.strip().rstrip("/")


def survey_link(base: str, slug: str) -> str:
    """Return ``<base>/s/<slug>``, the survey's own link."""
    return f"{check_base(base)}/s/{quote(slug)}"


def invitation_links(base: str, slug: str, tokens: list[str]) -> list[str]:
    """Return ``<base>/s/<slug>?invite=TOKEN`` for every token."""
    base = check_base(base)
    return [f"{base}/s/{quote(slug)}?invite={quote(token)}" for token in tokens]


def invite_token(link: str) -> str:
    """Return the token of an invitation link (its ``invite`` parameter), or the text itself if it is a bare token."""
    text = link.strip()
    values = parse_qs(urlsplit(text).query).get("invite")
    return values[0] if values else text


def links_csv(links: list[str]) -> str:
    """Return the links as CSV text with one column, ``link`` (a URL never starts a formula)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["link"])
    writer.writerows([link] for link in links)
    return out.getvalue()


# E-mailed invitations and reminders: what the message says, in plain text.
EMAIL_COLUMN = "email"
MAIL_KINDS = ("invitation", "reminder")
DEFAULT_TEMPLATES = {
    "invitation": ("Invitation: {title}",
                   "Hello,\n\nYou are invited to answer the survey \u201c{title}\u201d.\n\n"
                   "Your personal link (it works once):\n{link}\n\n"
                   "Your answers are randomized on your own device before they are sent: the survey's "
                   "researchers never see your true answers, and cannot tell which answers are yours.\n\n"
                   "Thank you.\n"),
    "reminder": ("Reminder: {title}",
                 "Hello,\n\nA reminder: you are invited to answer the survey \u201c{title}\u201d, and your "
                 "link has not been used yet.\n\nYour personal link (it works once):\n{link}\n\n"
                 "If you do not wish to take part, you can ignore this message.\n\nThank you.\n"),
}
_FIELDS = ("title", "link")


def parse_template(text: str) -> tuple[str, str]:
    """Return (subject, body) of a message template whose first line is ``Subject: ...``; raise ValueError if malformed.

    The subject and body may use ``{title}`` and ``{link}``; the body must contain ``{link}``.
    """
    first, _, body = text.replace("\r\n", "\n").partition("\n")
    if not first.lower().startswith("subject:"):
        raise ValueError("a message template starts with a line 'Subject: ...', then the body")
    subject, body = first[len("subject:"):].strip(), body.lstrip("\n")
    for part in (subject, body):
        fill_template(part, "title", "https://example.org/s/x?invite=t")
    if "{link}" not in body:
        raise ValueError("the body of a message template must contain {link}, where each person's link goes")
    if not subject:
        raise ValueError("the subject line of a message template is empty")
    return subject, body


def fill_template(text: str, title: str, link: str) -> str:
    """Return ``text`` with {title} and {link} filled in; raise ValueError for any other {field} or a lone brace."""
    try:
        return text.format_map(_Only(title=title, link=link))
    except (KeyError, ValueError, IndexError, AttributeError) as exc:
        raise ValueError(f"a message template may use only {{title}} and {{link}} (and {{{{ }}}} for a brace): "
                         f"{exc}") from None


class _Only(dict):
    """The fields a template may name; any other name is a KeyError that names it."""

    def __missing__(self, key):
        raise KeyError(f"unknown field {{{key}}}")


def invitation_message(kind: str, title: str, link: str, template: tuple[str, str] | None = None) -> tuple[str, str]:
    """Return (subject, plain-text body) of an invitation or reminder to ``link`` of the survey ``title``."""
    if kind not in MAIL_KINDS:
        raise ValueError(f"a message is one of {', '.join(MAIL_KINDS)}, not {kind!r}")
    subject, body = template or DEFAULT_TEMPLATES[kind]
    subject = " ".join(fill_template(subject, title, link).split())  # one line: no header injection
    return subject, fill_template(body, title, link)


def read_addresses(text: str, max_length: int = 254) -> tuple[list[str], list[str]]:
    """Return (addresses, problems) from CSV text with an ``email`` column: addresses trimmed, repeats dropped.

    A row whose address is empty is skipped; one that is not an address is a problem naming its line.
    Raises ValueError when there is no ``email`` column.
    """
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    columns = {name.strip().lower(): name for name in (reader.fieldnames or []) if name}
    if EMAIL_COLUMN not in columns:
        raise ValueError(f"the CSV file needs a column named {EMAIL_COLUMN!r} (found: "
                         f"{', '.join(reader.fieldnames or []) or 'no header'})")
    addresses, seen, problems = [], set(), []
    for row in reader:
        address = (row.get(columns[EMAIL_COLUMN]) or "").strip()
        if not address:
            continue
        if not is_address(address, max_length):
            problems.append(f"line {reader.line_num}: {address[:80]!r} is not an e-mail address")
        elif address.lower() not in seen:
            seen.add(address.lower())
            addresses.append(address)
    return addresses, problems


def is_address(text: str, max_length: int = 254) -> bool:
    """Return whether ``text`` looks like one e-mail address (one @, a dot in the domain, no spaces or controls)."""
    if len(text) > max_length or any(ch < " " or ch == "\x7f" or ch in " ,;<>\"()[]\\" for ch in text):
        return False
    local, at, domain = text.rpartition("@")
    return bool(at and local and "@" not in local and "." in domain.strip(".") and not domain.startswith("."))
