"""Remember, in a signed cookie, the accounts a browser has signed in to (so the account-wide sign-in count spares it).

The cookie holds only the first 16 hex digits of each account's key (``signin.account_key``,
a hash of the email), at most MAX_ACCOUNTS of them, signed with the app's secret key: it
cannot be forged, and it says nothing readable about who signed in.
"""

from __future__ import annotations

from flask import current_app, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

from ..store.signin import account_key

COOKIE = "ldp_known_device"
MAX_AGE = 180 * 24 * 3600
MAX_ACCOUNTS = 8
_SALT = "ldp-survey known device"


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt=_SALT)


def _tag(email: str) -> str:
    return account_key(email)[:16]


def _known() -> list[str]:
    value = request.cookies.get(COOKIE)
    if not value:
        return []
    try:
        tags = _serializer().loads(value, max_age=MAX_AGE)
    except BadSignature:
        return []
    return [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []


def knows(email: str) -> bool:
    """Return whether this browser has signed in to the account before (within MAX_AGE)."""
    return _tag(email) in _known()


def remember(response, email: str):
    """Set the cookie on ``response`` so this browser is known to the account from now on."""
    tags = [_tag(email)] + [tag for tag in _known() if tag != _tag(email)]
    response.set_cookie(COOKIE, _serializer().dumps(tags[:MAX_ACCOUNTS]), max_age=MAX_AGE, httponly=True,
                        samesite="Lax", secure=bool(current_app.config.get("SESSION_COOKIE_SECURE")))
    return response
