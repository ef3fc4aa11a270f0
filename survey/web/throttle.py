"""Limit wrong passwords per (account, client), with counts in the database that every process and the CLI share.

A client is its address kept only as a keyed hash (BLAKE2b, keyed as below): five wrong
passwords from one address lock that address out of that account for 15 minutes, and nobody
else. A second, account-wide count (100 wrong passwords in 15 minutes from all addresses together) stops
guessing spread over many addresses; it is not applied to a browser that has signed in to
the account before (``known_devices``), so it cannot lock the owner out of their own devices.
A third count, per address over every email (20 in 15 minutes, also not applied to a known
browser), bounds how many emails one address can try: an unknown email is refused without a
password hash (``research.check_password``), so its answer is fast and tells that no such
account exists; this count is what limits that probing.

The hash key is derived from the app's SECRET_KEY (an HMAC of it), so every server of one
database counts a client's failures together and no server stores a key. It is fixed rather
than rotated: a row is deleted 15 minutes after the failure it counts, so a rotating key
would make no stored hash unlinkable any sooner, and a count must be found under the same
key for its whole window (a key changed mid-window would forget the failures before). A new
SECRET_KEY changes it.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from dataclasses import dataclass

from ..store.signin import ACCOUNT_WIDE, ANY_ACCOUNT, account_key

LIMIT = 5
WINDOW = 15 * 60.0
ACCOUNT_LIMIT = 100
ACCOUNT_WINDOW = 15 * 60.0
# A client's attempts over every email: bounds how many emails one address can probe (a
# sign-in with an unknown email is refused without a password hash, so it is fast).
CLIENT_LIMIT = 20
CLIENT_WINDOW = 15 * 60.0


@dataclass(frozen=True)
class Lock:
    """A refused sign-in: how long until it may try again, whether only this device is locked, and on every email."""

    seconds: float
    this_device: bool
    any_account: bool = False

    @property
    def minutes(self) -> int:
        """Return the whole minutes to wait, rounded up (never less than 1)."""
        return max(1, math.ceil(self.seconds / 60))


class SignInThrottle:
    """Refuse sign-in for (account, client) after ``limit`` failures within ``window`` seconds.

    ``stores`` gives the calling thread's Store (``ThreadStores``), ``secret_key`` is the app's
    SECRET_KEY. An attempt is reserved (counted as a failure) in one write transaction before
    the password is checked, and forgotten when it succeeds: guesses sent in parallel, by
    threads or by processes, are counted one by one, so at most ``limit`` passwords are
    checked per window.
    """

    def __init__(self, stores, secret_key: str, *, limit: int = LIMIT, window: float = WINDOW,
                 account_limit: int = ACCOUNT_LIMIT, account_window: float = ACCOUNT_WINDOW,
                 client_limit: int = CLIENT_LIMIT, client_window: float = CLIENT_WINDOW, clock=time.time):
        self.stores = stores
        self.limit = limit
        self.window = window
        self.account_limit = account_limit
        self.account_window = account_window
        self.client_limit = client_limit
        self.client_window = client_window
        self.clock = clock
        if not secret_key:
            raise ValueError("the sign-in throttle needs the app's SECRET_KEY, and it is empty")
        self._key = hmac.new(secret_key.encode("utf-8"), b"ldp-survey sign-in client", hashlib.sha256).digest()[:32]

    def client(self, address: str) -> str:
        """Return the stored key of a client: a keyed hash of its address (the address itself is never kept)."""
        return hashlib.blake2b(address.encode("utf-8", "replace"), key=self._key, digest_size=16).hexdigest()

    def _limits(self, account: str, address: str, known: bool) -> list[tuple[str, str, int, float]]:
        key, client = account_key(account), self.client(address)
        limits = [(key, client, self.limit, self.window)]
        if not known:
            limits.append((key, ACCOUNT_WIDE, self.account_limit, self.account_window))
            limits.append((ANY_ACCOUNT, client, self.client_limit, self.client_window))
        return limits

    def attempt(self, account: str, address: str, *, known: bool = False) -> Lock | None:
        """Reserve a sign-in attempt, counted as a failure until ``succeed``; return None, or the Lock that refuses it.

        ``known`` is true for a browser that has signed in to this account before: the
        account-wide count and the address's count over every email do not apply to it.
        """
        wait, full = self.stores.get().sign_in_reserve(self._limits(account, address, known), self.clock())
        if full is None:
            return None
        return Lock(max(0.0, wait), full[1] != ACCOUNT_WIDE, full[0] == ANY_ACCOUNT)

    def succeed(self, account: str, address: str, *, known: bool = False):
        """Forget this client's failures on the account after a successful sign-in (``known`` as given to attempt)."""
        key, client = account_key(account), self.client(address)
        shared = [] if known else [(key, ACCOUNT_WIDE), (ANY_ACCOUNT, client)]
        self.stores.get().sign_in_forget(key, client, shared)
