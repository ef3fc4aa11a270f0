"""Every output of every example and of 300 random definitions is what the golden records say.

The records in tests/golden/ are written by ``python tests/golden_outputs.py`` (run from the repository
root); a changed design hash, codebook, export, sentence, preview, stored word or simulated draw fails
here and names the output that changed. Text, integers and structure compare exactly, floats within
a relative 1e-9 (absolute 1e-12), so the last bits of BLAS and libm, which differ between machines,
do not fail the suite; the perturbation tests below show both sides of that line.
"""

from __future__ import annotations

import json
import math
import random

import pytest

from survey.core.definition import parse_definition_toml

from golden_outputs import (GOLDEN, RANDOM_COUNT, RANDOM_SEED, ROOT, changed_outputs, outputs, random_definition,
                            random_outputs, random_record)

EXAMPLES = json.loads((GOLDEN / "examples.json").read_text(encoding="utf-8"))
RANDOM = json.loads((GOLDEN / "random.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_output_of_an_example_is_unchanged(name):
    record = outputs(parse_definition_toml((ROOT / "examples" / name).read_text(encoding="utf-8")))
    assert not changed_outputs(record, EXAMPLES[name], whole=True), f"{name}: outputs changed"


CHUNKS = 10  # the 300 definitions in 10 items, so parallel workers share them


def _random_definitions() -> list[dict]:
    """Return the RANDOM_COUNT definitions drawn in order from the seeded generator (cheap: no outputs)."""
    rng = random.Random(RANDOM_SEED)
    return [random_definition(rng) for _ in range(RANDOM_COUNT)]


def test_the_golden_records_hold_every_random_definition():
    assert len(RANDOM) == RANDOM_COUNT == len(_random_definitions())


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_every_output_of_300_random_definitions_is_unchanged(chunk):
    definitions = _random_definitions()
    for index in range(chunk, RANDOM_COUNT, CHUNKS):
        data = definitions[index]
        changed = changed_outputs(random_outputs(data), RANDOM[index], whole=False)
        assert not changed, f"definition {index} ({json.dumps(data)[:200]}…): {changed} changed"


def test_the_random_definitions_reach_every_mechanism():
    kinds = set()
    for name in EXAMPLES:
        kinds.update((q["kind"], q["mechanism"]) for q in EXAMPLES[name]["design"]["questions"])
    assert len(RANDOM) - sum("error" in record for record in RANDOM) >= 200
    assert {"yes_no", "choice", "multi", "number"} <= {kind for kind, _ in kinds}


def _map_floats(value, change):
    """Return a JSON value with ``change`` applied to every float in it."""
    if isinstance(value, float):
        return change(value)
    if isinstance(value, dict):
        return {key: _map_floats(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_floats(item, change) for item in value]
    return value


def _last_bits(seed: int):
    """Return a change moving each finite float by one to three units in the last place, up or down at random."""
    rng = random.Random(seed)

    def change(x: float) -> float:
        if not math.isfinite(x):
            return x
        toward = math.inf if rng.random() < 0.5 else -math.inf
        for _ in range(rng.randint(1, 3)):
            x = math.nextafter(x, toward)
        return x
    return change


def _nth(value, n: int, change):
    """Return a JSON value with ``change`` applied to its n-th nonzero finite float only (depth-first, keys sorted)."""
    seen = [0]

    def walk(item):
        if isinstance(item, float):
            if item != 0 and math.isfinite(item):
                seen[0] += 1
                if seen[0] == n + 1:
                    return change(item)
            return item
        if isinstance(item, dict):
            return {key: walk(item[key]) for key in sorted(item)}
        if isinstance(item, list):
            return [walk(element) for element in item]
        return item
    return walk(value)


def _sixth_digit(x: float) -> float:
    """Return x changed in its sixth significant digit."""
    return x + math.copysign(10 ** (math.floor(math.log10(abs(x))) - 5), x)


def _some_records():
    """Return the whole outputs of the first example and of six valid random definitions, with their records."""
    name = sorted(EXAMPLES)[0]
    cases = [(outputs(parse_definition_toml((ROOT / "examples" / name).read_text(encoding="utf-8"))),
              EXAMPLES[name], True)]
    rng = random.Random(RANDOM_SEED)
    while len(cases) < 7:
        whole = random_outputs(random_definition(rng))
        if "error" not in whole:
            cases.append((whole, random_record(whole), False))
    return cases


RECORDS = _some_records()


@pytest.mark.parametrize("seed", range(3))
def test_last_bit_changes_of_every_float_still_match(seed):
    for whole, expected, kept_whole in RECORDS:
        perturbed = _map_floats(whole, _last_bits(seed))
        assert perturbed != whole
        assert not changed_outputs(perturbed, expected, whole=kept_whole)


@pytest.mark.parametrize("key", ["design", "codebook", "aggregates_json", "previews"])
def test_a_float_changed_in_its_sixth_significant_digit_fails(key):
    for whole, expected, kept_whole in RECORDS:
        for n in (0, 3):
            changed = dict(whole, **{key: _nth(whole[key], n, _sixth_digit)})
            assert changed[key] != whole[key]
            assert changed_outputs(changed, expected, whole=kept_whole) == [key]


@pytest.mark.parametrize("key", ["aggregates_csv", "previews", "questions", "design"])
def test_a_changed_string_integer_or_shape_fails(key):
    for whole, expected, kept_whole in RECORDS:
        value = whole[key]
        variants = [value + " " if isinstance(value, str) else json.loads(json.dumps(value).replace('"', '"x', 1))]
        if isinstance(value, list):
            variants += [value[:-1], value + value[-1:]]
        if key == "design":
            first = value["questions"][0]
            variants.append(dict(value, hash=value["hash"] + "0"))
            variants.append(dict(value, questions=[dict(first, weight=1)] + value["questions"][1:]))
            variants.append(dict(value, questions=[dict(first, flip_threshold=first.get("flip_threshold", 0) + 1)]
                                 + value["questions"][1:]))
        for variant in variants:
            assert json.dumps(variant) != json.dumps(value)
            assert changed_outputs(dict(whole, **{key: variant}), expected, whole=kept_whole) == [key]


def test_a_missing_or_new_output_fails():
    whole, expected, kept_whole = RECORDS[1]
    assert changed_outputs({k: v for k, v in whole.items() if k != "sample_note"}, expected, kept_whole) \
        == ["sample_note"]
    assert changed_outputs(dict(whole, extra=1), expected, whole=kept_whole) == ["extra"]
