"""Tell what kind of change a new definition of a live survey is: none, text, settings, or design.

A *text* change (titles, descriptions, wording of questions and options, thank-you,
translations) leaves the randomization as it was, so the responses before and after stay
one data set. A *settings* change (who may answer: ``access``; the recruiting panel's
parameters, completion code and redirect: ``panel``) does not touch the randomization either
and keeps one data set too, but is not called "text": it is listed in plain words with its
values ("Access: anyone with the link → invitation only"). A change of both is TEXT with its
settings listed beside the wording. A *design* change alters what a report means or how
it was drawn (questions added, removed, reordered or renamed, their kinds, options added,
removed or reordered, the "prefer not to say" option, ranges, mechanisms, weights, ε,
allocation, sample, release step, branching, series, per-wave ε₁): responses under the two designs
cannot be pooled, so a survey that has responses gets a new version.
"""

from __future__ import annotations

from dataclasses import dataclass

from .definition import SurveyDefinition
from .words import format_epsilon

NONE = "none"
TEXT = "text"
SETTINGS = "settings"
DESIGN = "design"
# The kinds that keep the responses one data set (stored as a wording revision, never a new version).
SAME_DATA_SET = (TEXT, SETTINGS)

# Survey fields that change what a report means or how it is drawn (see the module docstring).
_SURVEY_DESIGN_FIELDS = ("epsilon", "allocation", "sample", "release_every", "series", "wave_epsilon")
# Survey fields that change only what respondents read.
_SURVEY_TEXT_FIELDS = ("title", "description", "thank_you", "languages", "translations")
# Settings (``_settings_changes``) are who may answer (``access``), in these words, and the ``panel``.
_ACCESS_WORDS = {"open": "anyone with the link", "invite": "invitation only"}
_QUESTION_DESIGN_FIELDS = ("kind", "weight", "min", "max", "decline", "mechanism")
_QUESTION_TEXT_FIELDS = ("text", "translations")


@dataclass(frozen=True)
class Revision:
    """The kind of a change (NONE, TEXT, SETTINGS or DESIGN) and what changed.

    Text and design changes are short codes ("question smoker: text", see ``plain``); settings
    changes are already plain phrases with the values before and after.
    """

    kind: str
    text_changes: tuple[str, ...] = ()
    design_changes: tuple[str, ...] = ()
    settings_changes: tuple[str, ...] = ()

    @property
    def needs_version(self) -> bool:
        """Whether responses collected before the change must be kept apart from those after."""
        return self.kind == DESIGN


def classify_change(old: SurveyDefinition, new: SurveyDefinition) -> Revision:
    """Compare two definitions of one survey and say which kind of change the new one is."""
    text: list[str] = []
    design: list[str] = []
    for name in _SURVEY_DESIGN_FIELDS:
        if getattr(old, name) != getattr(new, name):
            design.append(f"survey {name}")
    for name in _SURVEY_TEXT_FIELDS:
        if getattr(old, name) != getattr(new, name):
            text.append(f"survey {name}")
    old_ids = [q.id for q in old.questions]
    new_ids = [q.id for q in new.questions]
    if old_ids != new_ids:
        design.append(_question_list_change(old_ids, new_ids))
    else:
        renamed = _option_renames(old, new)
        for before, after in zip(old.questions, new.questions):
            _compare_question(before, after, text, design)
            _compare_show_if(before, after, renamed, text, design)
    settings = _settings_changes(old, new)
    kind = DESIGN if design else TEXT if text else SETTINGS if settings else NONE
    return Revision(kind, tuple(text), tuple(design), tuple(settings))


def _settings_changes(old: SurveyDefinition, new: SurveyDefinition) -> list[str]:
    """Return each change of who may answer or of the panel, in plain words with before → after."""
    changes = []
    if old.access != new.access:
        changes.append(f"Access: {_ACCESS_WORDS.get(old.access, old.access)} → "
                       f"{_ACCESS_WORDS.get(new.access, new.access)}")
    if old.panel != new.panel:
        if old.panel is None or new.panel is None:
            changes.append(f"Panel: {_panel_words(old.panel)} → {_panel_words(new.panel)}")
        else:
            for name, label in (("parameters", "Panel link parameters"), ("code", "Panel completion code"),
                                ("redirect", "Panel redirect")):
                before, after = getattr(old.panel, name), getattr(new.panel, name)
                if before != after:
                    changes.append(f"{label}: {_value_words(before)} → {_value_words(after)}")
    return changes


