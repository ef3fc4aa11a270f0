"""The session-signing key: from the environment, or a file beside the database readable only by its owner.

It never lives in the database, so a copy of the database (a backup, an export) cannot
forge sessions.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

SECRET_ENV = "LDP_SURVEY_SECRET_KEY"
MIN_LENGTH = 32


class SecretKeyError(RuntimeError):
    """The configured key is unusable."""


def key_path(database: str) -> Path:
    """Return the key file of a database: ``<database>.secret-key``."""
    return Path(f"{database}.secret-key")


def load_secret_key(database: str) -> str:
    """Return $LDP_SURVEY_SECRET_KEY, else the key in the database's key file, creating the file (0600) once."""
    configured = os.environ.get(SECRET_ENV)
    if configured is not None:
        if len(configured) < MIN_LENGTH:
            raise SecretKeyError(f"{SECRET_ENV} must hold at least {MIN_LENGTH} characters, got {len(configured)}")
        return configured
    if database == ":memory:":
        return secrets.token_hex(32)
    path = key_path(database)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_text(encoding="ascii").strip()
        if len(key) < MIN_LENGTH:
            raise SecretKeyError(f"the key file {path} holds no usable key; delete it to make a new one") from None
        return key
    key = secrets.token_hex(32)
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(key + "\n")
    return key
