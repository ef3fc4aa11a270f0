"""The designs this process has read, shared by every ``Store``: parsed once, by hash (``Store.get_design``).

A corrected wording keeps its design's hash (``versioning``), so its design is kept under
``HASH~WORDING``. Storing a new wording forgets what this process kept under its key
(``forget_wording``): the same key may have been read before from another database, or from
an earlier survey of the same slug and design that was deleted since.
"""

from __future__ import annotations

import threading

DESIGNS: dict[str, dict] = {}
RECENT: dict[tuple[str, str], dict] = {}
LOCK = threading.Lock()


def wording_key(design_hash: str, wording: int) -> str:
    """Return the key under which the design of a survey's wording is kept (its hash when never corrected)."""
    return design_hash if not wording else f"{design_hash}~{wording}"


def forget_wording(path: str, slug: str, design_hash: str, wording: int) -> None:
    """Forget the design kept for this wording and the survey's recent design, so the next read is fresh."""
    with LOCK:
        DESIGNS.pop(wording_key(design_hash, wording), None)
        RECENT.pop((path, slug), None)