def _panel_words(panel) -> str:
    """Return a panel setting in a few words ("none", or its completion code, redirect and link parameters)."""
    if panel is None:
        return "none"
    parts = []
    if panel.code is not None:
        parts.append(f"completion code {panel.code}")
    if panel.redirect is not None:
        parts.append(f"redirect to {panel.redirect}")
    if panel.parameters:
        parts.append("link parameters " + ", ".join(panel.parameters))
    return "; ".join(parts)


def _value_words(value) -> str:
    """Return a panel field's value in words: "none" when unset, a list joined by commas."""
    if value is None or value == ():
        return "none"
    return ", ".join(value) if isinstance(value, tuple) else str(value)


def _question_list_change(old_ids: list[str], new_ids: list[str]) -> str:
    """Describe how the list of questions changed (added, removed, or only reordered)."""
    added = [q for q in new_ids if q not in old_ids]
    removed = [q for q in old_ids if q not in new_ids]
    parts = []
    if added:
        parts.append("questions added: " + ", ".join(added))
    if removed:
        parts.append("questions removed: " + ", ".join(removed))
    return "; ".join(parts) if parts else "questions reordered"


def _compare_question(before, after, text: list[str], design: list[str]) -> None:
    """Append the question's text and design changes (options: count and order are design, wording text)."""
    for name in _QUESTION_DESIGN_FIELDS:
        if getattr(before, name) != getattr(after, name):
            design.append(f"question {before.id}: {name}")
    for name in _QUESTION_TEXT_FIELDS:
        if getattr(before, name) != getattr(after, name):
            text.append(f"question {before.id}: {name}")
    old_options, new_options = before.options or (), after.options or ()
    if len(old_options) != len(new_options):
        design.append(f"question {before.id}: number of options")
    elif old_options != new_options:
        # An option label that reappears at another place means the options moved, not a rewording.
        moved = any(label in old_options and old_options.index(label) != i for i, label in enumerate(new_options))
        if moved:
            design.append(f"question {before.id}: order of options")
        else:
            text.append(f"question {before.id}: option wording")


def _option_renames(old: SurveyDefinition, new: SurveyDefinition) -> dict[str, dict[str, str]]:
    """Return, per question whose options kept their number, each old option label's new wording."""
    renames = {}
    for before, after in zip(old.questions, new.questions):
        if before.options and after.options and len(before.options) == len(after.options):
            renames[before.id] = dict(zip(before.options, after.options))
    return renames


def _compare_show_if(before, after, renamed: dict, text: list[str], design: list[str]) -> None:
    """Append a change of the rule showing a question: text when it only follows the reworded options it names."""
    if before.show_if == after.show_if:
        return
    if before.show_if is not None and after.show_if is not None and before.show_if[0] == after.show_if[0]:
        names = renamed.get(before.show_if[0], {})
        if tuple(names.get(value, value) for value in before.show_if[1]) == after.show_if[1]:
            text.append(f"question {before.id}: show_if wording")
            return
    design.append(f"question {before.id}: show_if")


def describe(revision: Revision, *, responses: int, version: int, epsilons: tuple[float, float]) -> str:
    """Return the one plain sentence that says what saving this revision does to the survey's data."""
    counted = f"{responses:,} response{'' if responses == 1 else 's'}"
    stay = f"the {counted} {'stays' if responses == 1 else 'stay'} one data set"
    if revision.kind == NONE:
        return "Nothing changes: the new definition is the same as the survey's."
    if revision.kind == TEXT and not revision.settings_changes:
        return f"Text only: {stay}; the codebook records each wording with the day respondents first saw it."
    if revision.kind == TEXT:
        return (f"Text and settings: no change to how answers are randomized, so {stay}. The codebook records "
                "each wording with the day respondents first saw it.")
    if revision.kind == SETTINGS:
        return f"Settings only: no change to how answers are randomized, so {stay}."
    change = "how answers are randomized"
    if epsilons[0] != epsilons[1]:
        change += f" (ε {format_epsilon(epsilons[0], 6)} → {format_epsilon(epsilons[1], 6)})"
    if not responses:
        return f"This changes {change}. The survey has no responses yet, so the new design simply replaces the old."
    return (f"This changes {change}: responses from now on form version {version + 1}, shown apart from "
            f"version {version} and its {counted}. The survey keeps its address and invitations.")


