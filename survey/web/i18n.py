"""The respondent page in several languages: Flask-Babel, its message catalogs and the page's language.

The catalogs are survey/translations/<language>/LC_MESSAGES/messages.po (docs/how-to/languages.md).
The wheel's build compiles them (hatch_build.py); a checkout that has no up-to-date .mo files
compiles them here at start-up into a cache folder named by the catalogs' digest. The
respondent page takes its language from ?lang=, then Accept-Language, then the survey's first
language (``survey.core.languages.pick_language``); every other page is in English.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import tempfile
from pathlib import Path

import flask_babel
from babel import Locale, UnknownLocaleError
from babel.messages.extract import extract
from babel.numbers import format_decimal
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from flask import g, has_request_context, render_template, request

from ..core.languages import DEFAULT_LANGUAGE, design_languages, localized, pick_language
from ..core.wording import set_translation
from ..resources import resource_dir

TRANSLATIONS = Path(__file__).resolve().parent.parent / "translations"
DOMAIN = "messages"
# Languages written right to left (primary subtags), for tags Babel does not know.
_RTL = frozenset({"ar", "he", "fa", "ur", "ps", "yi", "dv", "ckb", "sd", "ug"})


def catalog_paths() -> dict[str, Path]:
    """Return {language: path of its messages.po} for every shipped catalog."""
    return {po.parent.parent.name: po for po in sorted(TRANSLATIONS.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))}


def interface_languages() -> list[str]:
    """Return the languages the interface is written in: English and every shipped catalog's."""
    return [DEFAULT_LANGUAGE, *[language for language in catalog_paths() if language != DEFAULT_LANGUAGE]]


def _up_to_date(po: Path) -> bool:
    mo = po.with_suffix(".mo")
    return mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime


def compile_catalog(po: Path, mo: Path) -> None:
    """Compile one .po catalog into ``mo`` (written whole, then renamed into place)."""
    with po.open("rb") as source:
        catalog = read_po(source, locale=po.parent.parent.name, domain=DOMAIN)
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    mo.parent.mkdir(parents=True, exist_ok=True)
    partial = mo.with_name(f".{mo.name}.{os.getpid()}")
    partial.write_bytes(buffer.getvalue())
    os.replace(partial, mo)


@functools.cache
def compiled_directory() -> Path:
    """Return a folder holding <language>/LC_MESSAGES/messages.mo for every catalog, compiling them if needed."""
    catalogs = catalog_paths()
    if all(_up_to_date(po) for po in catalogs.values()):
        return TRANSLATIONS
    digest = hashlib.sha256(b"".join(po.read_bytes() for po in catalogs.values())).hexdigest()[:16]
    cache = Path(tempfile.gettempdir()) / f"ldp-survey-translations-{digest}"
    for language, po in catalogs.items():
        mo = cache / language / "LC_MESSAGES" / f"{DOMAIN}.mo"
        if not mo.exists():
            compile_catalog(po, mo)
    return cache


def babel_locale(language: str) -> str:
    """Return a language tag as a locale Babel knows ("pt-BR" → "pt_BR"), else English."""
    try:
        return str(Locale.parse(language.replace("-", "_")))
    except (UnknownLocaleError, ValueError):
        return DEFAULT_LANGUAGE


def direction(language: str) -> str:
    """Return "rtl" for a language written right to left, else "ltr"."""
    try:
        return "rtl" if Locale.parse(language.replace("-", "_")).character_order == "right-to-left" else "ltr"
    except (UnknownLocaleError, ValueError):
        return "rtl" if language.split("-")[0].lower() in _RTL else "ltr"


def language_name(language: str) -> str:
    """Return a language's name in itself ("français", "العربية"), else its tag."""
    try:
        name = Locale.parse(language.replace("-", "_")).get_display_name(language.replace("-", "_"))
    except (UnknownLocaleError, ValueError):
        return language
    return name[:1].upper() + name[1:] if name else language


