"""Draw each results chart once per change of its data and share the bytes between requests.

``ChartCache.get(key, draw)`` returns the cached chart of ``key`` or calls ``draw()`` to
make it. The cache is a small LRU bounded in entries and bytes. Concurrent requests for a
key that is being drawn do not draw it again: they wait for the one drawing and get its
bytes (if that drawing fails, each waiter gets the same exception and nothing is cached).
The key should change whenever the chart would: ``web/charts.py`` uses (database path, slug,
design hash, response count, level, question, format).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Hashable

EXTENSION = "ldp_chart_cache"


@dataclass(frozen=True)
class CachedChart:
    """A drawn chart and its strong ETag (a hash of the bytes, unquoted)."""

    body: bytes
    etag: str


class ChartCache:
    """A thread-safe LRU of drawn charts that never draws the same key twice at once."""

    def __init__(self, max_entries: int = 512, max_bytes: int = 64 * 1024 * 1024):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, CachedChart] = OrderedDict()
        self._size = 0
        self._drawing: dict[Hashable, Future] = {}

    def get(self, key: Hashable, draw: Callable[[], bytes]) -> CachedChart:
        """Return the chart of ``key``, calling ``draw()`` only if no one has it or is drawing it."""
        with self._lock:
            chart = self._entries.get(key)
            if chart is not None:
                self._entries.move_to_end(key)
                return chart
            future = self._drawing.get(key)
            owner = future is None
            if owner:
                future = self._drawing[key] = Future()
        if not owner:
            return future.result()
        try:
            body = draw()
            chart = CachedChart(body=body, etag=hashlib.sha256(body).hexdigest()[:32])
        except BaseException as exc:
            with self._lock:
                del self._drawing[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._drawing[key]
            if len(body) <= self.max_bytes:
                self._entries[key] = chart
                self._size += len(body)
                while len(self._entries) > self.max_entries or self._size > self.max_bytes:
                    _, evicted = self._entries.popitem(last=False)
                    self._size -= len(evicted.body)
        future.set_result(chart)
        return chart

    def clear(self):
        """Forget every cached chart (a drawing in progress still completes for its waiters)."""
        with self._lock:
            self._entries.clear()
            self._size = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def chart_cache(app) -> ChartCache:
    """Return the app's chart cache, creating it on first use."""
    cache = app.extensions.get(EXTENSION)
    if cache is None:
        cache = app.extensions.setdefault(EXTENSION, ChartCache())
    return cache
