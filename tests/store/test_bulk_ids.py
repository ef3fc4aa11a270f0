"""Bulk loads at full speed: ids drawn as sorted blocks are uniform 64-bit draws in increasing order,
and add_report_columns stores them (drawing new ones when one is taken)."""

from __future__ import annotations

import numpy as np
import pytest

from survey.core.definition import parse_definition
from survey.core.design import build_design
from survey.core.simulate import complete_truth, simulate_reports
from survey.store import Store
from survey.store.ids import sorted_id_blocks

pytestmark = pytest.mark.both_backends

N, SIZE = 200_000, 7_000


def test_blocks_are_the_requested_sizes_in_increasing_order():
    blocks = list(sorted_id_blocks(N, SIZE))
    assert [len(block) for block in blocks] == [SIZE] * (N // SIZE) + [N % SIZE]
    ids = [value for block in blocks for value in block]
    assert ids == sorted(ids) and all(len(value) == 16 and int(value, 16) >= 0 for value in ids)
    assert len(set(ids)) == N
    assert list(sorted_id_blocks(0, 5)) == [] and [len(b) for b in sorted_id_blocks(3, 10)] == [3]
    with pytest.raises(ValueError):
        list(sorted_id_blocks(5, 0))


@pytest.mark.parametrize("n, size", [(N, SIZE), (N, N), (5_000, 1)])
def test_the_ids_are_uniform_over_the_key_space(n, size):
    """Counts in 64 equal ranges of the key space: each within 5 SE of n/64 (a chi-square below its 5-SE bound),
    and the lowest 16 bits uniform too (no range boundary shows)."""
    ids = np.array([int(value, 16) for block in sorted_id_blocks(n, size) for value in block], dtype=np.uint64)
    expected = n / 64
    for counts in (np.bincount((ids >> np.uint64(58)).astype(np.int64), minlength=64),
                   np.bincount((ids & np.uint64(63)).astype(np.int64), minlength=64)):
        se = np.sqrt(n * (1 / 64) * (63 / 64))
        assert np.all(np.abs(counts - expected) < 5 * se)
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < 63 + 5 * np.sqrt(2 * 63)


def design() -> dict:
    return build_design(parse_definition({
        "slug": "bulk", "title": "Bulk", "epsilon": 2.0, "release_every": 1,
        "questions": [{"id": "smoker", "kind": "yes_no", "text": "Smoke?"},
                      {"id": "sports", "kind": "multi", "text": "Sports?", "options": ["run", "swim"]}]}))


def test_given_ids_are_stored_and_a_taken_one_is_drawn_again(db_path):
    made = design()
    rng = np.random.default_rng(3)
    truth = complete_truth(made, {}, rng)
    store = Store(db_path)
    try:
        store.create_survey("", made)
        first = next(sorted_id_blocks(50, 50))
        columns, asked = simulate_reports(made, truth, 50, rng)
        store.add_report_columns("bulk", made["hash"], columns, asked=asked, ids=first)
        stored = [response["id"] for response in store.iter_responses("bulk")]
        assert stored == first
        columns, asked = simulate_reports(made, truth, 3, rng)
        store.add_report_columns("bulk", made["hash"], columns, asked=asked, ids=[first[0], "0" * 16, "f" * 16])
        stored = [response["id"] for response in store.iter_responses("bulk")]
        assert len(stored) == 53 and "0" * 16 not in stored  # the taken id made the whole batch draw anew
        assert store.question_counts("bulk") == store.recount("bulk")
        with pytest.raises(Exception, match="expected 3 ids, got 2"):
            store.add_report_columns("bulk", made["hash"], columns, asked=asked, ids=first[:2])
    finally:
        store.close()
