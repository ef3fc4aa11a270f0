"""Refuse floods of submissions: a per-client limit counted in this server's memory or in the shared database.

FLOOD_STORE chooses where (``flood_store``): "memory" counts in one server only, "database"
in the database every server shares. Neither keeps an address, nor logs one.

In memory, the client is the connection's address, kept only as a keyed hash (the key is
random per server start). The buckets live in one anonymous shared memory table made when the app is
created, in gunicorn's master before the workers fork (``preload_app``), so every worker
process counts against the same buckets: one address gets the limit once, however many
workers serve it. A POSIX record lock on an unlinked temporary file guards the table between
processes (the kernel releases it if a worker dies holding it), a thread lock within each.
Where there is no ``fcntl`` (Windows), there is no fork either: a server is one process of
threads (waitress, ``flask run``), each process maps a table of its own, and the thread lock
alone guards it, so the limit holds within the process; processes started separately count
on their own (use the "database" store to count across them). ``fcntl`` is imported when a
limiter is made, never when the module is, so the package imports everywhere.

The table has a fixed size. A client takes the first slot along a short probe sequence
that is its own, empty, or idle (its bucket refilled to full); when all of them hold other
clients who sent in the last minute, it shares its first slot with one of them. Sharing only
ever makes the limit stricter, never looser, and needs thousands of active addresses.

In the database, see ``DatabaseLimiter``.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import mmap
import os
import secrets
import struct
import tempfile
import threading
import time
import weakref
from contextlib import contextmanager

from flask import current_app, jsonify, request

from ..store import Store

# A class of 30-60 pupils behind one school address who all send in the same minute, plus
# retries, stays under 120; one script sending faster than 2 a second does not.
DEFAULT_PER_MINUTE = 120
WINDOW = 60.0
FLOOD_STORES = ("memory", "database")
FLOOD_STORE_ENV = "LDP_SURVEY_FLOOD_STORE"
# The WSGI environ key of the wait ``take`` gave a request the fast path counted already.
TAKEN = "ldp_survey.flood_wait"
SLOTS = 1 << 15
PROBES = 8
# A slot: the client's keyed hash (all zero when empty), its tokens, and when they were counted.
_SLOT = struct.Struct("<16sdd")
_EMPTY = bytes(16)


def _fcntl():
    """Return the fcntl module, or None where the platform has none (Windows)."""
    try:
        import fcntl
    except ImportError:
        return None
    return fcntl


class SubmissionLimiter:
    """Allow each client ``per_minute`` submissions per minute, refilled continuously (a token bucket)."""

    def __init__(self, per_minute: int, *, clock=time.monotonic, slots: int = SLOTS):
        if isinstance(per_minute, bool) or not isinstance(per_minute, int) or per_minute < 1:
            raise ValueError(f"per_minute must be a positive integer, got {per_minute!r}")
        if slots < PROBES:
            raise ValueError(f"slots must be at least {PROBES}, got {slots!r}")
        self.capacity = float(per_minute)
        self.rate = per_minute / WINDOW
        self.clock = clock
        self.slots = slots
        self._key = secrets.token_bytes(16)
        # Anonymous memory is mapped MAP_SHARED: a forked worker writes the pages its master made.
        self._table = mmap.mmap(-1, slots * _SLOT.size)
        self._threads = threading.Lock()
        self._fcntl = _fcntl()
        if self._fcntl is not None:
            self._lock_fd, path = tempfile.mkstemp(prefix="ldp-survey-flood-")
            os.unlink(path)
            weakref.finalize(self, os.close, self._lock_fd)

    def _client(self, address: str) -> bytes:
        return hashlib.blake2b(address.encode("utf-8", "replace"), key=self._key, digest_size=16).digest()

    @contextmanager
    def _locked(self):
        """Hold the table: the thread lock, then the record lock shared with forked workers where there is fcntl."""
        with self._threads:
            if self._fcntl is None:
                yield
                return
            self._fcntl.lockf(self._lock_fd, self._fcntl.LOCK_EX)
            try:
                yield
            finally:
                self._fcntl.lockf(self._lock_fd, self._fcntl.LOCK_UN)

    def _refilled(self, tokens: float, last: float, now: float) -> float:
        return min(self.capacity, tokens + (now - last) * self.rate)

    def _slot(self, client: bytes, now: float) -> tuple[int, bytes, float, float]:
        """Return (offset, owner, tokens, last) of the client's slot: its own, a fresh one, or one it shares."""
        start = int.from_bytes(client[:8], "little") % self.slots
        free = None
        for step in range(PROBES):
            offset = (start + step) % self.slots * _SLOT.size
            owner, tokens, last = _SLOT.unpack_from(self._table, offset)
            if owner == client:
                return offset, client, tokens, last
            if free is None and (owner == _EMPTY or self._refilled(tokens, last, now) >= self.capacity):
                free = offset
        if free is not None:
            return free, client, self.capacity, now
        offset = start * _SLOT.size
        return (offset, *_SLOT.unpack_from(self._table, offset))

    def take(self, address: str) -> float:
        """Spend one submission of the client; return 0, or the seconds until it may send again."""
        client, now = self._client(address), self.clock()
        with self._locked():
            offset, owner, tokens, last = self._slot(client, now)
            tokens = self._refilled(tokens, last, now)
            spent = tokens >= 1
            _SLOT.pack_into(self._table, offset, owner, tokens - 1 if spent else tokens, now)
        return 0.0 if spent else (1 - tokens) / self.rate

    def holds(self, address: str) -> bool:
        """Return whether the table holds a bucket of this address (for tests: it is found only by its hash)."""
        return self._table.find(self._client(address)) != -1


