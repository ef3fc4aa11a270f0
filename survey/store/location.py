"""Tell a database URL from a file path: ``postgresql://…`` selects PostgreSQL, anything else is a SQLite file."""

from __future__ import annotations

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(target) -> bool:
    """Return whether ``target`` names a PostgreSQL database (a ``postgresql://`` or ``postgres://`` URL)."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def display_location(target) -> str:
    """Return the database location with any password in its URL replaced by ``***`` (for messages and logs)."""
    text = str(target)
    if not is_postgres_url(text):
        return text
    scheme, rest = text.split("://", 1)
    userinfo, at, host = rest.rpartition("@")
    if at and ":" in userinfo:
        userinfo = userinfo.split(":", 1)[0] + ":***"
    return f"{scheme}://{userinfo}{at}{host}"
