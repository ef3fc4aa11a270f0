"""The designs this process has read, shared by every ``Store``: parsed once, by hash (``Store.get_design``).

A design never corrected is kept under its hash, which is computed over all of it. A corrected
wording keeps its design's hash (``versioning``), so its design is kept under
``HASH~WORDING~DIGEST``, the digest of its stored text: the same hash and wording number may have
been read before from another database, or from an earlier survey of the same design that was
deleted since, and another server process may have stored the wording. Every submission reads
the survey's current key (``Store.get_design``), so a settings change made by any process (an
open survey made invitation-only) holds for the next submission in every process.
"""

from __future__ import annotations

import hashlib
import threading

DESIGNS: dict[str, dict] = {}
LOCK = threading.Lock()


def wording_key(design_hash: str, wording: int, text: str | None = None) -> str:
    """Return the key under which the design of a survey's wording is kept (its hash when never corrected).

    ``text`` is the stored design of a corrected wording (``wording`` > 0).
    """
    if not wording:
        return design_hash
    return f"{design_hash}~{wording}~{hashlib.sha256((text or '').encode()).hexdigest()[:32]}"

