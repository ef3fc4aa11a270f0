"""Researchers' side of the store: accounts, API tokens, sign-in failures, access to surveys and settings.

``Accounts`` is a part of ``Store`` (``base``): its methods run on either backend through the
store's ``_write``, ``_execute``, ``_serialize`` and ``conn``. Join links are ``joining``'s and
sign-in counts ``signin``'s; flood counts (``flood``) and the settings every server shares live
here too, as nothing of a respondent's answers does.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time

from . import flood, joining, signin
from ..core.reports import INVITE_RE
from .admission import invite_hash
from .errors import JoinLinkInvalid, NotOwner, StoreError, SurveyNotFound
from .ids import row_id, today

TOKEN_PREFIX = "ldps_"
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
EMAIL_MAX = 254
MIN_PASSWORD_LENGTH = 8
TOKEN_LABEL_MAX = 64
TOKEN_MAX_LENGTH = 128
RESET_SECONDS = 60 * 60
RESET_TOKEN_MAX = 128


def token_hash(token: str) -> str:
    """Return the SHA-256 hex digest of an API token, the only form in which it is stored."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def people_of(alias: str) -> str:
    """Return SQL for the slug whose people survey row ``alias`` has: its family while that exists, else itself."""
    return f"coalesce((SELECT h.slug FROM surveys h WHERE h.slug = {alias}.family), {alias}.slug)"


def family_access(alias: str) -> str:
    """Return the SQL condition (two parameters: the user id twice) that the researcher owns or collaborates on
    the survey row ``alias``, or on the survey an earlier version (``SLUG.v1``) belongs to."""
    family = people_of(alias)
    return (f"EXISTS (SELECT 1 FROM surveys f WHERE f.slug = {family} AND (f.owner_id = ? OR EXISTS "
            f"(SELECT 1 FROM collaborators c WHERE c.survey = f.slug AND c.user_id = ?)))")


def kept_version_of(conn, slug: str) -> str | None:
    """Return the survey whose people decide who sees ``slug`` when it is a kept version (``SLUG.v1``), else None."""
    row = conn.execute(f"SELECT {people_of('v')} FROM surveys v WHERE v.slug = ?", [slug]).fetchone()
    return row[0] if row is not None and row[0] != slug else None


def refuse_kept_version(conn, slug: str, what: str):
    """Raise StoreError naming the survey to act on if ``slug`` is a kept version: its people are its survey's."""
    family = kept_version_of(conn, slug)
    if family is not None:
        raise StoreError(f"{slug!r} is an earlier version of {family!r}, and who sees it follows {family!r}: "
                         f"{what} on {family!r} instead")


_USER_FIELDS = ("id", "email", "password_hash", "session_key", "token_key")
_USER_COLUMNS = ", ".join(_USER_FIELDS)


def new_account_key() -> str:
    """Return a new random key of an account (256 bits as 64 hex digits): its session key or its token key."""
    return secrets.token_hex(32)


def _insert_user(conn, email: str, password_hash: str):
    """Insert a new account with its own random session and token keys, in the caller's transaction."""
    conn.execute("INSERT INTO users (email, password_hash, created_day, session_key, token_key) "
                 "VALUES (?, ?, ?, ?, ?)", [email, password_hash, today(), new_account_key(), new_account_key()])


def _new_password(conn, user_id: int, password_hash: str) -> str:
    """Set a password, a new session key (ending every session), no reset link and no sign-in lock; return the key."""
    row = conn.execute("SELECT email FROM users WHERE id = ?", [user_id]).fetchone()
    if row is None:
        raise StoreError("no such researcher account")
    key = new_account_key()
    conn.execute("UPDATE users SET password_hash = ?, session_key = ? WHERE id = ?", [password_hash, key, user_id])
    conn.execute("DELETE FROM password_resets WHERE user_id = ?", [user_id])
    signin.unlock(conn, signin.account_key(row[0]))
    return key


