"""A survey's panel completion: the URL parameters a recruiting panel adds to the link, and what ends the survey.

Online panels (Prolific, MTurk, CloudResearch, market-research panels) send a participant to
the survey with parameters in the link (``?PROLIFIC_PID=...&STUDY_ID=...``) and expect, once
the answers are in, a completion code to paste or a redirect to a completion URL. The
definition declares them (``[panel]``: ``parameters``, ``code``, ``redirect``); the
respondent page's JavaScript reads the declared parameters from the address, removes them
from it, and substitutes them into the redirect only after the server acknowledged the
submission (client_js/respond-completion.js). The server never reads, stores or logs their
values; only their names are part of the definition. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

PANEL_FIELDS = {"parameters", "code", "redirect"}
# A parameter's name: what panels use (PROLIFIC_PID, workerId, assignment_id, rid), nothing a URL must escape.
PARAMETER_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# Names the respondent page already reads from its address for other purposes.
RESERVED_PARAMETERS = frozenset({"invite", "lang"})
MAX_PARAMETERS = 10
# A completion code as panels issue them: letters, digits, '-' and '_' (Prolific: e.g. C1A2B3C4).
CODE_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_REDIRECT = 2000
# A {placeholder} of the redirect: {code} or a declared parameter.
PLACEHOLDER_RE = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Panel:
    """The panel part of a definition: accepted parameter names, and a code to show and/or a redirect."""

    parameters: tuple[str, ...] = ()
    code: str | None = None
    redirect: str | None = None

    def design_entry(self) -> dict:
        """Return the design's ``panel`` entry: the fields that are set (parameters as a list)."""
        entry: dict = {"parameters": list(self.parameters)}
        if self.code is not None:
            entry["code"] = self.code
        if self.redirect is not None:
            entry["redirect"] = self.redirect
        return entry


def parse_panel(data, fail: Callable[[str, str], None]) -> Panel:
    """Validate a definition's ``panel`` table; ``fail(message, field)`` raises with the field named ``panel.NAME``."""
    if not isinstance(data, Mapping):
        fail("must be a table with parameters, code and/or redirect", "panel")
    unknown = sorted(set(data) - PANEL_FIELDS)
    if unknown:
        fail(f"not a field of panel; allowed fields are {', '.join(sorted(PANEL_FIELDS))}", f"panel.{unknown[0]}")
    parameters = _parameters(data.get("parameters", []), fail)
    code = data.get("code")
    if code is not None and (not isinstance(code, str) or not CODE_RE.fullmatch(code)):
        fail(f"must be 1-64 letters, digits, '-' or '_', got {code!r}", "panel.code")
    redirect = data.get("redirect")
    if redirect is not None:
        _check_redirect(redirect, parameters, code, fail)
    if code is None and redirect is None:
        fail("a panel needs a completion: a code to show, a redirect URL, or both", "panel.code")
    return Panel(parameters=parameters, code=code, redirect=redirect)


def _parameters(value, fail) -> tuple[str, ...]:
    """Return the declared parameter names, checked: a list of distinct safe names, none the page's own."""
    if not isinstance(value, list) or len(value) > MAX_PARAMETERS:
        fail(f"must be a list of at most {MAX_PARAMETERS} parameter names, got {value!r}", "panel.parameters")
    for name in value:
        if not isinstance(name, str) or not PARAMETER_RE.fullmatch(name):
            fail(f"a parameter name must be a letter then letters, digits or '_' (at most 64), got {name!r}",
                 "panel.parameters")
        if name in RESERVED_PARAMETERS:
            fail(f"{name!r} is read by the survey page itself; choose another name", "panel.parameters")
    if len(set(value)) != len(value):
        fail("parameter names must be distinct", "panel.parameters")
    return tuple(value)


def _check_redirect(redirect, parameters, code, fail) -> None:
    """Check a redirect: an https URL or a relative one, whose {placeholders} are {code} or declared parameters."""
    if not isinstance(redirect, str) or not redirect or len(redirect) > MAX_REDIRECT:
        fail(f"must be a URL of at most {MAX_REDIRECT} characters, got {redirect!r}", "panel.redirect")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 or ch == "\\" for ch in redirect):
        fail("must hold no spaces, control characters or backslashes (write them %-encoded)", "panel.redirect")
    parts = urlsplit(redirect)
    if parts.scheme:
        if parts.scheme.lower() != "https" or not parts.netloc:
            fail(f"must be an https:// URL or a relative one (e.g. /done), got {redirect!r}", "panel.redirect")
    elif redirect.startswith("//"):
        fail("must be an https:// URL or a relative one; write https:// before another host", "panel.redirect")
    for placeholder in PLACEHOLDER_RE.findall(redirect):
        if placeholder == "code":
            if code is None:
                fail("uses {code} but the panel has no code", "panel.redirect")
        elif placeholder not in parameters:
            allowed = ", ".join("{" + name + "}" for name in ("code", *parameters))
            fail(f"{{{placeholder}}} is neither {{code}} nor a declared parameter; use {allowed}", "panel.redirect")
    if "{" in PLACEHOLDER_RE.sub("", redirect) or "}" in PLACEHOLDER_RE.sub("", redirect):
        fail("has an unmatched '{' or '}'", "panel.redirect")
    if "{" in parts.netloc or "}" in parts.netloc:
        fail("may have placeholders in its path or query only, not in its host", "panel.redirect")

