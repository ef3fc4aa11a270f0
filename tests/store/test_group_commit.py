"""Group commit (survey/store/group_commit.py): the responses a process's threads store at once share one
SQLite transaction, and each thread still gets its own answer, stores nothing when refused, and is answered
only after the COMMIT that holds its response.

Batches are made deterministic by holding the commit lock while the threads queue, then letting go: the
first thread to take the lock commits everything queued.
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from conftest import create_from_toml, domain_answers, smoking_text

from survey.store import SqliteStore, Store, StoreUnavailable
from survey.store.admission import SubmissionConflict
from survey.store.group_commit import GroupCommit, group_for

SLUG = "smoking-2026"


@pytest.fixture
def survey(tmp_path):
    """Return (database path, design) of the smoking survey released after every response."""
    path = tmp_path / "group.db"
    return path, create_from_toml(path, smoking_text())


def batched(group: GroupCommit, calls, monkeypatch) -> tuple[list, list[int]]:
    """Run each call in its own thread while the commit lock is held, release it once all are queued.

    Return each call's value or exception, in order, and the sizes of the batches committed."""
    sizes = []
    commit = GroupCommit._commit

    def counting(store, batch):
        sizes.append(len(batch))
        return commit(store, batch)

    monkeypatch.setattr(GroupCommit, "_commit", staticmethod(counting))
    results = [None] * len(calls)

    def run(index):
        try:
            results[index] = calls[index]()
        except Exception as exc:  # the test inspects it
            results[index] = exc

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(calls))]
    with group._commit_lock:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while len(group._queue) < len(calls):
            assert time.monotonic() < deadline, "the threads did not queue"
            time.sleep(0.001)
    for thread in threads:
        thread.join(10)
    return results, sizes


def in_thread(path, action):
    """Return a call that opens its own Store (a connection belongs to its thread), runs ``action`` on it, closes it."""
    def call():
        store = Store(path, migrate=False)
        try:
            return action(store)
        finally:
            store.close()
    return call


def stored(path) -> int:
    """Return how many responses the survey holds, read on a fresh connection."""
    store = Store(path)
    try:
        return store.received_count(SLUG)
    finally:
        store.close()


def test_threads_storing_at_once_share_one_commit_and_each_gets_its_answer(survey, monkeypatch):
    path, design = survey
    answers = [domain_answers(design, smoker=i, lung_disease=i // 2, cigarettes=i) for i in range(8)]
    calls = [in_thread(path, lambda s, a=a, i=i: s.add_submission(SLUG, design["hash"], a,
                                                                    submission=f"sub-{i:02d}-abcdefgh"))
             for i, a in enumerate(answers)]
    calls += [in_thread(path, lambda s: s.add_response(SLUG, design["hash"], answers[0]))]
    results, sizes = batched(group_for(str(path)), calls, monkeypatch)
    assert results[:8] == [True] * 8 and re.fullmatch(r"[0-9a-f]{16}", results[8]), results
    assert sizes == [9]  # one transaction for all nine
    assert stored(path) == 9


def test_a_refused_statement_stores_nothing_and_leaves_the_others_stored(survey, monkeypatch):
    path, design = survey
    in_thread(path, lambda s: s.add_submission(SLUG, design["hash"], domain_answers(design),
                                               submission="kept-submission-1"))()
    calls = [
        in_thread(path, lambda s: s.add_submission(SLUG, design["hash"], domain_answers(design, smoker=1),
                                                   submission="kept-submission-1")),  # other answers: 409
        in_thread(path, lambda s: s.add_submission(SLUG, design["hash"], domain_answers(design),
                                                   submission="kept-submission-1")),  # the same again: a safe retry
        in_thread(path, lambda s: s.add_submission(SLUG, design["hash"], domain_answers(design),
                                                   submission="new-submission-2")),
        in_thread(path, lambda s: s.add_response(SLUG, design["hash"], domain_answers(design))),
    ]
    results, sizes = batched(group_for(str(path)), calls, monkeypatch)
    assert sizes == [4]
    assert isinstance(results[0], SubmissionConflict), results
    assert results[1] is False and results[2] is True and isinstance(results[3], str)
    assert stored(path) == 3  # the first, the new submission and the plain response


def test_a_transaction_lost_to_a_fault_stores_nothing_of_the_batch_and_every_thread_is_told(survey, monkeypatch):
    path, design = survey
    group = group_for(str(path))

    def lost(store):
        # What SQLite does after some faults (disk full, I/O error): it rolls the whole transaction back.
        store.conn.execute("ROLLBACK")
        return None, False

    calls = [in_thread(path, lambda s: s.add_response(SLUG, design["hash"], domain_answers(design))),
             in_thread(path, lambda s: group.run(s, lost)),
             in_thread(path, lambda s: s.add_submission(SLUG, design["hash"], domain_answers(design),
                                                        submission="lost-one-123"))]
    results, sizes = batched(group, calls, monkeypatch)
    assert sizes == [3]
    assert all(isinstance(result, StoreUnavailable) for result in results), results
    assert stored(path) == 0


def test_a_thread_alone_commits_at_once(survey):
    path, design = survey
    store = Store(path, migrate=False)
    try:
        store.add_response(SLUG, design["hash"], domain_answers(design))
        # Answered only after its COMMIT: another connection sees it at once.
        assert stored(path) == 1
        assert not store.conn.in_transaction
    finally:
        store.close()


def test_a_release_inside_a_batch_empties_the_log_after_the_commit(tmp_path, monkeypatch):
    path = tmp_path / "release.db"
    design = create_from_toml(path, smoking_text().replace("release_every = 1", "release_every = 3"))
    emptied = []
    forget = SqliteStore._forget_order
    monkeypatch.setattr(SqliteStore, "after_group_commit",
                        lambda self: emptied.append(self.conn.in_transaction) or forget(self))
    calls = [in_thread(path, lambda s: s.add_response(SLUG, design["hash"], domain_answers(design)))
             for _ in range(7)]
    results, sizes = batched(group_for(str(path)), calls, monkeypatch)
    assert sizes == [7] and all(isinstance(result, str) for result in results), results
    assert emptied == [False]  # once, after the COMMIT
    check = Store(path)
    try:
        state = check.release_state(SLUG)
        assert (state["released"], state["held"]) == (6, 1)
    finally:
        check.close()
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_in_memory_databases_never_share_a_group():
    assert group_for(":memory:") is not group_for(":memory:")
    assert group_for("/tmp/x.db") is group_for("/tmp/../tmp/x.db")
