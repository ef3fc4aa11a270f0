"""Refuse floods of submissions: a per-client token bucket kept in memory only (nothing is stored or logged).

The client is the connection's address, kept only as a keyed hash (the key is random
per process) for at most a minute after its bucket refills. Each gunicorn worker process
keeps its own buckets, so one address may get up to workers x the limit per minute.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
import time

from flask import current_app, jsonify, request

# A class of 30-60 pupils behind one school address who all send in the same minute, plus
# retries, stays under 120 per worker; one script sending faster than 2 a second does not.
DEFAULT_PER_MINUTE = 120
WINDOW = 60.0
# Past this many addresses, full buckets (idle for a minute) are forgotten.
PRUNE_AT = 10_000


class SubmissionLimiter:
    """Allow each client ``per_minute`` submissions per minute, refilled continuously (a token bucket)."""

    def __init__(self, per_minute: int, *, clock=time.monotonic):
        if isinstance(per_minute, bool) or not isinstance(per_minute, int) or per_minute < 1:
            raise ValueError(f"per_minute must be a positive integer, got {per_minute!r}")
        self.capacity = float(per_minute)
        self.rate = per_minute / WINDOW
        self.clock = clock
        self._key = secrets.token_bytes(16)
        self._buckets: dict[bytes, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _client(self, address: str) -> bytes:
        return hashlib.blake2b(address.encode("utf-8", "replace"), key=self._key, digest_size=16).digest()

    def take(self, address: str) -> float:
        """Spend one submission of the client; return 0, or the seconds until it may send again."""
        client, now = self._client(address), self.clock()
        with self._lock:
            tokens, last = self._buckets.get(client, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - last) * self.rate)
            if tokens < 1:
                self._buckets[client] = (tokens, now)
                return (1 - tokens) / self.rate
            self._buckets[client] = (tokens - 1, now)
            if len(self._buckets) > PRUNE_AT:
                self._prune(now)
            return 0.0

    def _prune(self, now: float):
        self._buckets = {client: (tokens, last) for client, (tokens, last) in self._buckets.items()
                         if tokens + (now - last) * self.rate < self.capacity}


def check():
    """Answer 429 JSON with Retry-After when this client has sent too many submissions this minute."""
    limiter = current_app.extensions.get("ldp_submission_limiter")
    if limiter is None:
        return None
    wait = limiter.take(request.remote_addr or "")
    if not wait:
        return None
    seconds = max(1, math.ceil(wait))
    body = jsonify({"error": f"Too many answers were sent from your network in the last minute; "
                             f"please try again in {seconds} seconds. Nothing was stored.", "field": None})
    return body, 429, {"Retry-After": str(seconds)}


def init_app(app):
    """Make the app's limiter from MAX_SUBMISSIONS_PER_MINUTE (default 120; 0 turns the limit off)."""
    per_minute = app.config.setdefault("MAX_SUBMISSIONS_PER_MINUTE", DEFAULT_PER_MINUTE)
    app.extensions["ldp_submission_limiter"] = SubmissionLimiter(per_minute) if per_minute else None
