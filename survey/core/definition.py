"""Parse and validate survey definitions (docs/reference/surveys.md).

A definition is a TOML file, or the same fields as a mapping. Validation errors name
the file, the question and the field. Apart from the mechanism registry, which lists the
mechanisms a number question may ask for, this module uses the standard library only.
"""

from __future__ import annotations

import difflib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .branching import branched_options, parse_show_if
from .mechanisms.registry import offered
from .panel import Panel, parse_panel

KINDS = ("yes_no", "choice", "multi", "number")
# How a number question is randomized: "auto" picks the least worst-case variance (survey/core/mechanisms/registry.py),
# or one the registry offers.
NUMBER_MECHANISMS = ("auto", *offered("number"))
ALLOCATIONS = ("split", "sample")
# "open": anyone with the link may answer; "invite": only holders of a single-use invitation.
ACCESS = ("open", "invite")
# A series names the waves of one study: the browser reuses its memoized reports across them.
SERIES_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# A series' per-wave ε₁ (mechanisms/waves.py): at least this, at most the survey's epsilon (ε∞).
MIN_WAVE_EPSILON = 0.05
SLUG_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
# Matched with fullmatch: "$" would also accept a trailing newline ("smoker\n").
QUESTION_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_EPSILON = 20.0
MAX_QUESTIONS = 100
MAX_OPTIONS = 256
DECLINE_LABEL = "Prefer not to say"
MAX_NUMBER_RANGE = 10**9
MAX_TEXT = 2000

SURVEY_FIELDS = {"slug", "title", "description", "epsilon", "allocation", "sample", "questions", "access",
                 "series", "wave_epsilon", "release_every", "thank_you", "panel", "languages", "translations"}
# Language tags (BCP 47, e.g. "en", "fr", "pt-BR", "ar"): the first of `languages` is that of the texts themselves.
LANGUAGE_RE = re.compile(r"[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")
MAX_LANGUAGES = 20
# The survey's own text fields a translation may give (any text field shown to respondents: add it here).
# A question's translation gives its text and, for a choice or multi question, its options.
SURVEY_TEXT_FIELDS = ("title", "description", "thank_you")
QUESTION_TEXT_FIELDS = ("text", "options")
# Results are released every release_every responses (1: after each response); absent, the
# planner's default for the survey's epsilon (survey.core.shuffling.default_release_every).
MAX_RELEASE_EVERY = 1_000_000
QUESTION_FIELDS = {
    "yes_no": {"id", "kind", "text", "weight", "show_if", "translations"},
    "choice": {"id", "kind", "text", "weight", "options", "decline", "show_if", "translations"},
    "multi": {"id", "kind", "text", "weight", "options", "decline", "show_if", "translations"},
    "number": {"id", "kind", "text", "weight", "min", "max", "mechanism", "show_if", "translations"},
}


class DefinitionError(ValueError):
    """A survey definition is invalid; the message names the source, question and field."""

    def __init__(self, message: str, *, source: str = "<definition>", question: str | None = None,
                 field: str | None = None):
        self.source = source
        self.question = question
        self.field = field
        self.reason = message
        where = source
        if question is not None:
            where += f", question {question!r}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Question:
    id: str
    kind: str
    text: str
    weight: float = 1.0
    options: tuple[str, ...] | None = None
    min: int | None = None
    max: int | None = None
    decline: bool = False
    mechanism: str = "auto"
    # (earlier question id, the values of it the question applies to): survey/core/branching.py.
    show_if: tuple[str, tuple[str, ...]] | None = None
    # {language: {"text": ..., "options": [...]}}: the question's texts in the survey's other languages.
    translations: dict | None = field(default=None, hash=False)


@dataclass(frozen=True)
class SurveyDefinition:
    slug: str
    title: str
    epsilon: float
    questions: tuple[Question, ...]
    description: str = ""
    allocation: str = "split"
    sample: int | None = None
    access: str = "open"
    series: str | None = None
    # The per-wave ε₁ of a series' instantaneous layer; None: one layer, each wave resending the kept reports.
    wave_epsilon: float | None = None
    release_every: int | None = None
    # Shown after the server acknowledged the answers (plain text); the panel's completion (survey/core/panel.py).
    thank_you: str | None = None
    panel: Panel | None = None
    # The languages of the texts, the first being that of the fields themselves; None: one language.
    languages: tuple[str, ...] | None = None
    # {language: {field: text}}: the survey's own texts (SURVEY_TEXT_FIELDS) in its other languages.
    translations: dict | None = field(default=None, hash=False)
    source: str = field(default="<definition>", compare=False)


