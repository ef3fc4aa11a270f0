"""Group commit: the responses that a process's threads store at the same moment share one SQLite transaction.

Each response is one statement (``SqliteStore.add_response``, ``add_submission`` with a
submission id). Committed one by one, every response pays for the write lock, for writing each
page it touched to the WAL (the survey's row, its tallies, its report patterns, the held-responses
table: the same few pages again and again) and, under load, for polling while the other worker
holds the lock. Here a thread queues its statement and takes the process's commit lock; the first
to get it (the leader) runs every statement queued so far in one ``BEGIN IMMEDIATE`` … ``COMMIT``
on its own connection, then wakes the others with their own results. A thread alone commits
alone, at once: no request waits for company.

What it keeps (tests/store/test_group_commit.py):
* **Nothing stored from a refused request.** Each statement is atomic on its own: one that
  fails (a closed survey, a replaced design, a submission id stored with other answers, an
  id collision retried inside the work) is rolled back by SQLite alone and its thread gets
  its error; the others go on. If the transaction itself fails (a fault at a statement that
  rolls the transaction back, or at COMMIT), every thread of the batch gets the error and
  nothing of the batch is stored.
* **An acknowledgement is durable as before.** A thread returns only after the COMMIT that
  holds its response, so a 201 means the response is in the WAL (synchronous = NORMAL: it
  survives the server being killed; FULL: a power cut too), exactly as one commit per
  response promised.
* **No arrival order.** Rows keep their random ids; one transaction holds a few responses
  instead of one, written to the WAL together, which orders them less, not more; the WAL is
  still emptied after every release (the leader does it after the COMMIT, having let go of the
  commit lock so the next group goes on meanwhile, as other requests did while a releasing request
  emptied it before; nobody of the group is answered before it is done).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

# Largest number of statements in one transaction: bounds how long the write lock is held.
MAX_BATCH = 64


class _Item:
    """One queued statement: the work to run on the leader's store, then its result or its error."""

    __slots__ = ("work", "claimed", "finished", "value", "error", "after")

    def __init__(self, work: Callable[[Any], tuple[Any, bool]]):
        self.work = work
        self.claimed = False  # taken into a batch by a leader
        self.finished = threading.Event()  # committed (or failed), and the log emptied if it asked for that
        self.value = None
        self.error: BaseException | None = None
        self.after = False


class GroupCommit:
    """The queue and commit lock that one process's stores of one database share."""

    def __init__(self):
        self._queue: list[_Item] = []
        self._queue_lock = threading.Lock()
        self._commit_lock = threading.Lock()

    def run(self, store, work: Callable[[Any], tuple[Any, bool]]):
        """Run ``work(store)`` inside a transaction shared with the statements queued beside it; return its value.

        ``work`` runs one statement on the store it is given (the leader's, maybe not the caller's) and
        returns (value, after): ``after`` asks for ``store.after_group_commit()`` once the COMMIT is done,
        which the leader runs after letting go of the commit lock (the next group need not wait for it) and
        before anyone of its group is answered. ``work`` raises to refuse; its statement must then have
        stored nothing.
        """
        item = _Item(work)
        with self._queue_lock:
            self._queue.append(item)
        while not item.claimed:
            batch = None
            with self._commit_lock:
                if not item.claimed:
                    with self._queue_lock:
                        batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                    for queued in batch:
                        queued.claimed = True
                    self._commit(store, batch)
            if batch is not None:
                self._finish(store, batch)
        item.finished.wait()
        if item.error is not None:
            raise item.error
        return item.value

    @staticmethod
    def _commit(store, batch: list[_Item]):
        """Run a batch in one write transaction on ``store``; give every item its value or its error."""
        try:
            with store._write() as conn:
                for item in batch:
                    if not conn.in_transaction:
                        # A fault rolled the transaction back: what ran before is gone, and
                        # nothing may run outside a transaction.
                        raise store.transaction_lost()
                    try:
                        item.value, item.after = item.work(store)
                    except Exception as exc:  # this statement alone stored nothing
                        item.error = exc
                if not conn.in_transaction:
                    raise store.transaction_lost()
        except BaseException as exc:
            for item in batch:  # the whole transaction was rolled back
                item.error, item.after = exc, False
            if not isinstance(exc, Exception):
                for item in batch:
                    item.finished.set()
                raise

    @staticmethod
    def _finish(store, batch: list[_Item]):
        """After a batch's COMMIT: empty the log if a statement asked for it, then wake every thread of the batch."""
        try:
            if any(item.after for item in batch if item.error is None):
                store.after_group_commit()
        finally:
            for item in batch:
                item.finished.set()


_GROUPS: dict[str, GroupCommit] = {}
_GROUPS_LOCK = threading.Lock()


def group_for(path: str) -> GroupCommit:
    """Return the GroupCommit of the database file at ``path`` in this process (its own for an in-memory database)."""
    if path == ":memory:" or path.startswith("file:"):
        return GroupCommit()
    key = os.path.realpath(path)
    with _GROUPS_LOCK:
        return _GROUPS.setdefault(key, GroupCommit())
