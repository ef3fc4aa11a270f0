"""Give each worker thread one Store (one SQLite connection), opened on first use and kept.

Migrations run once, when the app is created; a worker thread's connection only sets
its PRAGMAs when it opens. Nothing about the database is done per request. A server's
worker process leaves WAL checkpoints to a background thread (``checkpoint_in_background``).
"""

from __future__ import annotations

import threading

from flask import current_app

from ..store import Store
from ..store.location import is_postgres_url
from ..store.checkpoints import Checkpointer
from .secret import load_secret_key


class ThreadStores:
    """One Store per thread for one database, closed together when the app is done with them."""

    def __init__(self, path: str):
        self.path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[Store] = []
        self._checkpointer: Checkpointer | None = None

    def checkpoint_in_background(self, *_):
        """Let one thread of this process make the WAL checkpoints; call it in each worker after the fork.

        Threads do not survive a fork, so gunicorn calls it in every worker (post_worker_init,
        whose worker argument is ignored). Connections opened from then on leave checkpoints to it.
        Only for a SQLite file: a database server (a ``postgresql://`` URL) checkpoints itself.
        """
        if is_postgres_url(self.path) or self.path == ":memory:":
            return
        with self._lock:
            if self._checkpointer is None:
                self._checkpointer = Checkpointer(self.path)

    def get(self) -> Store:
        """Return this thread's Store, opening it on first use."""
        store = getattr(self._local, "store", None)
        if store is None:
            store = Store(self.path, migrate=False)
            if self._checkpointer is not None:
                self._checkpointer.defer(store.conn)
            self._local.store = store
            with self._lock:
                self._open.append(store)
        return store

    def discard(self):
        """Close this thread's Store, if it has one, so that its next request opens a new connection.

        After a fault (``StoreUnavailable``): a connection SQLite opened read-only stays so.
        """
        store = getattr(self._local, "store", None)
        if store is None:
            return
        self._local.store = None
        with self._lock:
            self._open = [other for other in self._open if other is not store]
        try:
            store.close()
        except Exception:  # closing is best effort: the connection is dropped either way
            pass

    def close_all(self):
        """Close every thread's connection (at shutdown or the end of a test); threads reopen on next use.

        Only call it when no request is running: a connection is used by its own thread only.
        """
        with self._lock:
            stores, self._open = self._open, []
        self._local = threading.local()
        for store in stores:
            try:
                store.close()
            except Exception:  # a connection of a thread that has exited may already be gone
                pass
        if is_postgres_url(self.path):
            from ..store.postgres import close_pools

            close_pools(self.path)


def get_store() -> Store:
    """Return the calling thread's Store."""
    return current_app.extensions["ldp_stores"].get()


def init_app(app):
    """Migrate the database once, load the session key if none is configured, and set up per-thread stores."""
    Store(app.config["DATABASE"]).close()
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = load_secret_key(app.config["DATABASE"])
    app.extensions["ldp_stores"] = ThreadStores(app.config["DATABASE"])
