"""Checkpoint the WAL in a background thread, so that no request waits for it (the server's workers).

SQLite copies the WAL into the database file (a checkpoint) in the connection whose commit
takes the WAL past ``wal_autocheckpoint`` pages, 1000 by default: that commit waits for the
copy and for two fsyncs (synchronous=NORMAL), several milliseconds, and in a one-thread
worker every request queued behind it waits too (bench/README.md). A serving process turns
automatic checkpoints off on its connections (``Checkpointer.defer``) and checkpoints from
one daemon thread with a connection of its own. Durability does not change: a commit is in
the WAL before it is acknowledged, checkpointed or not.

A PASSIVE checkpoint never blocks a writer, but while writers keep committing the WAL is
never all copied when the next one starts, so SQLite never rewinds it and the file keeps
growing. When it holds more than RESTART_FRAMES pages, the thread follows with a RESTART
checkpoint, which holds writers off while it copies the few pages left and syncs, so that
the next commit starts the WAL from its beginning. Its connection has no busy timeout
(SQLite's busy handler sleeps at least 1 ms, up to 100 ms, while writers wait): when a
writer or a reader is in the way it tries again after a short pause, a few times, then
leaves it to the next round.
"""

from __future__ import annotations

import atexit
import sqlite3
import threading
import time

INTERVAL = 0.25
RESTART_FRAMES = 8192
RESTART_ATTEMPTS = 8
RESTART_PAUSE = 200e-6


class Checkpointer:
    """One daemon thread that checkpoints the database at ``path`` every INTERVAL seconds until ``stop``."""

    def __init__(self, path: str):
        self.path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ldp-survey checkpoints", daemon=True)
        self._thread.start()
        # At a clean exit its connection closes first, so the process's last one to close
        # checkpoints and removes the WAL file, as it does without this thread.
        atexit.register(self.stop)

    @staticmethod
    def defer(conn: sqlite3.Connection):
        """Turn off automatic checkpoints on a connection: this thread makes them instead."""
        conn.execute("PRAGMA wal_autocheckpoint = 0")

    def _run(self):
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=True)
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            while not self._stop.wait(INTERVAL):
                self.checkpoint(conn)
        finally:
            conn.close()

    @staticmethod
    def checkpoint(conn: sqlite3.Connection) -> int:
        """Copy the WAL into the database (PASSIVE, then RESTART if it grew long); return the WAL's pages before."""
        try:
            _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            for _ in range(RESTART_ATTEMPTS if frames > RESTART_FRAMES else 0):
                if not conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[0]:
                    break
                time.sleep(RESTART_PAUSE)
        except sqlite3.OperationalError:
            return -1  # the database is locked for a moment: the next round tries again
        return frames

    def stop(self):
        """End the thread (after the checkpoint it may be running) and close its connection."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
