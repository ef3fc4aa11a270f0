"""The respondent's sentences in the page's language: ``tr(message, **values)`` marks and translates them.

The core stays free of Flask: the web layer sets the translation of the request being served
(``translating``); elsewhere (the CLI, exports, tests) ``tr`` returns the English message. The
messages are extracted by Babel (babel.cfg: keyword ``tr``) into survey/translations/.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar

_TRANSLATE: ContextVar[Callable[[str], str] | None] = ContextVar("ldp_survey_translate", default=None)
_NUMBER: ContextVar[Callable[[int], str] | None] = ContextVar("ldp_survey_number", default=None)


def tr(message: str, **values) -> str:
    """Return ``message`` in the current language with its %(name)s placeholders filled from ``values``."""
    translate = _TRANSLATE.get()
    text = translate(message) if translate is not None else message
    return text % values if values else text


def number(value: int) -> str:
    """Return a whole number with the current language's digit grouping (English: 12,345)."""
    formatter = _NUMBER.get()
    return formatter(value) if formatter is not None else f"{value:,}"


def N_(message: str) -> str:
    """Mark ``message`` for the catalogs without translating it here (it is translated where it is shown)."""
    return message


def set_translation(translate: Callable[[str], str] | None, format_number: Callable[[int], str] | None = None):
    """Make ``translate`` (and ``format_number``) those of this context (None: English); return the tokens."""
    return _TRANSLATE.set(translate), _NUMBER.set(format_number)


def reset_translation(tokens) -> None:
    """Undo a set_translation."""
    _TRANSLATE.reset(tokens[0])
    _NUMBER.reset(tokens[1])


@contextmanager
def translating(translate: Callable[[str], str] | None, format_number: Callable[[int], str] | None = None):
    """Translate ``tr``'s messages with ``translate`` (numbers with ``format_number``) inside the block."""
    tokens = set_translation(translate, format_number)
    try:
        yield
    finally:
        reset_translation(tokens)
