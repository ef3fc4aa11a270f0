"""E-mailed invitations: the addresses of a survey's invitees, each with its own link, and the send log.

``Mailing`` is a part of ``Store`` (``base``). An address row holds the address, a random
nonce and its invitation's hash, and the days its invitation and last reminder were sent; the
link's token is never stored: the caller (web or CLI) gives ``token_for(slug, nonce)``, which
derives it from the app's secret key (``web.secret.link_tokens``), and a reminder rebuilds it
and sends it only if its hash is still the row's (a changed secret key cannot rebuild it).
Rows made before migration m020 keep the token they were made with instead of a nonce (their
links were sent and must keep working) until the addresses are deleted. A log row holds the
address, the kind of message, sent or failed (with the error) and the day. Neither holds a
response id, and no submission writes either: a response stays unlinkable to its invitation,
and so to its address. Whether an address's link was used is whether its invitation's unused
row is gone (``admission``), which says who took part, never what they answered.
``delete_addresses`` deletes both tables' rows of a survey and scrubs them from the files
(SQLite's secure_delete and emptied WAL, PostgreSQL's VACUUM FULL); the invitations
themselves (hashes) stay and keep working.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable

from ..core.reports import INVITE_RE
from . import admission
from . import versioning  # noqa: F401  (registers m019 before this module's m020)
from .accounts import EMAIL_MAX
from .errors import StoreError, SurveyNotFound
from .ids import today
from .location import is_postgres_url
from .schema import migrations

MAIL_KINDS = ("invitation", "reminder")
MAX_ADDRESSES = admission.MAX_INVITATIONS
ERROR_MAX = 500
TokenFor = Callable[[str, str], str]
_UNUSED = "EXISTS (SELECT 1 FROM unused_invitations u WHERE u.token_hash = a.token_hash AND u.survey = a.survey)"


@migrations()
def m020_address_nonces(db):
    """Let an address row keep a random nonce instead of its link's token; a row holds exactly one of the two.

    New rows hold a nonce (the token is derived from it and the secret key, never stored); rows
    made before keep their token, since their links were sent and must keep working.
    """
    conn = db.conn
    one_of = "CHECK ((invite_token IS NULL) <> (nonce IS NULL))"
    if getattr(db, "dialect", "sqlite") == "postgresql":
        conn.execute("ALTER TABLE invitation_addresses ADD COLUMN nonce TEXT UNIQUE")
        conn.execute("ALTER TABLE invitation_addresses ALTER COLUMN invite_token DROP NOT NULL")
        conn.execute(f"ALTER TABLE invitation_addresses ADD CONSTRAINT invitation_addresses_token_or_nonce {one_of}")
        return
    # SQLite cannot drop a NOT NULL: the table is made again, with the same rows and ids.
    conn.execute(f"""CREATE TABLE invitation_addresses_m020 (
                     id INTEGER PRIMARY KEY,
                     survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                     email TEXT NOT NULL, invite_token TEXT, nonce TEXT UNIQUE, token_hash TEXT NOT NULL UNIQUE,
                     invited_day TEXT, reminded_day TEXT, UNIQUE (survey, email), {one_of})""")
    columns = "id, survey, email, invite_token, token_hash, invited_day, reminded_day"
    conn.execute(f"INSERT INTO invitation_addresses_m020 ({columns}) SELECT {columns} FROM invitation_addresses")
    conn.execute("DROP TABLE invitation_addresses")
    conn.execute("ALTER TABLE invitation_addresses_m020 RENAME TO invitation_addresses")


class Mailing:
    """A survey's invitees' addresses and the log of the messages sent to them."""

    def add_addresses(self, slug: str, addresses: list[str], token_for: TokenFor) -> tuple[int, int]:
        """Give each new address of an invitation-only survey its own invitation; return (added, already there).

        One transaction: the invitations (hashes) and the address rows (each with a random nonce)
        are made together or not at all. ``token_for(slug, nonce)`` derives each link's token,
        which is hashed and never stored. An address already on the survey's list (any case) is skipped.
        """
        design = self.get_design(slug)
        if design.get("access") != "invite":
            raise StoreError(f"survey {slug!r} is open to anyone with its link; e-mailed invitations need "
                             "access = \"invite\" in its definition")
        if any(len(address) > EMAIL_MAX or "@" not in address for address in addresses):
            raise StoreError(f"an e-mail address has an @ and at most {EMAIL_MAX} characters")
        with self._write() as conn:
            known = {row[0].lower() for row in conn.execute(
                "SELECT email FROM invitation_addresses WHERE survey = ?", [slug]).fetchall()}
            new, seen = [], set(known)
            for address in addresses:
                if address.lower() not in seen:
                    seen.add(address.lower())
                    new.append(address)
            if len(known) + len(new) > MAX_ADDRESSES:
                raise StoreError(f"a survey has at most {MAX_ADDRESSES} addresses")
            if new:
                nonces = [secrets.token_hex(16) for _ in new]
                tokens = [_checked(token_for(slug, nonce)) for nonce in nonces]
                admission.insert_invitations(conn, slug, tokens, today())
                conn.executemany("INSERT INTO invitation_addresses (survey, email, nonce, token_hash) "
                                 "VALUES (?, ?, ?, ?)",
                                 [(slug, address, nonce, admission.invite_hash(token))
                                  for address, nonce, token in zip(new, nonces, tokens)])
        return len(new), len(addresses) - len(new)

    def addresses_to_mail(self, slug: str, kind: str, token_for: TokenFor, day: str | None = None) -> list[dict]:
        """Return the addresses a run of ``kind`` goes to now (id, email, token), in the order they were added.

        An invitation goes to each address not yet sent one (so a run cut short resumes where it
        stopped, and a failed address is tried again); a reminder to each address invited whose
        link is unused and that has had no reminder ``day`` (today by default). The token is the
        row's stored one (rows made before m020), or ``token_for(slug, nonce)`` when its hash is the
        row's; it is None when it is not (the secret key changed: that link cannot be rebuilt).
        """
        if kind not in MAIL_KINDS:
            raise StoreError(f"a message is one of {', '.join(MAIL_KINDS)}, not {kind!r}")
        self._survey_exists(slug)
        where = ("a.invited_day IS NULL" if kind == "invitation" else
                 f"a.invited_day IS NOT NULL AND (a.reminded_day IS NULL OR a.reminded_day < ?) AND {_UNUSED}")
        params = [slug] if kind == "invitation" else [slug, day or today()]
        rows = self._execute("SELECT a.id, a.email, a.invite_token, a.nonce, a.token_hash FROM invitation_addresses a "
                             f"WHERE a.survey = ? AND {where} ORDER BY a.id", params).fetchall()
        return [{"id": row[0], "email": row[1], "token": row[2] if row[2] is not None else
                 _rebuilt(token_for(slug, row[3]), row[4])} for row in rows]

    def record_mail(self, slug: str, address_id: int, kind: str, error: str | None = None, day: str | None = None):
        """Log one message to an address as sent (``error`` None) or failed; a sent one marks the address done for its run."""
        if kind not in MAIL_KINDS:
            raise StoreError(f"a message is one of {', '.join(MAIL_KINDS)}, not {kind!r}")
        day = day or today()
        with self._write() as conn:
            row = conn.execute("SELECT email FROM invitation_addresses WHERE id = ? AND survey = ?",
                               [address_id, slug]).fetchone()
            if row is None:
                raise StoreError(f"no address {address_id} on survey {slug!r}")
            conn.execute("INSERT INTO mail_log (survey, email, kind, status, error, day) VALUES (?, ?, ?, ?, ?, ?)",
                         [slug, row[0], kind, "sent" if error is None else "failed",
                          None if error is None else error[:ERROR_MAX], day])
            if error is None:
                column = "invited_day" if kind == "invitation" else "reminded_day"
                conn.execute(f"UPDATE invitation_addresses SET {column} = ? WHERE id = ?", [day, address_id])

    def mail_log(self, slug: str) -> list[dict]:
        """Return the survey's send log (email, kind, status, error, day), in the order the messages were sent."""
        self._survey_exists(slug)
        rows = self._execute("SELECT email, kind, status, error, day FROM mail_log WHERE survey = ? ORDER BY id",
                             [slug]).fetchall()
        return [dict(zip(("email", "kind", "status", "error", "day"), row)) for row in rows]

    def address_counts(self, slug: str) -> dict:
        """Return the survey's numbers of addresses, of them invited, of them whose link is unused, and of failed sends."""
        row = self._execute(
            "SELECT count(*), count(a.invited_day), "
            f"coalesce(sum(CASE WHEN a.invited_day IS NOT NULL AND {_UNUSED} THEN 1 ELSE 0 END), 0), "
            "(SELECT count(*) FROM mail_log m WHERE m.survey = ? AND m.status = 'failed') "
            "FROM invitation_addresses a WHERE a.survey = ?", [slug, slug]).fetchone()
        return {"addresses": row[0], "invited": row[1], "unused": int(row[2]), "failed": row[3]}

    def delete_addresses(self, slug: str) -> int:
        """Delete every address of the survey and its send log, and scrub them from the files; return how many addresses.

        The invitations (hashes only) stay: links already sent keep working.
        """
        self._survey_exists(slug)
        with self._write() as conn:
            count = conn.execute("SELECT count(*) FROM invitation_addresses WHERE survey = ?", [slug]).fetchone()[0]
            conn.execute("DELETE FROM mail_log WHERE survey = ?", [slug])
            conn.execute("DELETE FROM invitation_addresses WHERE survey = ?", [slug])
        self._scrub_addresses()
        return count

    def _scrub_addresses(self):
        """Remove deleted rows' bytes: PostgreSQL rewrites both tables; SQLite zeroed them (secure_delete) and empties its WAL."""
        if is_postgres_url(self.path):
            self._execute("VACUUM (FULL) invitation_addresses, mail_log")
        elif not self._forget_order():
            raise StoreError("the addresses were deleted, but the write-ahead log could not be emptied "
                             "while another connection was reading; run the deletion again to scrub it")

    def _survey_exists(self, slug: str):
        """Raise SurveyNotFound unless the survey exists."""
        if self._execute("SELECT 1 FROM surveys WHERE slug = ?", [slug]).fetchone() is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")


def _checked(token: str) -> str:
    """Return a derived token, or raise StoreError unless it has the form of ``admission.new_token()``'s."""
    if not isinstance(token, str) or not INVITE_RE.fullmatch(token):
        raise StoreError("an invitation link's token is 22 URL-safe characters")
    return token


def _rebuilt(token: str, token_hash: str) -> str | None:
    """Return the rebuilt token when its hash is the row's, else None (it was made with another secret key)."""
    return token if hmac.compare_digest(admission.invite_hash(token), token_hash) else None
