"""The server's WAL checkpoints, made by a background thread instead of the commits (survey.store.checkpoints)."""

from __future__ import annotations

import os
import sqlite3

from survey.store import Store
from survey.store.checkpoints import RESTART_FRAMES, Checkpointer


def _fill(store: Store, rows: int):
    store.conn.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    for _ in range(rows):
        store.conn.execute("INSERT INTO filler VALUES (randomblob(3000))")


def test_a_deferred_connection_leaves_the_wal_to_the_checkpointer(tmp_path):
    db = tmp_path / "c.db"
    store = Store(db)
    Checkpointer.defer(store.conn)
    assert store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    _fill(store, 1500)  # past SQLite's automatic checkpoint at 1000 pages
    reader = sqlite3.connect(db, isolation_level=None)
    try:
        assert Checkpointer.checkpoint(reader) >= 1500
        # The checkpoint copied every page into the database file: it alone holds the rows.
        assert os.path.getsize(db) >= 1500 * 3000
        assert reader.execute("SELECT count(*) FROM filler").fetchone()[0] == 1500
    finally:
        reader.close()
        store.close()


def test_a_long_wal_is_rewound_so_that_it_stops_growing(tmp_path):
    db = tmp_path / "c.db"
    store = Store(db)
    Checkpointer.defer(store.conn)
    _fill(store, RESTART_FRAMES + 100)
    checkpoints = sqlite3.connect(db, isolation_level=None)
    try:
        Checkpointer.checkpoint(checkpoints)
        size = os.path.getsize(f"{db}-wal")
        _fill(store, 200)  # written from the start of the WAL again: the file does not grow
        assert os.path.getsize(f"{db}-wal") == size
        assert store.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1] < 1000
    finally:
        checkpoints.close()
        store.close()


def test_the_thread_stops_and_closes_its_connection(tmp_path):
    db = tmp_path / "c.db"
    Store(db).close()
    checkpointer = Checkpointer(str(db))
    checkpointer.stop()
    assert not checkpointer._thread.is_alive()
