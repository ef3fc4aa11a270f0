"""Tell what kind of change a new definition of a live survey is: none, text only, or design.

A *text* change (titles, descriptions, wording of questions and options, thank-you,
translations, panel completion) leaves the randomization as it was, so the responses
before and after stay one data set. A *design* change alters what a report means or how
it was drawn (questions added, removed, reordered or renamed, their kinds, options added,
removed or reordered, the "prefer not to say" option, ranges, mechanisms, weights, ε,
allocation, sample, release step, branching, series, per-wave ε₁): responses under the two designs
cannot be pooled, so a survey that has responses gets a new version.
"""

from __future__ import annotations

from dataclasses import dataclass

from .definition import SurveyDefinition

NONE = "none"
TEXT = "text"
DESIGN = "design"

# Survey fields that change what a report means or how it is drawn (see the module docstring).
_SURVEY_DESIGN_FIELDS = ("epsilon", "allocation", "sample", "release_every", "series", "wave_epsilon")
# Survey fields that change only what respondents read or where they go afterwards.
_SURVEY_TEXT_FIELDS = ("title", "description", "thank_you", "languages", "translations", "panel", "access")
_QUESTION_DESIGN_FIELDS = ("kind", "weight", "min", "max", "decline", "mechanism", "show_if")
_QUESTION_TEXT_FIELDS = ("text", "translations")


@dataclass(frozen=True)
class Revision:
    """The kind of a change (NONE, TEXT or DESIGN) and what changed, one plain phrase each."""

    kind: str
    text_changes: tuple[str, ...] = ()
    design_changes: tuple[str, ...] = ()

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
        for before, after in zip(old.questions, new.questions):
            _compare_question(before, after, text, design)
    kind = DESIGN if design else TEXT if text else NONE
    return Revision(kind, tuple(text), tuple(design))


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
