"""Turn invitation tokens into the single-use links given to invitees, one per line or as CSV.

Standard library only: the CLI and the dashboard both print what this returns.
"""

from __future__ import annotations

import csv
import io
from urllib.parse import quote, urlsplit


def check_base(base: str) -> str:
    """Return the public address without a trailing slash; raise ValueError unless it is an http(s) URL."""
    parts = urlsplit(base.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"the base address must be an http:// or https:// URL such as "
                         f"https://surveys.example.org, got {base!r}")
    return base.strip().rstrip("/")


def invitation_links(base: str, slug: str, tokens: list[str]) -> list[str]:
    """Return ``<base>/s/<slug>?invite=TOKEN`` for every token."""
    base = check_base(base)
    return [f"{base}/s/{quote(slug)}?invite={quote(token)}" for token in tokens]


def links_csv(links: list[str]) -> str:
    """Return the links as CSV text with one column, ``link`` (a URL never starts a formula)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["link"])
    writer.writerows([link] for link in links)
    return out.getvalue()
