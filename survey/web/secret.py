"""The session-signing key: from the environment, else a file beside a SQLite database, else a row of a database server.

Every server of one database must sign with the same key (a cookie made by one is then
accepted by the others), so it is never random per process. Beside a SQLite file the key
is a file readable only by its owner, never in the database, so a copy of the database (a
backup, an export) cannot forge sessions. A database server (a ``postgresql://`` URL) has
no file beside it that every server sees: without $LDP_SURVEY_SECRET_KEY the key is made
once and stored in its settings table, and a warning says that its backups then carry it.

The key of e-mailed invitation links (``link_tokens``) is an HMAC of this key with a fixed
label, never the key itself: a link's token is HMAC-SHA256(link key, label, slug, the address
row's random nonce), so the database keeps the nonce and the token's hash, never the token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

SECRET_ENV = "LDP_SURVEY_SECRET_KEY"
MIN_LENGTH = 32
# The settings row of the key of a database server (never written for a SQLite file).
SETTING = "session_signing_key"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Domain separation: the label of the links' key (an HMAC of the secret key), and of each link's token.
LINK_KEY_LABEL = b"ldp-survey e-mailed invitation links key"
LINK_TOKEN_LABEL = b"ldp-survey e-mailed invitation link\0"

log = logging.getLogger(__name__)


class SecretKeyError(RuntimeError):
    """The configured key is unusable."""


def is_url(database: str) -> bool:
    """Return whether the database is a server's URL (``postgresql://…``), not a SQLite file or ``file:`` URI."""
    return bool(_URL.match(database)) and not database.lower().startswith("file:")


def key_path(database: str) -> Path:
    """Return the key file of a SQLite database: ``<database>.secret-key``."""
    if is_url(database):
        raise SecretKeyError(f"a database server has no key file beside it; set {SECRET_ENV}")
    return Path(f"{database}.secret-key")


def load_secret_key(database: str) -> str:
    """Return $LDP_SURVEY_SECRET_KEY, else the database's key: its key file (0600) or its settings row, made once."""
    configured = os.environ.get(SECRET_ENV)
    if configured is not None:
        if len(configured) < MIN_LENGTH:
            raise SecretKeyError(f"{SECRET_ENV} must hold at least {MIN_LENGTH} characters, got {len(configured)}")
        return configured
    database = str(database)
    if database == ":memory:":
        return secrets.token_hex(32)
    if is_url(database):
        log.warning("%s is not set: the session-signing key is kept in the database, so every backup of it "
                    "can forge sign-ins. Set %s to the same random value (openssl rand -hex 32) on every server.",
                    SECRET_ENV, SECRET_ENV)
        return stored_key(database)
    return _file_key(key_path(database))


def stored_key(database: str) -> str:
    """Return the key stored in the database, storing a new random one first if there is none.

    Servers starting at once each offer a key; the first stored is the one all of them use.
    """
    from ..store import Store

    store = Store(database, migrate=False)
    try:
        key = store.shared_setting(SETTING, secrets.token_hex(32))
    finally:
        store.close()
    if len(key) < MIN_LENGTH:
        raise SecretKeyError(f"the database's settings row {SETTING!r} holds no usable key; "
                             "delete it to make a new one")
    return key


def _file_key(path: Path) -> str:
    """Return the key in a key file, creating the file (0600) with a new key once."""
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


def link_key(secret_key: str) -> bytes:
    """Return the key of e-mailed invitation links: HMAC-SHA256(secret key, LINK_KEY_LABEL), never the secret key."""
    if not secret_key:
        raise SecretKeyError("e-mailed invitation links need the app's secret key, and it is empty")
    return hmac.new(secret_key.encode("utf-8"), LINK_KEY_LABEL, hashlib.sha256).digest()


def link_tokens(secret_key: str) -> Callable[[str, str], str]:
    """Return ``token_for(slug, nonce)``: an address's link token, derived from the secret key, never stored.

    The token is the first 128 bits of HMAC-SHA256(link key, LINK_TOKEN_LABEL ‖ slug ‖ 0 ‖ nonce),
    URL-safe base64 without padding: 22 characters, like ``admission.new_token()``.
    """
    key = link_key(secret_key)

    def token_for(slug: str, nonce: str) -> str:
        message = LINK_TOKEN_LABEL + slug.encode("utf-8") + b"\0" + nonce.encode("ascii")
        digest = hmac.new(key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode("ascii")

    return token_for
