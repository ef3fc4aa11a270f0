"""Every output a survey's design feeds, computed for one definition: the golden record of the product.

``tests/golden/`` holds these records; the test recomputes them and compares, so a refactoring that
changes a design hash, a codebook, an export, a sentence or a single simulated draw fails.

Regenerate them (once, after an intended change) with one command from the repository root::

    python tests/golden_outputs.py

It is deterministic: the random definitions come from ``RANDOM_SEED`` and each output's draws from
the design hash.

Comparison is structure-aware. Text, integers, booleans, nulls, keys and list lengths must be
exactly equal; floats (JSON numbers with a fraction or exponent) must agree within
``REL_TOLERANCE`` relative or ``ABS_TOLERANCE`` absolute, because BLAS and libm differ in their
last bits between machines, numpy builds and thread counts. An example keeps its whole output;
a random definition keeps, per output, the SHA-256 of its *skeleton* (the value with every float
replaced by a marker) and its floats in order, written with ``FLOAT_DIGITS`` significant digits
(a repeated value by its index among the distinct ones, runs as ``value*count``).

A crosstab is kept as a fingerprint compared with a tolerance (``same_crosstabs``), not as its exact
text: its linear algebra goes through BLAS, whose last bits differ between numpy builds and CPUs,
and the random definitions include ill-conditioned crosstabs (ε of 0.14 over a handful of reports)
whose estimates run to thousands, where those bits reach the sixth decimal.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import sys
from pathlib import Path

import numpy as np

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from survey.core.aggregate import aggregate, rows_to_csv, rows_to_json, rows_to_table
from survey.exports.codebook import codebook, response_columns
from survey.core import codec
from survey.core.crosstab import CrosstabError, check_pair, crosstab, crosstab_to_csv
from survey.core.definition import DefinitionError, parse_definition, parse_definition_toml
from survey.core.design import build_design
from survey.core.explain import posterior_note, protection_note, sample_note
from survey.exports.export import responses_csv
from survey.core.planning import question_previews
from survey.core.replay import U32Stream, randomize_question_stream
from survey.core.reports import ReportError, check_report_array, validate_report
from survey.core.simulate import complete_truth, simulate_answers
from survey.web.builder_text import preview_terms

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
RANDOM_SEED = 20261124
RANDOM_COUNT = 300
_BAD_REPORTS = [2, -1, True, "1", [], [0, 1, 2], [1] * 70, None, 1.5]


def random_definition(rng: random.Random) -> dict:
    """Return a valid-looking definition drawn at random (every kind, weights, forced number mechanisms)."""
    questions = []
    for index in range(rng.randint(1, 6)):
        kind = rng.choice(["yes_no", "choice", "multi", "number"])
        question = {"id": f"q{index}_{rng.randint(0, 99)}", "kind": kind, "text": f"Question {index}?",
                    "weight": rng.choice([1.0, 0.5, 2.5, 7.0])}
        if kind in ("choice", "multi"):
            count = rng.choice([2, 3, 5, 8, 17, 40, 70])
            question["options"] = [f"option {i}" for i in range(count)]
            if rng.random() < 0.3:
                question["decline"] = True
        if kind == "number":
            low = rng.randint(-1000, 1000)
            question.update(min=low, max=low + rng.randint(1, 5000))
            if rng.random() < 0.5:
                question["mechanism"] = rng.choice(["auto", "hybrid", "piecewise", "duchi"])
        questions.append(question)
    data = {"slug": f"s-{rng.randint(0, 10**6)}", "title": "Golden", "description": "",
            "epsilon": rng.choice([0.05, 0.3, 1.0, 2.0, 4.0, 8.0, 1 / 7]), "questions": questions}
    if rng.random() < 0.3:
        data.update(allocation="sample", sample=rng.randint(1, len(questions)))
    return data


def _errors(question: dict) -> list[str]:
    out = []
    for bad in _BAD_REPORTS:
        try:
            validate_report(question, bad)
            out.append("accepted")
        except ReportError as exc:
            out.append(exc.message)
    return out


def outputs(defn) -> dict:
    """Return every output of one parsed definition as JSON-ready values (text where the product writes text)."""
    design = build_design(defn)
    rng = np.random.default_rng(int(design["hash"][:8], 16))
    truth = complete_truth(design, {}, rng)
    answers = simulate_answers(design, truth, 120, rng)
    rows = aggregate(design, answers)
    responses = [{"id": f"r{index:04d}", "received_day": "2026-11-24", "answers": answer}
                 for index, answer in enumerate(answers)]
    record = {
        "design": design, "codebook": codebook(design), "columns": response_columns(design),
        "aggregates_csv": rows_to_csv(rows), "aggregates_json": rows_to_json(rows),
        "aggregates_table": rows_to_table(rows), "responses_csv": responses_csv(design, responses),
        "posterior_note": posterior_note(design), "sample_note": sample_note(design),
        "previews": question_previews(defn, design=design),
        "preview_terms": [preview_terms(p, entry)
                          for p, entry in zip(question_previews(defn, design=design), design["questions"])],
        "questions": {},
    }
    for question in design["questions"]:
        qid = question["id"]
        reports = [answer[qid] for answer in answers if qid in answer]
        words = codec.encode_column(question, reports) if reports else np.zeros((0, codec.word_count(question)),
                                                                                  dtype=np.int64)
        stream = U32Stream([(2654435761 * i + 12345) % 2**32 for i in range(4000)])
        kind = question["kind"]
        true_value = {"yes_no": 1, "choice": 0, "multi": [1] + [0] * (len(question.get("options", [])) - 1),
                      "number": question.get("max")}[kind]
        record["questions"][qid] = {
            "note": protection_note(question),
            "words": words.tolist(), "tally": codec.tally(question, words).tolist(),
            "increments": [codec.tally_increments(question, report) for report in reports[:5]],
            "decoded": [codec.decode_report(question, row) for row in words[:5].tolist()],
            "indicators": np.asarray(codec.indicators(question, words[:5])).tolist(),
            "array": check_report_array(question, np.asarray(reports, dtype=np.int64)).tolist()[:5] if reports else [],
            "replay": randomize_question_stream(question, true_value, stream),
            "errors": _errors(question),
        }
    qs = design["questions"]
    pairs = [(a, b) for a in qs for b in qs if a["id"] != b["id"]][:3]
    record["crosstabs"] = []
    for a, b in pairs:
        try:
            check_pair(a, b)
        except CrosstabError as exc:
            record["crosstabs"].append(f"refused: {exc}")
            continue
        both = [answer for answer in answers if a["id"] in answer and b["id"] in answer]
        if len(both) < 2:
            record["crosstabs"].append("too few")
            continue
        words_a = codec.encode_column(a, [answer[a["id"]] for answer in both])
        words_b = codec.encode_column(b, [answer[b["id"]] for answer in both])
        record["crosstabs"].append(crosstab_fingerprint(crosstab_to_csv(crosstab(a, b, words_a, words_b))))
    return json.loads(json.dumps(record, default=str))


_DECIMAL = re.compile(r"-?[0-9]+\.[0-9]+")
CROSSTAB_TOLERANCE = 1e-7


def crosstab_fingerprint(text: str) -> dict:
    """Return a crosstab CSV as its text with the numbers blanked (hashed) and weighted sums of the numbers."""
    numbers = [float(number) for number in _DECIMAL.findall(text)]
    return {"shape": hashlib.sha256(_DECIMAL.sub("#", text).encode()).hexdigest(), "count": len(numbers),
            "sums": [math.fsum(numbers), math.fsum(x * x for x in numbers),
                     math.fsum((i % 7 + 1) * x for i, x in enumerate(numbers))],
            "scale": [math.fsum(abs(x) for x in numbers), math.fsum(x * x for x in numbers),
                      math.fsum((i % 7 + 1) * abs(x) for i, x in enumerate(numbers))]}


def same_crosstabs(got: list, expected: list) -> bool:
    """Whether two lists of crosstab records agree: refusals exactly, fingerprints within CROSSTAB_TOLERANCE."""
    if len(got) != len(expected):
        return False
    for mine, theirs in zip(got, expected):
        if isinstance(mine, str) or isinstance(theirs, str):
            if mine != theirs:
                return False
        elif (mine["shape"], mine["count"]) != (theirs["shape"], theirs["count"]) or any(
                abs(a - b) > CROSSTAB_TOLERANCE * (scale + 1)
                for a, b, scale in zip(mine["sums"], theirs["sums"], theirs["scale"])):
            return False
    return True


REL_TOLERANCE = 1e-9
ABS_TOLERANCE = 1e-12
FLOAT_DIGITS = 12
_FLOAT_MARK = "\u0000float"


def digest(value) -> str:
    """Return the SHA-256 of a value's canonical JSON."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def split_floats(value, floats: list) -> object:
    """Return the value's skeleton (every float replaced by a marker), appending its floats to ``floats`` in order."""
    if isinstance(value, float):
        floats.append(value)
        return _FLOAT_MARK
    if isinstance(value, dict):
        return {key: split_floats(value[key], floats) for key in sorted(value)}
    if isinstance(value, list):
        return [split_floats(item, floats) for item in value]
    return value