def load_definition(path: str | Path) -> SurveyDefinition:
    """Read and validate a survey definition from a TOML file."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DefinitionError(f"cannot read the file ({exc.strerror or exc})", source=source) from exc
    return parse_definition_toml(text, source=source)


def parse_definition_toml(text: str, *, source: str = "<definition>") -> SurveyDefinition:
    """Validate a survey definition given as TOML text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DefinitionError(f"not valid TOML ({exc})", source=source) from exc
    except ValueError as exc:
        raise DefinitionError(f"holds a value TOML parsing refuses ({exc})", source=source) from exc
    except RecursionError as exc:
        raise DefinitionError("nests arrays or tables too deeply", source=source) from exc
    return parse_definition(data, source=source)


def _holds_nul(value) -> bool:
    """Return whether a NUL character is in any string (key or value) of parsed definition data."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(item) for item in value)
    return False


def did_you_mean(name: Any, allowed) -> str:
    """Return " (did you mean 'title'?)" for a misspelt field name close to an allowed one, else ""."""
    close = difflib.get_close_matches(str(name).lower(), sorted(allowed), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_definition(data: Mapping[str, Any], *, source: str = "<definition>") -> SurveyDefinition:
    """Validate a survey definition given as a mapping of TOML fields."""

    def fail(message, question=None, field_name=None):
        raise DefinitionError(message, source=source, question=question, field=field_name)

    try:
        nul = _holds_nul(data)
    except RecursionError:
        fail("nests arrays or tables too deeply")
    if nul:  # PostgreSQL's text cannot hold one; no survey text needs it
        fail("a text holds a NUL character (\\u0000), which no text of a survey may hold")

    def sfail(message, field_name):
        fail(message, field_name=field_name)

    if not isinstance(data, Mapping):
        fail("a survey definition must be a table of fields")
    unknown = sorted(set(data) - SURVEY_FIELDS)
    if unknown:
        fail(f"unknown field{did_you_mean(unknown[0], SURVEY_FIELDS)}; allowed fields are {', '.join(sorted(SURVEY_FIELDS))}",
             field_name=unknown[0])

    slug = data.get("slug")
    if not isinstance(slug, str) or not SLUG_RE.fullmatch(slug):
        fail(f"must be 1-64 lowercase letters, digits or inner hyphens, got {slug!r}", field_name="slug")
    title = _text(data.get("title"), sfail, "title", required=True)
    description = _text(data.get("description", ""), sfail, "description", required=False)
    epsilon = _positive_number(data.get("epsilon"), sfail, "epsilon", upper=MAX_EPSILON)

    allocation = data.get("allocation", "split")
    if allocation not in ALLOCATIONS:
        fail(f"must be one of {', '.join(ALLOCATIONS)}, got {allocation!r}", field_name="allocation")

    questions_data = data.get("questions")
    if not isinstance(questions_data, list) or not questions_data:
        fail("a survey needs at least one [[questions]] table", field_name="questions")
    if len(questions_data) > MAX_QUESTIONS:
        fail(f"at most {MAX_QUESTIONS} questions are allowed, got {len(questions_data)}", field_name="questions")

    questions = []
    seen = set()
    languages = _languages(data.get("languages"), sfail)
    for index, qdata in enumerate(questions_data, start=1):
        question = _parse_question(qdata, index, fail, questions, languages)
        if question.id in seen:
            fail("duplicate question id", question=question.id, field_name="id")
        seen.add(question.id)
        questions.append(question)

    sample = data.get("sample")
    if allocation == "sample":
        if isinstance(sample, bool) or not isinstance(sample, int) or not 1 <= sample <= len(questions):
            fail(f"must be an integer from 1 to the number of questions ({len(questions)}), got {sample!r}",
                 field_name="sample")
    elif sample is not None:
        fail("only allowed with allocation = \"sample\"", field_name="sample")

    access = data.get("access", "open")
    if access not in ACCESS:
        fail(f"must be one of {', '.join(ACCESS)}, got {access!r}", field_name="access")
    series = data.get("series")
    if series is not None and (not isinstance(series, str) or not SERIES_RE.fullmatch(series)):
        fail(f"must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, got {series!r}",
             field_name="series")
    wave_epsilon = _wave_epsilon(data, series, epsilon, sfail)

    release_every = data.get("release_every")
    if release_every is not None and (isinstance(release_every, bool) or not isinstance(release_every, int)
                                      or not 1 <= release_every <= MAX_RELEASE_EVERY):
        fail(f"must be a whole number of responses from 1 (release after every response) to "
             f"{MAX_RELEASE_EVERY:,}, got {release_every!r}", field_name="release_every")

    thank_you = _text(data["thank_you"], sfail, "thank_you", required=True) if "thank_you" in data else None
    panel = parse_panel(data["panel"], sfail) if "panel" in data else None
    known = {name for name in SURVEY_TEXT_FIELDS if isinstance(data.get(name), str)}
    translations = _translations(data.get("translations"), languages, known, sfail, "translations")
    return SurveyDefinition(slug=slug, title=title, description=description, epsilon=epsilon,
                            allocation=allocation, sample=sample, questions=tuple(questions), access=access,
                            series=series, wave_epsilon=wave_epsilon, release_every=release_every, thank_you=thank_you, panel=panel,
                            languages=languages, translations=translations, source=source)


def _languages(value, fail):
    """Return the validated tuple of language tags, or None when the field is absent."""
    if value is None:
        return None
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_LANGUAGES:
        fail(f"must be a list of 1 to {MAX_LANGUAGES} language tags such as [\"en\", \"fr\", \"ar\"], "
             f"got {value!r}", "languages")
    for tag in value:
        if not isinstance(tag, str) or not LANGUAGE_RE.fullmatch(tag):
            fail(f"every language must be a tag such as \"en\", \"fr\" or \"pt-BR\", got {tag!r}", "languages")
    if len(set(value)) != len(value):
        fail("languages must be distinct", "languages")
    return tuple(value)


def _translations(value, languages, known, fail, name, options=None):
    """Return {language: {field: text}} of a translations table, checked against the languages and fields.

    ``known``: the text fields that may be translated; ``options``: the untranslated option labels
    (a translation gives as many). Missing translations are not errors (``languages.translation_warnings``).
    """
    if value is None:
        return None
    others = languages[1:] if languages else ()
    if not isinstance(value, Mapping):
        fail("must be a table of languages, each a table of translated texts", name)
    result = {}
    for language, texts in value.items():
        if language not in others:
            where = (f"one of the other languages ({', '.join(others)})" if others
                     else "listed in `languages` after the first (the language of the texts themselves)")
            fail(f"translation into {language!r}: the language must be {where}", name)
        if not isinstance(texts, Mapping):
            fail(f"translation into {language!r} must be a table of texts", name)
        unknown = sorted(set(texts) - known)
        if unknown:
            fail(f"translation into {language!r} has {unknown[0]!r}; it may give {', '.join(sorted(known))}", name)
        result[language] = {field_name: _translated(texts[field_name], options, fail, name, language, field_name)
                            for field_name in sorted(texts)}
    return result or None


def _translated(value, options, fail, name, language, field_name):
    """Return one translated text (a string, or for options a tuple as long as the untranslated one)."""
    if field_name != "options":
        return _text(value, lambda message, _name: fail(f"{language}.{field_name} {message}", name), field_name,
                     required=False)
    if (not isinstance(value, list) or len(value) != len(options)
            or not all(isinstance(o, str) and o.strip() and len(o) <= 200 for o in value)):
        fail(f"{language}.options must list {len(options)} non-empty labels of at most 200 characters, one per "
             f"option in the same order, got {value!r}", name)
    if len(set(value)) != len(value):
        fail(f"{language}.options: option labels must be distinct", name)
    return tuple(option.strip() for option in value)


def _parse_question(qdata, index, fail, earlier=(), languages=None):
    label = f"#{index}"
    if not isinstance(qdata, Mapping):
        fail("each question must be a table", question=label)
    qid = qdata.get("id")
    if not isinstance(qid, str) or not QUESTION_ID_RE.fullmatch(qid):
        fail(f"must start with a letter or underscore and hold only letters, digits and underscores "
             f"(at most 64), got {qid!r}", question=label, field_name="id")
    kind = qdata.get("kind")
    if kind not in KINDS:
        fail(f"must be one of {', '.join(KINDS)}, got {kind!r}", question=qid, field_name="kind")
    unknown = sorted(set(qdata) - QUESTION_FIELDS[kind])
    if "mechanism" in unknown:
        fail(f"only a number question has a mechanism, not a {kind} question", question=qid, field_name="mechanism")
    if unknown:
        fail(f"not a field of a {kind} question{did_you_mean(unknown[0], QUESTION_FIELDS[kind])}; allowed fields are "
             f"{', '.join(sorted(QUESTION_FIELDS[kind]))}", question=qid, field_name=unknown[0])

    def qfail(message, field_name):
        fail(message, question=qid, field_name=field_name)

    text = _text(qdata.get("text"), qfail, "text", required=True)
    weight = _positive_number(qdata.get("weight", 1.0), qfail, "weight", upper=1e6)
    options = lo = hi = None
    if kind in ("choice", "multi"):
        options = qdata.get("options")
        least = 2 if kind == "choice" else 1
        if not isinstance(options, list) or not least <= len(options) <= MAX_OPTIONS:
            qfail(f"must be a list of {least} to {MAX_OPTIONS} option labels, got {options!r}", "options")
        for option in options:
            if not isinstance(option, str) or not option.strip() or len(option) > 200:
                qfail(f"every option must be a non-empty string of at most 200 characters, got {option!r}",
                      "options")
        if len(set(options)) != len(options):
            qfail("option labels must be distinct", "options")
        decline = qdata.get("decline", False)
        if not isinstance(decline, bool):
            qfail(f"must be true or false, got {decline!r}", "decline")
        if decline:
            # "Prefer not to say" is an ordinary randomized option, never a skip: a skip would
            # depend on the answer and leak it (docs/reference/mechanisms.md, Sampled questions).
            if DECLINE_LABEL in options:
                qfail(f"{DECLINE_LABEL!r} is added by decline = true; remove it from the options", "options")
            if len(options) + 1 > MAX_OPTIONS:
                qfail(f"decline = true adds an option, so at most {MAX_OPTIONS - 1} options are allowed",
                      "options")
            options = [*options, DECLINE_LABEL]
        options = tuple(options)
    if kind == "number":
        lo, hi = qdata.get("min"), qdata.get("max")
        for name, value in (("min", lo), ("max", hi)):
            if isinstance(value, bool) or not isinstance(value, int):
                qfail(f"must be an integer, got {value!r}", name)
        if not lo < hi:
            qfail(f"must be greater than min ({lo}), got {hi}", "max")
        if hi - lo > MAX_NUMBER_RANGE:
            qfail(f"the range max - min must be at most {MAX_NUMBER_RANGE}, got {hi - lo}", "max")
    mechanism = qdata.get("mechanism", "auto")
    if mechanism not in NUMBER_MECHANISMS:
        qfail(f"must be one of {', '.join(NUMBER_MECHANISMS)}, got {mechanism!r}", "mechanism")
    # A translation gives the question's own options: not "Prefer not to say" nor "Does not apply" (catalogs).
    own = tuple(o for o in options if not (decline and o == DECLINE_LABEL)) if options else None
    translations = _translations(qdata.get("translations"), languages,
                                 {"text", "options"} if options else {"text"}, qfail, "translations", own)
    show_if = None
    if "show_if" in qdata:
        show_if = parse_show_if(qdata["show_if"], earlier, lambda message: qfail(message, "show_if"))
        if kind in ("choice", "multi"):
            options = branched_options(kind, options, lambda message: qfail(message, "options"))
            if len(options) > MAX_OPTIONS:
                qfail(f"show_if adds the option \"Does not apply\", so at most {MAX_OPTIONS - 1} options "
                      "are allowed", "options")
    return Question(id=qid, kind=kind, text=text, weight=weight, options=options, min=lo, max=hi,
                    decline=bool(kind in ("choice", "multi") and qdata.get("decline", False)), mechanism=mechanism,
                    show_if=show_if, translations=translations)


def _text(value, fail, name, *, required):
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > MAX_TEXT:
        article = "a non-empty" if required else "a"
        fail(f"must be {article} string of at most {MAX_TEXT} characters, got {value!r}", name)
    return value.strip()


def _wave_epsilon(data, series, epsilon, fail):
    """Return the validated per-wave ε₁ of a series (None when absent: one layer, as designs before it)."""
    if "wave_epsilon" not in data:
        return None
    value = data["wave_epsilon"]
    if series is None:
        fail("only allowed with series = \"...\": it is the per-wave ε₁ of a series' reports", "wave_epsilon")
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not MIN_WAVE_EPSILON <= value <= epsilon:
        fail(f"must be a number from {MIN_WAVE_EPSILON:g} to epsilon = {epsilon:g} (a wave's report is never "
             f"more private than its ε∞; epsilon itself is the most precise), got {value!r}", "wave_epsilon")
    return float(value)


def _positive_number(value, fail, name, *, upper):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not 0 < value <= upper:
        fail(f"must be a number in (0, {upper:g}], got {value!r}", name)
    return float(value)
