"""Display logic without leakage: ``show_if`` of a definition question, and the design fields it adds.

A question with ``show_if = { question = "smoker", equals = "yes" }`` (``equals`` may also be a
list of options: the question applies when the earlier answer is any of them) is shown only to
respondents whose true answer to the earlier question makes it apply. Whether it is shown
depends on a true answer, so every respondent still sends a report for it: when it does not
apply, the browser randomizes a declared "does not apply" value with the same mechanism and
epsilon, and the two branches send bodies of the same keys and shape, whose distributions
differ by no more than the question's epsilon (docs/explanation/privacy.md, Branching).

The declared value, per kind:

* ``choice`` and ``multi``: the options gain a last option "Does not apply" (for multi the
  true answer "only that option ticked"); the page never offers it.
* ``yes_no``: becomes a three-option choice (Yes, No, Does not apply) in the design, randomized
  by the choice mechanism of least variance at d = 3 (a flip of Warner's cannot hold a third value).
* ``number``: the question's ``min``, declared in the design as ``not_applicable``; the share it
  does not apply to comes from the earlier question.

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

NOT_APPLICABLE_LABEL = "Does not apply"
YES_NO_OPTIONS = ("Yes", "No")
PARENT_KINDS = ("yes_no", "choice")
SHOW_IF_FIELDS = {"question", "equals"}


def parent_levels(parent) -> tuple[str, ...]:
    """Return the values ``equals`` may name for an earlier question: yes/no, or its options."""
    if parent.kind == "yes_no":
        return ("yes", "no")
    return tuple(option for option in parent.options if not (parent.show_if and option == NOT_APPLICABLE_LABEL))


def parse_show_if(value: Any, earlier: Sequence, fail: Callable[[str], None]) -> tuple[str, tuple[str, ...]]:
    """Return (earlier question id, allowed values) of a ``show_if`` table; ``fail(message)`` names what is wrong."""
    if not isinstance(value, Mapping):
        fail(f'must be a table like {{ question = "smoker", equals = "yes" }}, got {value!r}')
    unknown = sorted(set(value) - SHOW_IF_FIELDS)
    if unknown or "question" not in value or "equals" not in value:
        fail(f"must hold exactly the fields question and equals, got {', '.join(map(repr, sorted(value))) or 'none'}")
    qid = value["question"]
    by_id = {question.id: question for question in earlier}
    if qid not in by_id:
        names = ", ".join(by_id) or "none: it is the first question"
        fail(f"question must name an earlier question (a question can depend only on one before it), "
             f"got {qid!r}; the earlier questions are {names}")
    parent = by_id[qid]
    if parent.kind not in PARENT_KINDS:
        fail(f"question {qid!r} is a {parent.kind} question; a question can depend only on a yes_no or "
             f"choice question")
    equals = value["equals"]
    allowed = (equals,) if isinstance(equals, str) else equals
    if not isinstance(allowed, (list, tuple)) or not allowed or not all(isinstance(v, str) for v in allowed):
        fail(f"equals must be an option of {qid!r} or a non-empty list of them, got {equals!r}")
    levels = parent_levels(parent)
    for level in allowed:
        if level not in levels:
            fail(f"equals names {level!r}, which is not an option of {qid!r}; its options are "
                 f"{', '.join(map(repr, levels))}")
    if len(set(allowed)) != len(allowed):
        fail(f"equals names an option twice: {list(allowed)!r}")
    return qid, tuple(allowed)


def branched_options(kind: str, options: tuple[str, ...] | None, fail: Callable[[str], None]):
    """Return a branched question's options with "Does not apply" last (None for a number)."""
    if kind == "number":
        return None
    if kind == "yes_no":
        return (*YES_NO_OPTIONS, NOT_APPLICABLE_LABEL)
    if NOT_APPLICABLE_LABEL in options:
        fail(f"{NOT_APPLICABLE_LABEL!r} is added by show_if; remove it from the options")
    return (*options, NOT_APPLICABLE_LABEL)


def design_kind(question) -> str:
    """Return the kind of a definition question's design entry: a branched yes_no is a choice."""
    return "choice" if question.kind == "yes_no" and question.show_if else question.kind


def design_fields(question, parents: Mapping) -> dict:
    """Return the design entry fields of a branched question: ``show_if`` as option indices, ``not_applicable``.

    ``show_if`` is {"question": id, "values": [...]}: the true values of the earlier question
    (as the page reads them: 1/0 for yes/no, an option index for choice) it applies to.
    ``not_applicable`` is the true value the browser randomizes when it does not apply.
    """
    if not question.show_if:
        return {}
    qid, allowed = question.show_if
    parent = parents[qid]
    if design_kind(parent) == "yes_no":
        values = [1 if level == "yes" else 0 for level in allowed]
    elif parent.kind == "yes_no":
        values = [YES_NO_OPTIONS.index(level.capitalize()) for level in allowed]
    else:
        values = [parent.options.index(level) for level in allowed]
    if question.kind == "number":
        not_applicable = question.min
    else:
        options = branched_options("yes_no", None, None) if question.kind == "yes_no" else question.options
        not_applicable = len(options) - 1
    return {"show_if": {"question": qid, "values": sorted(values)}, "not_applicable": not_applicable}


def applies(entry: Mapping, true_values: Mapping) -> Any:
    """Return whether a design entry applies given the earlier true values (numpy arrays or scalars by id)."""
    rule = entry.get("show_if")
    if not rule:
        return True
    value = true_values[rule["question"]]
    hits = [value == allowed for allowed in rule["values"]]
    result = hits[0]
    for hit in hits[1:]:
        result = result | hit
    return result


def is_branched(entry: Mapping) -> bool:
    """Return whether a design entry has display logic."""
    return bool(entry.get("show_if"))


def hide_not_applicable(entry: Mapping, values, parent_values):
    """Return n simulated true answers of a design entry with those it does not apply to set to its declared value.

    ``parent_values`` are the earlier question's n true answers (already so replaced, for a chain).
    """
    import numpy as np

    if not is_branched(entry):
        return values
    hidden = ~np.asarray(applies(entry, {entry["show_if"]["question"]: np.asarray(parent_values)}), dtype=bool)
    values = np.array(values, copy=True)
    if entry["kind"] == "multi":
        row = np.zeros(values.shape[1], dtype=values.dtype)
        row[entry["not_applicable"]] = 1
        values[hidden] = row
    else:
        values[hidden] = entry["not_applicable"]
    return values


def applicable_truth(entry: Mapping, truth):
    """Return a branched choice/multi truth given over the options it applies to, with "does not apply" added at 0."""
    if not is_branched(entry) or entry["kind"] == "number" or not isinstance(truth, tuple):
        return truth
    if len(truth) == len(entry["options"]) - 1:
        return (*truth, 0.0)
    return truth