def pack_floats(floats: list[float]) -> str:
    """Return floats as text: a new value with FLOAT_DIGITS digits, a repeat as ``#k``, a run as ``token*count``."""
    tokens, seen, index = [], {}, 0
    while index < len(floats):
        end = index
        while end + 1 < len(floats) and floats[end + 1] == floats[index]:
            end += 1
        text = f"{floats[index]:.{FLOAT_DIGITS}g}"
        if text in seen:
            token = f"#{seen[text]}"
        else:
            seen[text] = len(seen)
            token = text
        tokens.append(token if end == index else f"{token}*{end - index + 1}")
        index = end + 1
    return " ".join(tokens)


def unpack_floats(text: str) -> list[float]:
    """Return the floats written by pack_floats."""
    floats, distinct = [], []
    for token in text.split():
        value, _, count = token.partition("*")
        if value.startswith("#"):
            number = distinct[int(value[1:])]
        else:
            number = float(value)
            distinct.append(number)
        floats.extend([number] * int(count or 1))
    return floats


def close(a: float, b: float) -> bool:
    """Whether two floats agree within REL_TOLERANCE relative or ABS_TOLERANCE absolute (NaN equals NaN)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(REL_TOLERANCE * max(abs(a), abs(b)), ABS_TOLERANCE)


def same_floats(got: list[float], expected: list[float]) -> bool:
    """Whether two float lists have one length and agree pairwise within the tolerance."""
    return len(got) == len(expected) and all(close(a, b) for a, b in zip(got, expected))


def same_value(got, expected) -> bool:
    """Whether two JSON values are equal: structure, text and integers exactly, floats within the tolerance."""
    if isinstance(got, float) or isinstance(expected, float):
        return isinstance(got, float) and isinstance(expected, float) and close(got, expected)
    if isinstance(got, dict) or isinstance(expected, dict):
        return (isinstance(got, dict) and isinstance(expected, dict) and sorted(got) == sorted(expected)
                and all(same_value(got[key], expected[key]) for key in got))
    if isinstance(got, list) or isinstance(expected, list):
        return (isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected)
                and all(same_value(a, b) for a, b in zip(got, expected)))
    return type(got) is type(expected) and got == expected


def compact(value) -> object:
    """Return one output's compact record: the skeleton's digest, with its packed floats when it has any."""
    floats: list[float] = []
    skeleton = digest(split_floats(value, floats))
    return {"skeleton": skeleton, "floats": pack_floats(floats)} if floats else skeleton


def same_compact(value, expected) -> bool:
    """Whether an output matches its compact record: the skeleton exactly, the floats within the tolerance."""
    floats: list[float] = []
    skeleton = digest(split_floats(value, floats))
    if isinstance(expected, str):
        return not floats and skeleton == expected
    return skeleton == expected["skeleton"] and same_floats(floats, unpack_floats(expected["floats"]))


def random_outputs(data: dict) -> dict:
    """Return the whole outputs of one random definition, or ``{"error": message}`` if it is refused."""
    try:
        return outputs(parse_definition(data))
    except DefinitionError as exc:
        return {"error": str(exc)}


def random_record(whole: dict) -> dict:
    """Return the compact record random.json keeps of one random definition's whole outputs."""
    return {key: value if key in ("crosstabs", "error") else compact(value) for key, value in whole.items()}