class Accounts:
    """Accounts, API tokens, sign-in, who may see a survey, and settings: the part of ``Store`` no response touches."""

    # Access to surveys: owners, collaborators and their join links

    def can_access(self, slug: str, user_id: int) -> bool:
        """Return whether the researcher owns the survey or collaborates on it (False if there is no such survey).

        An earlier version (``SLUG.v1``) is seen by whoever sees its survey, now: a collaborator removed
        from the survey loses its versions too.
        """
        row = self._execute(f"SELECT 1 FROM surveys v WHERE v.slug = ? AND {family_access('v')}",
                            [slug, user_id, user_id]).fetchone()
        return row is not None

    def share(self, slug: str, email: str) -> str:
        """Give a researcher access to a survey; return "owner" or "collaborator", the role they now have.

        A survey without an owner (from an older database) gets this researcher as its owner.
        """
        with self._write() as conn:
            survey = conn.execute("SELECT owner_id FROM surveys WHERE slug = ?", [slug]).fetchone()
            if survey is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            refuse_kept_version(conn, slug, "share it")
            account = self.get_user(email)
            if account is None:
                raise StoreError(f"no researcher account {email!r}; create it with `ldp-survey user add`")
            if survey[0] is None:
                conn.execute("UPDATE surveys SET owner_id = ? WHERE slug = ?", [account["id"], slug])
                return "owner"
            if survey[0] == account["id"]:
                return "owner"
            conn.execute("INSERT INTO collaborators (survey, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                         [slug, account["id"]])
            return "collaborator"

    def is_owner(self, slug: str, user_id: int) -> bool:
        """Return whether the researcher owns the survey, or an earlier version's survey (False for a collaborator
        or no such survey)."""
        return self._execute(f"SELECT 1 FROM surveys v JOIN surveys f ON f.slug = {people_of('v')} "
                             "WHERE v.slug = ? AND f.owner_id = ?", [slug, user_id]).fetchone() is not None

    def invite_collaborator(self, slug: str, owner_id: int, email: str) -> tuple[str, dict]:
        """Make a single-use join link for ``email`` to collaborate on a survey; return its token (shown once) and record.

        Only the survey's owner may (NotOwner otherwise); an email that already sees the
        survey is refused; a new link for an email replaces its earlier one.
        """
        email = email.strip()
        if not EMAIL_RE.match(email) or len(email) > EMAIL_MAX:
            raise StoreError(f"{email!r} does not look like an email address (name@example.org)")
        with self._write() as conn:
            survey = conn.execute("SELECT owner_id FROM surveys WHERE slug = ?", [slug]).fetchone()
            if survey is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            refuse_kept_version(conn, slug, "invite collaborators")
            if survey[0] != owner_id:
                raise NotOwner("only the survey's owner can invite collaborators")
            account = self.get_user(email)
            if account is not None and self.can_access(slug, account["id"]):
                raise StoreError(f"{account['email']} already sees this survey")
            return joining.add(conn, slug, email, owner_id, today())

    def collaborator_invitations(self, slug: str) -> list[dict]:
        """Return the survey's join links that still work (id, email, last day; never a token), by email."""
        return joining.pending(self.conn, slug, today())

    def revoke_collaborator_invitation(self, slug: str, invitation_id: int) -> dict:
        """Delete one of the survey's join links; return its record. Raises StoreError if it has no such link."""
        number = row_id(invitation_id)  # None past a database INTEGER: no link has it
        with self._write() as conn:
            refuse_kept_version(conn, slug, "revoke join links")
            record = None if number is None else joining.revoke(conn, slug, number)
        if record is None:
            raise StoreError("this survey has no such join link; it may have been used or revoked already")
        return record

    def join_invitation(self, token: str) -> dict | None:
        """Return a working join link's record with its survey's title and owner's email, or None."""
        record = joining.find(self.conn, token, today())
        if record is None:
            return None
        title, owner = self._execute("SELECT s.title, u.email FROM surveys s LEFT JOIN users u ON u.id = s.owner_id "
                                     "WHERE s.slug = ?", [record["survey"]]).fetchone()
        return {**record, "title": title, "owner": owner}

    def accept_invitation(self, token: str, *, user_id: int | None = None,
                          password_hash: str | None = None) -> dict:
        """Use a join link: make its invitee a collaborator and delete the link, in one transaction; return the account.

        With ``password_hash`` the invitee's account is created (StoreError if it exists);
        with ``user_id`` it is that existing account, which must have the invited email.
        Raises JoinLinkInvalid when the link no longer works.
        """
        with self._write() as conn:
            record = joining.find(conn, token, today())
            if record is None:
                raise JoinLinkInvalid("this join link does not work")
            account = self.get_user(record["email"])
            if password_hash is not None:
                if account is not None:
                    raise StoreError(f"an account {account['email']} already exists; sign in with its password")
                _insert_user(conn, record["email"], password_hash)
                account = self.get_user(record["email"])
            elif account is None or account["id"] != user_id:
                raise StoreError(f"this join link is for {record['email']}")
            conn.execute("INSERT INTO collaborators (survey, user_id) SELECT slug, ? FROM surveys "
                         "WHERE slug = ? AND coalesce(owner_id, -1) != ? ON CONFLICT DO NOTHING",
                         [account["id"], record["survey"], account["id"]])
            if not joining.use(conn, record["id"]):
                raise JoinLinkInvalid("this join link does not work")
        return {**account, "survey": record["survey"]}

    def collaborators(self, slug: str) -> list[str]:
        """Return the emails of a survey's collaborators (not its owner), sorted; a kept version's are its survey's."""
        return [row[0] for row in self._execute(
            f"SELECT u.email FROM surveys v JOIN collaborators c ON c.survey = {people_of('v')} "
            "JOIN users u ON u.id = c.user_id WHERE v.slug = ? ORDER BY lower(u.email)", [slug]).fetchall()]

    def people(self, slug: str) -> dict:
        """Return who sees a survey: {"survey" (whose people they are: a kept version's survey), "owner", "collaborators"}."""
        row = self._execute(f"SELECT f.slug, u.email FROM surveys v JOIN surveys f ON f.slug = {people_of('v')} "
                            "LEFT JOIN users u ON u.id = f.owner_id WHERE v.slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return {"survey": row[0], "owner": row[1], "collaborators": self.collaborators(slug)}

    def refuse_people_action(self, slug: str, what: str):
        """Raise StoreError if ``slug`` is a kept version, whose people are managed on its survey (``what``: the action)."""
        refuse_kept_version(self.conn, slug, what)

    def remove_collaborator(self, slug: str, owner_id: int, email: str):
        """Take a collaborator's access to a survey away; only its owner may (NotOwner otherwise)."""
        with self._write() as conn:
            refuse_kept_version(conn, slug, "remove collaborators")
            self._owned(conn, slug, owner_id, "remove collaborators")
            account = self.get_user(email.strip())
            if account is None or not conn.execute("DELETE FROM collaborators WHERE survey = ? AND user_id = ?",
                                                    [slug, account["id"]]).rowcount:
                raise StoreError(f"{email.strip()} is not a collaborator of this survey")

    def transfer_ownership(self, slug: str, owner_id: int, email: str):
        """Make a collaborator the survey's owner and the old owner a collaborator, in one transaction."""
        with self._write() as conn:
            refuse_kept_version(conn, slug, "hand ownership over")
            self._owned(conn, slug, owner_id, "hand ownership over")
            account = self.get_user(email.strip())
            if account is None or not conn.execute("DELETE FROM collaborators WHERE survey = ? AND user_id = ?",
                                                    [slug, account["id"]]).rowcount:
                raise StoreError(f"{email.strip()} is not a collaborator of this survey; share it with them first")
            conn.execute("UPDATE surveys SET owner_id = ? WHERE slug = ?", [account["id"], slug])
            conn.execute("INSERT INTO collaborators (survey, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                         [slug, owner_id])

    @staticmethod
    def _owned(conn, slug: str, owner_id: int, what: str):
        """Raise SurveyNotFound or NotOwner unless ``owner_id`` owns the survey (inside the caller's write)."""
        survey = conn.execute("SELECT owner_id FROM surveys WHERE slug = ?", [slug]).fetchone()
        if survey is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        if survey[0] != owner_id:
            raise NotOwner(f"only the survey's owner can {what}")

    def cancel_invitation(self, slug: str, token: str) -> bool:
        """Cancel one unused invitation link of a survey: it is refused from now on like a used one.

        Returns False if the token is no unused invitation of the survey (unknown, used or cancelled, or not
        a token at all: invite_hash takes ASCII only).
        """
        if not isinstance(token, str) or not INVITE_RE.fullmatch(token):
            return False
        with self._write() as conn:
            return bool(conn.execute("DELETE FROM unused_invitations WHERE token_hash = ? AND survey = ?",
                                     [invite_hash(token), slug]).rowcount)

    # Users

    def add_user(self, email: str, password_hash: str, *, replace: bool = False):
        """Create a researcher account, or set its password when ``replace`` is true (ending its sessions and locks)."""
        with self._write():
            existing = self.get_user(email)
            if existing and not replace:
                raise StoreError(f"a user with email {email!r} already exists")
            if existing:
                self._execute("UPDATE users SET password_hash = ?, session_key = ? WHERE id = ?",
                              [password_hash, new_account_key(), existing["id"]])
                self._execute("DELETE FROM password_resets WHERE user_id = ?", [existing["id"]])
                signin.unlock(self.conn, signin.account_key(existing["email"]))
            else:
                _insert_user(self.conn, email, password_hash)

    def set_password(self, email: str, password_hash: str):
        """Set an account's password; every earlier session and reset link of the account ends, its locks clear."""
        with self._write() as conn:
            if not conn.execute("UPDATE users SET password_hash = ?, session_key = ? WHERE lower(email) = lower(?)",
                                [password_hash, new_account_key(), email]).rowcount:
                raise StoreError(f"no researcher account {email!r}")
            conn.execute("DELETE FROM password_resets WHERE user_id IN "
                         "(SELECT id FROM users WHERE lower(email) = lower(?))", [email])
            signin.unlock(conn, signin.account_key(email))

    def change_password(self, user_id: int, password_hash: str) -> str:
        """Set an account's password, end all its sessions and clear its sign-in locks; return the new session key."""
        with self._write() as conn:
            return _new_password(conn, user_id, password_hash)

    def issue_password_reset(self, email: str, *, now: float | None = None,
                             seconds: int = RESET_SECONDS) -> tuple[str, dict] | None:
        """Make a single-use password reset token for an account; return it (shown once) and the account, or None.

        Only its SHA-256 hash is stored, with the time it stops working; a new one replaces
        the account's earlier one.
        """
        token = secrets.token_urlsafe(32)
        expires = int((time.time() if now is None else now) + seconds)
        with self._write() as conn:
            account = self.get_user(email.strip())
            if account is None:
                return None
            conn.execute("DELETE FROM password_resets WHERE user_id = ?", [account["id"]])
            conn.execute("INSERT INTO password_resets (token_hash, user_id, expires_at) VALUES (?, ?, ?)",
                         [token_hash(token), account["id"], expires])
        return token, account

    def password_reset_account(self, token: str, *, now: float | None = None) -> dict | None:
        """Return the account a working reset token is for, or None (unknown, used, replaced or expired)."""
        if not token or len(token) > RESET_TOKEN_MAX:
            return None
        row = self._execute("SELECT user_id, expires_at FROM password_resets WHERE token_hash = ?",
                            [token_hash(token)]).fetchone()
        if row is None or row[1] <= (time.time() if now is None else now):
            return None
        return self.get_user_by_id(row[0])

    def use_password_reset(self, token: str, password_hash: str, *, now: float | None = None) -> dict | None:
        """Set a new password with a reset token, once: every session ends and locks clear; return the account or None."""
        account = self.password_reset_account(token, now=now)
        if account is None:
            return None
        with self._write() as conn:
            if not conn.execute("DELETE FROM password_resets WHERE token_hash = ? AND user_id = ?",
                                [token_hash(token), account["id"]]).rowcount:
                return None  # used at the same moment by another request
            _new_password(conn, account["id"], password_hash)
        return self.get_user_by_id(account["id"])

    def end_sessions(self, user_id: int):
        """End every session of an account (sign-out ends them all, on every device): a new session key."""
        with self._write() as conn:
            conn.execute("UPDATE users SET session_key = ? WHERE id = ?", [new_account_key(), user_id])

    def remove_user(self, email: str):
        """Delete an account, its API tokens and its sessions; its surveys keep their data but lose their owner.

        Surveys it owned are visible to no one until shared. A later account may get the same
        id on SQLite, but never the same session or token key, so nothing of this one works for it.
        """
        with self._write() as conn:
            account = self.get_user(email)
            if account is None:
                raise StoreError(f"no researcher account {email!r}")
            conn.execute("DELETE FROM collaborators WHERE user_id = ?", [account["id"]])
            conn.execute("DELETE FROM api_tokens WHERE user_id = ?", [account["id"]])
            conn.execute("DELETE FROM password_resets WHERE user_id = ?", [account["id"]])
            conn.execute("UPDATE surveys SET owner_id = NULL WHERE owner_id = ?", [account["id"]])
            conn.execute("DELETE FROM users WHERE id = ?", [account["id"]])
            signin.unlock(conn, signin.account_key(email))

    def list_users(self) -> list[dict]:
        """Return every account's email, creation day and number of surveys it owns, by email."""
        return [dict(zip(("email", "created_day", "surveys"), row)) for row in self._execute(
            "SELECT u.email, u.created_day, (SELECT count(*) FROM surveys s WHERE s.owner_id = u.id) "
            "FROM users u ORDER BY lower(u.email)").fetchall()]

    def get_user(self, email: str) -> dict | None:
        """Return the account with this email (case-insensitive), or None."""
        row = self._execute(f"SELECT {_USER_COLUMNS} FROM users WHERE lower(email) = lower(?)", [email]).fetchone()
        return dict(zip(_USER_FIELDS, row)) if row else None

    def get_user_by_id(self, user_id: int) -> dict | None:
        """Return the account with this id, or None."""
        row = self._execute(f"SELECT {_USER_COLUMNS} FROM users WHERE id = ?", [user_id]).fetchone()
        return dict(zip(_USER_FIELDS, row)) if row else None

    # Sign-in failures (``signin``)

    def sign_in_reserve(self, limits, now: float) -> tuple[float, tuple[str, str] | None]:
        """Count one sign-in attempt unless a count of ``limits`` is full (``signin.reserve``), in one write.

        The counts are locked in the order given (an account's before a client's), so
        concurrent attempts on PostgreSQL are counted one by one and never deadlock.
        """
        with self._write() as conn:
            for account, client, _, _ in limits:
                self._serialize(conn, f"sign-in:{account}:{client}" if account == signin.ANY_ACCOUNT
                                else "sign-in:" + account)
            return signin.reserve(conn, limits, now)

    def sign_in_forget(self, account: str, client: str, shared):
        """Forget one client's failures on an account after it signed in (``signin.forget``)."""
        with self._write() as conn:
            signin.forget(conn, account, client, shared)

    def unlock_account(self, email: str) -> int:
        """Clear every sign-in lock and failure count of an account; return how many counts were cleared."""
        with self._write() as conn:
            if self.get_user(email) is None:
                raise StoreError(f"no researcher account {email!r}")
            return signin.unlock(conn, signin.account_key(email))

    # API tokens

    def create_token(self, email: str, label: str | None = None) -> tuple[dict, str]:
        """Make a new API token for a researcher; return its record and the token itself (shown once).

        Only the token's SHA-256 hash is stored, with its owner, label (unique per account;
        ``token-N`` when none is given) and creation day. Raises StoreError for an unknown
        account or a label the account already uses.
        """
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        label = (label or "").strip()
        if len(label) > TOKEN_LABEL_MAX:
            raise StoreError(f"a token label has at most {TOKEN_LABEL_MAX} characters, got {len(label)}")
        with self._write() as conn:
            account = self.get_user(email)
            if account is None:
                raise StoreError(f"no researcher account {email!r}")
            used = {row[0] for row in conn.execute("SELECT label FROM api_tokens WHERE user_id = ?",
                                                   [account["id"]])}
            if label and label in used:
                raise StoreError(f"{account['email']} already has a token labelled {label!r}")
            if not label:
                label = next(f"token-{n}" for n in range(1, len(used) + 2) if f"token-{n}" not in used)
            day = today()
            token_id = conn.execute("INSERT INTO api_tokens (user_id, token_key, token_hash, label, created_day) "
                                    "VALUES (?, ?, ?, ?, ?) RETURNING id",
                                    [account["id"], account["token_key"], token_hash(token), label,
                                     day]).fetchone()[0]
        return {"id": token_id, "label": label, "created_day": day, "email": account["email"]}, token

    def list_tokens(self, user_id: int) -> list[dict]:
        """Return a researcher's tokens (id, label, creation day; never the token), oldest first."""
        return [dict(zip(("id", "label", "created_day"), row)) for row in self._execute(
            "SELECT id, label, created_day FROM api_tokens WHERE user_id = ? ORDER BY id", [user_id]).fetchall()]

    def revoke_token(self, user_id: int, which: str | int) -> dict:
        """Delete one of a researcher's tokens, named by label or by id; return its record.

        A label is tried first, then a number as an id. Raises StoreError if the account
        has no such token.
        """
        with self._write() as conn:
            row = conn.execute("SELECT id, label, created_day FROM api_tokens WHERE user_id = ? AND label = ?",
                               [user_id, str(which)]).fetchone()
            number = row_id(str(which))  # None past a database INTEGER, or for a label that is no number
            if row is None and number is not None:
                row = conn.execute("SELECT id, label, created_day FROM api_tokens WHERE user_id = ? AND id = ?",
                                   [user_id, number]).fetchone()
            if row is None:
                raise StoreError(f"no API token {str(which)!r} of this account")
            conn.execute("DELETE FROM api_tokens WHERE id = ?", [row[0]])
        return dict(zip(("id", "label", "created_day"), row))

    def user_for_token(self, token: str) -> dict | None:
        """Return the account an API token belongs to, or None for an unknown (or revoked) token.

        The token is looked up by its SHA-256 hash, never compared as text: the time the
        lookup takes says nothing about how much of a guess was right. A token is bound to
        its account's id and token key, so it never works for another account given that id.
        """
        if not token.startswith(TOKEN_PREFIX) or len(token) > TOKEN_MAX_LENGTH:
            return None
        wanted = token_hash(token)
        row = self._execute("SELECT user_id, token_hash, token_key FROM api_tokens WHERE token_hash = ?",
                            [wanted]).fetchone()
        if row is None or not hmac.compare_digest(row[1], wanted):
            return None
        user = self.get_user_by_id(row[0])
        if user is None or not row[2] or not hmac.compare_digest(row[2], user["token_key"]):
            return None
        return user

    # Settings

    def get_setting(self, key: str, default: str | None = None) -> str | None:
        """Return a stored setting, or ``default``."""
        row = self._execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
        return row[0] if row else default

    # State shared by every server (``flood``, the signing key)

    def flood_take(self, client: str, window: int, previous_client: str, limit: int,
                   previous_weight: float) -> tuple[bool, int, int]:
        """Count one submission of a client unless it goes over the limit (``flood.take``), in one write."""
        with self._write() as conn:
            return flood.take(conn, client, window, previous_client, limit, previous_weight)

    def flood_sweep(self, window: int) -> int:
        """Delete the flood counts that no longer weigh in ``window`` (``flood.sweep``); return how many."""
        with self._write() as conn:
            return flood.sweep(conn, window)

    def shared_setting(self, key: str, candidate: str) -> str:
        """Return a stored setting, storing ``candidate`` first if there is none (never overwriting one).

        Every server that starts at once offers its own candidate; all read back the one
        stored first.
        """
        with self._write() as conn:
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                         [key, candidate])
            return conn.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()[0]