class DatabaseLimiter:
    """Allow each client ``per_minute`` submissions per minute, counted in the database every server shares.

    Time is cut into windows of one minute, numbered from the Unix epoch (the servers'
    clocks must agree to a second or so). A client is stored as an HMAC of its address
    whose key is itself an HMAC of SECRET_KEY and the window's number: the same on every
    server, different in every window, and never stored. A row holds only that hash, the
    window's number and a count (``survey.store.flood``), and is deleted once it no longer
    weighs in an estimate: two windows later, at the next submission to any server (or the
    next server start). The estimate slides: the previous window's count, weighted by the
    part of it still within the last minute, plus the current one.
    """

    def __init__(self, per_minute: int, stores, secret_key: str, *, clock=time.time, window: float = WINDOW):
        if isinstance(per_minute, bool) or not isinstance(per_minute, int) or per_minute < 1:
            raise ValueError(f"per_minute must be a positive integer, got {per_minute!r}")
        if not secret_key:
            raise ValueError("the database flood limit needs the app's SECRET_KEY, and it is empty")
        self.limit = per_minute
        self.stores = stores
        self.clock = clock
        self.window = window
        self._secret = secret_key.encode("utf-8")

    def window_key(self, number: int) -> bytes:
        """Return the hash key of window ``number``, the same on every server with this SECRET_KEY."""
        return hmac.new(self._secret, b"ldp-survey flood window %d" % number, hashlib.sha256).digest()

    def client(self, address: str, number: int) -> str:
        """Return the stored form of a client in window ``number``: a keyed hash of its address."""
        return hmac.new(self.window_key(number), address.encode("utf-8", "replace"), hashlib.sha256).hexdigest()[:32]

    def take(self, address: str) -> float:
        """Spend one submission of the client; return 0, or the seconds until it may send again."""
        now = self.clock()
        number = math.floor(now / self.window)
        elapsed = now / self.window - number
        counted, current, previous = self.stores.get().flood_take(
            self.client(address, number), number, self.client(address, number - 1), self.limit, 1 - elapsed)
        return 0.0 if counted else self._wait(current, previous, elapsed)

    def _wait(self, current: int, previous: int, elapsed: float) -> float:
        """Return the seconds until one more submission fits the estimate, if the client sends nothing meanwhile."""
        if current < self.limit:
            # Within this window, once the previous window's weight has fallen enough.
            return max(0.0, 1 - (self.limit - 1 - current) / previous - elapsed) * self.window
        # In the next window, where this window's count is the previous one.
        return (1 - elapsed + 1 - (self.limit - 1) / current) * self.window


class FloodStoreError(ValueError):
    """The configured flood store is neither "memory" nor "database"."""


def flood_store(config) -> str:
    """Return where the flood limit counts: FLOOD_STORE, else $LDP_SURVEY_FLOOD_STORE, else by the database.

    The default is "database" for a database server's URL (several servers may share it)
    and "memory" for a SQLite file (one server, counted without a write per submission).
    """
    from .secret import is_url

    chosen = config.get("FLOOD_STORE") or os.environ.get(FLOOD_STORE_ENV) or (
        "database" if is_url(str(config["DATABASE"])) else "memory")
    if chosen not in FLOOD_STORES:
        raise FloodStoreError(f"the flood store must be {' or '.join(FLOOD_STORES)}, got {chosen!r} "
                              f"(from FLOOD_STORE, --flood-store or {FLOOD_STORE_ENV})")
    return chosen


def check():
    """Answer 429 JSON with Retry-After when this client has sent too many submissions this minute.

    A submission the fast path (``fast_submissions``) already counted carries its wait in the
    environ under TAKEN: it is not counted twice.
    """
    limiter = current_app.extensions.get("ldp_submission_limiter")
    if limiter is None:
        return None
    wait = request.environ.get(TAKEN)
    if wait is None:
        wait = limiter.take(request.remote_addr or "")
    if not wait:
        return None
    seconds = max(1, math.ceil(wait))
    body = jsonify({"error": f"Too many answers were sent from your network in the last minute; "
                             f"please try again in {seconds} seconds. Nothing was stored.", "field": None})
    return body, 429, {"Retry-After": str(seconds)}


def init_app(app):
    """Make the app's limiter from MAX_SUBMISSIONS_PER_MINUTE (default 120; 0 turns the limit off) and FLOOD_STORE.

    Call it after ``db.init_app``: the database limiter needs the stores and SECRET_KEY.
    """
    per_minute = app.config.setdefault("MAX_SUBMISSIONS_PER_MINUTE", DEFAULT_PER_MINUTE)
    where = app.config["FLOOD_STORE"] = flood_store(app.config)
    limiter = None
    if per_minute and where == "memory":
        limiter = SubmissionLimiter(per_minute)
    elif per_minute:
        limiter = DatabaseLimiter(per_minute, app.extensions["ldp_stores"], app.config["SECRET_KEY"])
        store = Store(app.config["DATABASE"], migrate=False)
        try:
            store.flood_sweep(math.floor(time.time() / limiter.window))
        finally:
            store.close()
    app.extensions["ldp_submission_limiter"] = limiter