def page_language() -> str:
    """Return the language of the page being served: the respondent page's, a respondent's error page's, or English."""
    if not has_request_context():
        return DEFAULT_LANGUAGE
    chosen = g.get("page_language")
    if chosen:
        return chosen
    if request.path.startswith("/s/"):
        known = interface_languages()
        asked = request.args.get("lang")
        return asked if asked in known else request.accept_languages.best_match(known) or DEFAULT_LANGUAGE
    return DEFAULT_LANGUAGE


def use_survey_language(design: dict) -> str:
    """Choose the respondent page's language for a survey (?lang=, Accept-Language, first language) and use it."""
    language = pick_language(design, request.args.get("lang"), request.accept_languages)
    g.page_language = language
    flask_babel.refresh()
    return language


def switcher(design: dict, language: str) -> list[dict]:
    """Return the language switcher's links: {tag, name, url, current, dir}, one per language of the survey."""
    args = {key: value for key, value in request.args.items() if key == "invite"}
    return [{"tag": tag, "name": language_name(tag), "dir": direction(tag), "current": tag == language,
             "url": f"{request.path}?{_query({**args, 'lang': tag})}"} for tag in design_languages(design)]


def _query(args: dict) -> str:
    from urllib.parse import urlencode

    return urlencode(args)


@functools.cache
def script_messages(modules: tuple[str, ...]) -> tuple[str, ...]:
    """Return every message the page's JavaScript marks with _(...), extracted as pybabel extract does."""
    folder = resource_dir("client_js")
    found: dict[str, None] = {}
    for module in modules:
        with (folder / module).open("rb") as source:
            for _line, message, _comments, _context in extract("javascript", source, keywords={"_": None}):
                if isinstance(message, str):
                    found.setdefault(message)
    return tuple(found)


def js_messages(entry: str, design: dict) -> dict[str, str]:
    """Return the translations of the JavaScript messages of ``entry``'s page for ``design``, passed as a JSON blob.

    The messages are those of every module the page's joined script runs (``page_script_modules``: each
    module as written, which the join keeps, its import and export lines aside). A message that reads the
    same in the page's language (every one, in English) is left out: client_js/messages.js shows a message
    the blob lacks as it is written, and an English page saves the blob's 13 KB.
    """
    from .static_files import page_script_modules

    translated = ((message, flask_babel.gettext(message)) for message in script_messages(page_script_modules(entry, design)))
    return {message: words for message, words in translated if words != message}


def render_respondent_page(design: dict, **context) -> str:
    """Render respond.html in the respondent's language: the design's texts in it, and the language switcher."""
    language = use_survey_language(design)
    page = localized(design, language, flask_babel.gettext)
    return render_template("respond.html", design=page, languages=switcher(design, language), **context)


def _translate(message: str) -> str:
    """Translate a core message (``survey.core.wording.tr``) into the request's language."""
    return flask_babel.gettext(message) if has_request_context() else message


def _format_number(value: int) -> str:
    """Format a whole number for the request's language (Babel's digit grouping)."""
    if not has_request_context():
        return f"{value:,}"
    # Latin digits, as in every other figure of the page (ε, percentages, reports), whatever the language.
    return format_decimal(value, locale=flask_babel.get_locale(), numbering_system="latn")


def init_app(app) -> None:
    """Set up Flask-Babel (catalogs, language selection, trimmed {% trans %} blocks) and the template helpers."""
    app.config.setdefault("BABEL_DEFAULT_LOCALE", DEFAULT_LANGUAGE)
    app.config["BABEL_TRANSLATION_DIRECTORIES"] = str(compiled_directory())
    flask_babel.Babel(app, locale_selector=lambda: babel_locale(page_language()))
    app.jinja_env.policies["ext.i18n.trimmed"] = True
    app.jinja_env.globals.update(page_language=page_language, page_direction=lambda: direction(page_language()),
                                 js_messages=js_messages)
    app.before_request(lambda: set_translation(_translate, _format_number) and None)
