"""Benchmark instrumentation (``bench/ingest.py --lock-waits``), loaded by the server it starts, never by the product.

When $LDP_BENCH_LOCK_WAITS names a file prefix, every process counts the sleeps of the SQLite Store's
lock polling (``SqliteStore._execute``: the time a request waits for another connection's write
lock) and, where the store has group commit, the transactions it made and the statements in them;
each process writes its counts to PREFIX.<pid> as it goes and when it exits.
"""

import atexit
import json
import os
import threading
import time as _time

_PREFIX = os.environ.get("LDP_BENCH_LOCK_WAITS")


def _install():
    """Wrap the Store module's ``time.sleep`` and ``GroupCommit._commit`` with counters."""
    counts = {"sleeps": 0, "slept_s": 0.0, "transactions": 0, "statements": 0}
    lock = threading.Lock()

    def dump():
        with lock:
            text = json.dumps(counts)
        with open(f"{_PREFIX}.{os.getpid()}", "w", encoding="utf-8") as out:
            out.write(text)

    class CountingTime:
        """The time module with a counting sleep."""

        def __getattr__(self, name):
            return getattr(_time, name)

        @staticmethod
        def sleep(seconds):
            with lock:
                counts["sleeps"] += 1
                counts["slept_s"] += seconds
            _time.sleep(seconds)

    import survey.store.sqlite as sqlite_store

    sqlite_store.time = CountingTime()
    try:
        from survey.store.group_commit import GroupCommit
    except ImportError:  # a checkout from before group commit
        GroupCommit = None
    if GroupCommit is not None:
        commit = GroupCommit._commit

        def counting(store, batch):
            with lock:
                counts["transactions"] += 1
                counts["statements"] += len(batch)
            return commit(store, batch)

        GroupCommit._commit = staticmethod(counting)

    def every_second():
        while True:
            _time.sleep(1)
            dump()

    threading.Thread(target=every_second, daemon=True).start()
    atexit.register(dump)
    os.register_at_fork(after_in_child=lambda: (counts.update(sleeps=0, slept_s=0.0, transactions=0, statements=0),
                                                threading.Thread(target=every_second, daemon=True).start()))


if _PREFIX:
    _install()
