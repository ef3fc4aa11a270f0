"""Limit failed sign-ins per account, in memory (no IP address is kept anywhere)."""

from __future__ import annotations

import threading
import time
from collections import deque


class SignInThrottle:
    """Refuse sign-in for an account after ``limit`` failures within ``window`` seconds."""

    def __init__(self, *, limit: int = 5, window: float = 900.0, clock=time.monotonic):
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failures: dict[str, deque] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str) -> deque:
        failures = self._failures.setdefault(key, deque())
        cutoff = self.clock() - self.window
        while failures and failures[0] <= cutoff:
            failures.popleft()
        return failures

    def retry_after(self, account: str) -> float:
        """Return the seconds until the account may try again, 0 when it may now."""
        key = account.strip().lower()
        with self._lock:
            failures = self._recent(key)
            if len(failures) < self.limit:
                return 0.0
            return max(0.0, failures[0] + self.window - self.clock())

    def fail(self, account: str):
        """Record a failed sign-in."""
        key = account.strip().lower()
        with self._lock:
            self._recent(key).append(self.clock())

    def attempt(self, account: str) -> float:
        """Reserve a sign-in attempt, counted as a failure until ``succeed``; return 0, or the seconds to wait.

        Checking and counting happen under one lock, so guesses sent in parallel are
        counted one by one: at most ``limit`` passwords are ever checked per window.
        """
        key = account.strip().lower()
        with self._lock:
            failures = self._recent(key)
            if len(failures) >= self.limit:
                return max(0.0, failures[0] + self.window - self.clock())
            failures.append(self.clock())
            return 0.0

    def succeed(self, account: str):
        """Forget the account's failures after a successful sign-in."""
        with self._lock:
            self._failures.pop(account.strip().lower(), None)