def plain(change: str) -> str:
    """Return one listed change in plain words ("question smoker: text" -> "Question smoker: wording")."""
    words = {"text": "wording", "option wording": "wording of its options", "translations": "translations",
             "show_if wording": "wording of the answer that shows it", "show_if": "when it is shown",
             "kind": "kind of question", "min": "lowest value", "max": "highest value",
             "decline": "“prefer not to say” option", "mechanism": "randomization mechanism",
             "weight": "share of the privacy budget", "epsilon": "privacy budget ε", "thank_you": "thank-you text",
             "release_every": "release step", "allocation": "allocation of the privacy budget"}
    subject, _, what = change.partition(": ") if ": " in change else change.partition(" ")
    if subject.startswith("questions"):
        return change[:1].upper() + change[1:]
    if subject == "survey":
        return "Survey " + words.get(what, what)
    return subject[:1].upper() + subject[1:] + ": " + words.get(what, what)


def wording_history(wordings: list[tuple[str, SurveyDefinition]]) -> dict:
    """Return what respondents read from which day: {"title": [...], "questions": {id: [...]}}, changes only.

    ``wordings`` are (first day, definition) oldest first; each list holds {"from", "text"}
    (and "options" for a question with options) for the first wording and every change after.
    """
    history: dict = {"title": [], "questions": {}}
    for day, defn in wordings:
        if not history["title"] or history["title"][-1]["text"] != defn.title:
            history["title"].append({"from": day, "text": defn.title})
        for question in defn.questions:
            entry = {"from": day, "text": question.text}
            if question.options is not None:
                entry["options"] = list(question.options)
            seen = history["questions"].setdefault(question.id, [])
            if not seen or {k: v for k, v in seen[-1].items() if k != "from"} != \
                    {k: v for k, v in entry.items() if k != "from"}:
                seen.append(entry)
    return history


def done_message(done: str, number: int, responses: int, *, settings: bool = False) -> str:
    """Return the sentence that says what a stored revision did (``Store.apply_revision``'s answer).

    ``settings`` says that a text correction also changed settings (access, panel).
    """
    stay = f"the {responses:,} response{' stays' if responses == 1 else 's stay'} one data set"
    if done == "none":
        return "Nothing changed: the definition is the same as the survey's."
    if done == "text":
        return (f"{'Wording and settings changed' if settings else 'Wording corrected'}: {stay}. The codebook "
                "records each wording with the day respondents first saw it.")
    if done == "settings":
        return f"Settings changed: {stay}."
    if done == "version":
        return (f"Version {number} started: respondents now get the new design at the same address; "
                f"version {number - 1} and its {responses:,} responses are shown apart.")
    return "Design replaced: the survey had no responses yet."


def wording_changes(old: SurveyDefinition, new: SurveyDefinition) -> list[tuple[str, str, str]]:
    """Return (what, before, after) for each survey or question wording that changed (options joined by " · ")."""
    changes = []
    for name, label in (("title", "Title"), ("description", "Description"), ("thank_you", "Thank-you text")):
        before, after = getattr(old, name) or "", getattr(new, name) or ""
        if before != after:
            changes.append((label, before, after))
    if [q.id for q in old.questions] != [q.id for q in new.questions]:
        return changes
    for before, after in zip(old.questions, new.questions):
        if before.text != after.text:
            changes.append((f"Question {before.id}", before.text, after.text))
        if before.options and after.options and before.options != after.options:
            changes.append((f"Options of {before.id}", " · ".join(before.options), " · ".join(after.options)))
    return changes
