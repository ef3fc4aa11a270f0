"""Keep secrets out of every log line: join links, invitations, interviewer sessions and API tokens are replaced.

A join link's token is in its path (``/join/<token>``, also URL-encoded in a sign-in
page's ``next=``), a respondent's invitation in ``?invite=``, an API token in the
``Authorization`` header (``Bearer ldps_…``), and a panel's participant identifiers in the query of a
respondent page (``/s/<slug>?PROLIFIC_PID=…``: every value there but the language is hidden). Whoever reads the log (an operator, a log
collector) could use any of them, so log calls pass paths through :func:`scrub_path` and
every logger of the app and the server carries :class:`ScrubSecrets`, which also removes the
current request's own secrets wherever they appear (an exception's message, a traceback).
"""

from __future__ import annotations

import logging
import re

from flask import has_request_context, request

# A join, password reset or interviewer session token in a path, plain or URL-encoded (a sign-in page's
# ?next=%2Fjoin%2F...; a session's link is /s/<slug>/interview/<token>).
_JOIN = re.compile(r"(?i)((?:/|%2F)(?:join|reset|interview)(?:/|%2F))[^\s/?#&\"']+")
# The value of a query parameter that carries a secret.
_QUERY = re.compile(r"(?i)((?:^|[?&;\s]|%3F|%26)(?:invite|token)(?:=|%3D))[^\s&#\"']+")
# An API token anywhere (``ldps_`` and 43 URL-safe characters), and any bearer credential.
_API_TOKEN = re.compile(r"ldps_[A-Za-z0-9_-]+")
_BEARER = re.compile(r"(?i)(bearer\s+)\S+")
# The query string of a respondent page (/s/<slug>, /s/<slug>/..., the owner's test mode /surveys/<slug>/test):
# a panel adds participant ids to it.
_RESPONDENT_QUERY = re.compile(r"((?:/s/[^\s?#\"']*|/surveys/[^\s/?#\"']+/test)\?)([^\s#\"']*)")
# Query parameters of a respondent page whose values are kept in a log line (they name no one).
KEPT_PARAMETERS = frozenset({"lang"})
HIDDEN = "(hidden)"


def scrub(text: str) -> str:
    """Return ``text`` with every join token, invitation, API token and bearer credential replaced by "(hidden)"."""
    text = _JOIN.sub(rf"\g<1>{HIDDEN}", text)
    text = _QUERY.sub(rf"\g<1>{HIDDEN}", text)
    text = _API_TOKEN.sub("ldps_" + HIDDEN, text)
    text = _RESPONDENT_QUERY.sub(lambda match: match.group(1) + _hide_values(match.group(2)), text)
    return _BEARER.sub(rf"\g<1>{HIDDEN}", text)


def _hide_values(query: str) -> str:
    """Return a query string with the value of every parameter but the kept ones (the language) hidden."""
    parts = []
    for part in re.split(r"([&;])", query):
        name, equals, _ = part.partition("=")
        keep = not equals or name.lower() in KEPT_PARAMETERS
        parts.append(part if keep else f"{name}={HIDDEN}")
    return "".join(parts)


def scrub_path(path: str) -> str:
    """Return a request path (or full path) fit for a log line: no secret in it."""
    return scrub(path)


def request_secrets() -> list[str]:
    """Return the secrets the current request carries (join token, invitation, bearer token, a respondent page's query values)."""
    if not has_request_context():
        return []
    values = [(request.view_args or {}).get("token"), request.args.get("invite"),
              request.headers.get("Authorization", "").partition(" ")[2].strip()]
    if _RESPONDENT_QUERY.fullmatch(f"{request.path}?"):
        values += [value for name, value in request.args.items(multi=True) if name.lower() not in KEPT_PARAMETERS]
    return [value for value in values if isinstance(value, str) and len(value) >= 4]


def scrub_all(text: str) -> str:
    """Return ``text`` scrubbed (``scrub``) and without the current request's own secrets wherever they appear."""
    for secret in request_secrets():
        text = text.replace(secret, HIDDEN)
    return scrub(text)


class ScrubSecrets(logging.Filter):
    """A logging filter that rewrites a record's message and traceback without secrets (it never drops a record)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub_all(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[1] is not None:
            # A traceback's text is made later by the handler: make it now, scrubbed.
            record.exc_text = scrub_all(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


def install(*loggers: logging.Logger):
    """Give each logger the ScrubSecrets filter (once)."""
    for logger in loggers:
        if not any(isinstance(existing, ScrubSecrets) for existing in logger.filters):
            logger.addFilter(ScrubSecrets())
