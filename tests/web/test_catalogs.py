"""The message catalogs hold every sentence the respondent page uses, translated, in every shipped language.

The messages are extracted as `pybabel extract -F babel.cfg -k tr -k N_` does; each catalog
(survey/translations/<language>/LC_MESSAGES/messages.po) must translate every one, with the same
placeholders, none empty or fuzzy; and the template messages.pot is up to date.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from survey.web.i18n import catalog_paths, compile_catalog, direction, interface_languages

REPO = Path(__file__).resolve().parents[2]
KEYWORDS = {"_": None, "gettext": None, "ngettext": (1, 2), "tr": None, "N_": None}
PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


def extracted() -> set[str]:
    """Return every message the respondent's files mark, extracted with the project's babel.cfg."""
    with (REPO / "babel.cfg").open(encoding="utf-8") as config:
        method_map, options_map = parse_mapping_cfg(config)
    return {message if isinstance(message, str) else message[0]
            for _file, _line, message, _comments, _context in extract_from_dir(
                str(REPO), method_map, options_map, keywords=KEYWORDS)}


@pytest.fixture(scope="module")
def messages() -> set[str]:
    found = extracted()
    assert len(found) > 100, "the extraction finds the page's messages"
    return found


def read(path: Path, language: str | None = None):
    with path.open("rb") as source:
        return read_po(source, locale=language)


def test_at_least_three_languages_besides_english_one_right_to_left():
    languages = interface_languages()
    assert languages[0] == "en" and len(languages) >= 4
    assert "rtl" in {direction(language) for language in languages}


def catalog_problems(catalog, messages: set[str]) -> list[str]:
    """Return one line per message the catalog lacks, leaves empty or fuzzy, or translates with other placeholders."""
    problems = ["the catalog's header is marked fuzzy"] if catalog.fuzzy else []
    for message in sorted(messages):
        entry = catalog.get(message)
        if entry is None:
            problems.append(f"missing: {message!r}")
        elif not (entry.string and entry.string.strip()):
            problems.append(f"empty: {message!r}")
        elif entry.fuzzy:
            problems.append(f"fuzzy: {message!r}")
        elif sorted(PLACEHOLDER.findall(entry.string)) != sorted(PLACEHOLDER.findall(message)):
            problems.append(f"other placeholders: {message!r} as {entry.string!r}")
    return problems


@pytest.mark.parametrize("language", sorted(catalog_paths()))
def test_every_catalog_translates_every_message_the_page_uses(messages, language):
    problems = catalog_problems(read(catalog_paths()[language], language), messages)
    assert problems == [], f"{language}: run pybabel update (babel.cfg) and translate: {problems}"


def test_the_template_is_up_to_date(messages):
    template = {entry.id for entry in read(REPO / "survey" / "translations" / "messages.pot") if entry.id}
    assert template == messages, "run pybabel extract (babel.cfg) to refresh messages.pot"


def test_a_catalog_lacking_a_message_or_with_a_fuzzy_one_fails(messages):
    language = sorted(catalog_paths())[0]
    catalog = read(catalog_paths()[language], language)
    removed, fuzzy, emptied = sorted(messages)[:3]
    catalog.delete(removed)
    catalog[fuzzy].flags.add("fuzzy")
    catalog[emptied].string = ""
    assert catalog_problems(catalog, messages) == [f"missing: {removed!r}", f"fuzzy: {fuzzy!r}", f"empty: {emptied!r}"]


def test_each_catalog_compiles(tmp_path):
    for language, po in catalog_paths().items():
        mo = tmp_path / language / "messages.mo"
        compile_catalog(po, mo)
        assert mo.stat().st_size > 1000