def changed_outputs(record: dict, expected: dict, whole: bool) -> list[str]:
    """Return the keys whose outputs differ from the golden record (``whole``: kept whole, else compact)."""
    changed = []
    for key in sorted(set(record) | set(expected)):
        if key not in record or key not in expected:
            changed.append(key)
        elif key == "crosstabs" and isinstance(record[key], list):
            if not same_crosstabs(record[key], expected[key]):
                changed.append(key)
        elif not (same_value(record[key], expected[key]) if whole or key == "error"
                  else same_compact(record[key], expected[key])):
            changed.append(key)
    return changed


def random_records() -> list[dict]:
    """Return, for each of RANDOM_COUNT random definitions, the compact record of each of its outputs (or its error)."""
    rng = random.Random(RANDOM_SEED)
    return [random_record(random_outputs(random_definition(rng))) for _ in range(RANDOM_COUNT)]


def example_records() -> dict:
    """Return the whole outputs of every example definition, by file name."""
    return {path.name: outputs(parse_definition_toml(path.read_text(encoding="utf-8")))
            for path in sorted((ROOT / "examples").glob("*.toml"))}


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, value in (("examples.json", example_records()), ("random.json", random_records())):
        (GOLDEN / name).write_text(json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1) + "\n",
                                   encoding="utf-8")
    print("wrote", GOLDEN, file=sys.stderr)


if __name__ == "__main__":
    main()
