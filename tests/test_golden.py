"""Every output of every example and of 300 random definitions is what it was before the mechanisms became objects.

The records in tests/golden/ were written by ``python tests/golden_outputs.py`` from the code
as it stood before the refactoring; a changed design hash, codebook, export, sentence, preview,
stored word or simulated draw fails here and names the output that changed.
"""

from __future__ import annotations

import json
import random

import pytest

from survey.core.definition import DefinitionError, parse_definition, parse_definition_toml

from golden_outputs import GOLDEN, RANDOM_COUNT, RANDOM_SEED, ROOT, digest, outputs, random_definition, same_crosstabs

EXAMPLES = json.loads((GOLDEN / "examples.json").read_text(encoding="utf-8"))
RANDOM = json.loads((GOLDEN / "random.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_output_of_an_example_is_unchanged(name):
    record = outputs(parse_definition_toml((ROOT / "examples" / name).read_text(encoding="utf-8")))
    for key, value in EXAMPLES[name].items():
        same = same_crosstabs(record[key], value) if key == "crosstabs" else record[key] == value
        assert same, f"{name}: {key} changed"
    assert sorted(record) == sorted(EXAMPLES[name])


def test_every_output_of_300_random_definitions_is_unchanged():
    assert len(RANDOM) == RANDOM_COUNT
    rng = random.Random(RANDOM_SEED)
    for index, expected in enumerate(RANDOM):
        data = random_definition(rng)
        try:
            record = {key: value if key == "crosstabs" else digest(value)
                      for key, value in outputs(parse_definition(data)).items()}
        except DefinitionError as exc:
            record = {"error": str(exc)}
        changed = sorted(key for key in set(record) | set(expected)
                         if not (same_crosstabs(record[key], expected[key]) if key == "crosstabs" and key in record
                                 and key in expected else record.get(key) == expected.get(key)))
        assert not changed, f"definition {index} ({json.dumps(data)[:200]}…): {changed} changed"


def test_the_random_definitions_reach_every_mechanism():
    kinds = set()
    for name in EXAMPLES:
        kinds.update((q["kind"], q["mechanism"]) for q in EXAMPLES[name]["design"]["questions"])
    assert len(RANDOM) - sum("error" in record for record in RANDOM) >= 200
    assert {"yes_no", "choice", "multi", "number"} <= {kind for kind, _ in kinds}
