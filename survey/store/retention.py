"""How long a survey is kept: the listing of surveys, archiving, a deletion date, and deletion with every row of it.

An archived survey is closed (every insert checks status = 'open', so none is stored) and
flagged ``archived``: read-only, hidden from default lists. Deleting a survey removes the
survey's report, held and sandbox tables, its submission function (PostgreSQL) and its rows
in every table that has a ``survey`` column, found by enumerating the schema
(``schema.survey_tables``), so a table added later is covered without naming it here.
"""

from __future__ import annotations

import datetime as dt

from .accounts import family_access, people_of
from .errors import StoreError, SurveyNotFound
from .ids import today
from .location import is_postgres_url
from .schema import RESPONSES, REPORTS

LISTING_FIELDS = ("slug", "title", "created_day", "design_hash", "responses", "owner", "status", "held", "sandbox",
                  "archived", "delete_after", "version")
SANDBOX_SQL = (f"(SELECT coalesce(sum(st.count), 0) FROM sandbox_tallies st WHERE st.survey = s.slug "
               f"AND st.question = {RESPONSES} AND st.option = {REPORTS})")


def parse_day(text: str) -> str:
    """Return an ISO day (YYYY-MM-DD) as given, or raise StoreError naming the expected form."""
    try:
        return dt.date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        raise StoreError(f"a deletion date is a day as YYYY-MM-DD, e.g. 2027-06-30, not {text!r}") from None


class Retention:
    """Listing, archiving, deletion dates and deletion of surveys: the part of ``Store`` that ends a survey's life."""

    def list_surveys(self, *, user_id: int | None = None, archived: bool = True) -> list[dict]:
        """Return each survey's slug, title, creation day, design hash, counts, owner, status and retention, by slug.

        ``responses`` are released, ``held`` wait for the next release, ``sandbox`` are test and
        simulated ones (all read from the kept counts, never a scan). Every survey, or with
        ``user_id`` only those that researcher owns or collaborates on; ``archived=False`` leaves
        archived ones out. ``status`` is "archived" for an archived survey.
        """
        sql = (f"SELECT s.slug, s.title, s.created_day, s.design_hash, {self._responses_sql}, u.email, s.status, "
               f"{self._held_sql}, {SANDBOX_SQL}, s.archived, s.delete_after, s.version "
               f"FROM surveys s LEFT JOIN users u ON u.id = (SELECT f.owner_id FROM surveys f WHERE f.slug = {people_of('s')})")
        clauses, parameters = [], []
        if user_id is not None:
            clauses.append(family_access("s"))
            parameters = [user_id, user_id]
        if not archived:
            clauses.append("s.archived = 0")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        surveys = []
        for row in self._execute(sql + where + " ORDER BY s.slug", parameters).fetchall():
            survey = dict(zip(LISTING_FIELDS, row))
            survey["archived"] = bool(survey["archived"])
            survey["status"] = "archived" if survey["archived"] else survey["status"]
            survey["held"], survey["sandbox"] = int(survey["held"]), int(survey["sandbox"])
            surveys.append(survey)
        return surveys

    def retention(self, slug: str) -> dict:
        """Return {"archived": bool, "delete_after": day or None} of a survey, or raise SurveyNotFound."""
        row = self._execute("SELECT archived, delete_after FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return {"archived": bool(row[0]), "delete_after": row[1]}

    def refuse_if_archived(self, slug: str, action: str) -> None:
        """Raise StoreError if the survey is archived: it is read-only until unarchived."""
        if self.retention(slug)["archived"]:
            raise StoreError(f"cannot {action} of survey {slug!r}: it is archived and read-only "
                             "(unarchive it first, or delete it)")

    def _design_in_write(self, conn, slug: str, action: str) -> dict:
        """In ``conn``'s write: hold off changes of the survey's status and design, refuse it if archived, return its design.

        Read inside the write, a revision or an archive that committed after the request began is seen.
        """
        self._lock_survey(conn, slug)
        self.refuse_if_archived(slug, action)
        return self.get_design(slug)

    def _settle_held(self, conn, slug: str) -> int:
        """Release whole steps of held responses left held, in a write that holds the survey alone; return how many.

        SQLite releases each step in the insert that completes it, so it never leaves one (PostgreSQL's store may).
        """
        return 0

    def archive_survey(self, slug: str) -> str:
        """Archive a published survey and its earlier versions: closed, read-only and hidden from default lists
        (a draft is deleted instead)."""
        with self._write() as conn:
            self._lock_survey(conn, slug)
            row = conn.execute("SELECT status, archived FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if row[1]:
                raise StoreError(f"survey {slug!r} is already archived")
            if row[0] == "draft":
                raise StoreError(f"cannot archive survey {slug!r}: it is a draft (a draft can be deleted)")
            if row[0] == "open":
                self._settle_held(conn, slug)
            conn.execute("UPDATE surveys SET status = 'closed', archived = 1 WHERE slug = ? OR family = ?", [slug, slug])
        return "archived"

    def unarchive_survey(self, slug: str) -> str:
        """Bring an archived survey and its earlier versions back to the lists, closed (``reopen`` takes responses
        again)."""
        with self._write() as conn:
            self._lock_survey(conn, slug)
            row = conn.execute("SELECT archived FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if not row[0]:
                raise StoreError(f"survey {slug!r} is not archived")
            conn.execute("UPDATE surveys SET archived = 0 WHERE slug = ? OR family = ?", [slug, slug])
        return "closed"

    def set_deletion_date(self, slug: str, day: str | None) -> str | None:
        """Set (an ISO day) or clear (None) the day from which ``purge_due`` deletes a survey and its earlier
        versions; return it."""
        day = None if day is None else parse_day(day)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM surveys WHERE slug = ?", [slug]).fetchone() is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            conn.execute("UPDATE surveys SET delete_after = ? WHERE slug = ? OR family = ?", [day, slug, slug])
        return day

    def due_for_deletion(self, *, on: str | None = None) -> list[str]:
        """Return the slugs of the surveys whose deletion date is ``on`` (default today, UTC) or earlier.

        A kept version whose family is itself due is left out: deleting the family deletes it.
        """
        day = on or today()
        return [row[0] for row in self._execute(
            "SELECT slug FROM surveys WHERE delete_after IS NOT NULL AND delete_after <= ? AND NOT EXISTS "
            "(SELECT 1 FROM surveys AS f WHERE f.slug = surveys.family AND f.delete_after IS NOT NULL "
            "AND f.delete_after <= ?) ORDER BY slug", [day, day]).fetchall()]

    def delete_survey(self, slug: str):
        """Delete a survey with its responses, held responses, sandbox, invitations, people and every other row of it.

        On SQLite the deleted rows' bytes are zeroed (secure_delete) and the write-ahead log is
        then emptied (``_forget_order``), so the file keeps no copy of them; on PostgreSQL the
        tables of e-mail addresses are rewritten (as ``Mailing.delete_addresses`` does) when the
        survey had any. Deleting a survey deletes its earlier versions too (``versioning``).
        """
        with self._write() as conn:
            # One transaction, its versions read inside it: a version made by a revision racing the deletion goes too.
            self._lock_survey(conn, slug)
            if conn.execute("SELECT 1 FROM surveys WHERE slug = ?", [slug]).fetchone() is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            kept = [row[0] for row in conn.execute("SELECT slug FROM surveys WHERE family = ? ORDER BY version",
                                                   [slug]).fetchall()]
            tables = self._schema.survey_tables(conn)
            addresses = False
            for key in [*kept, slug]:
                addresses = self._delete_rows(conn, key, tables) or addresses
        if not is_postgres_url(self.path):
            self._forget_order()
        elif addresses:
            self._execute("VACUUM (FULL) invitation_addresses, mail_log")

    def _delete_rows(self, conn, slug: str, tables: list[str]) -> bool:
        """Delete one survey row with its tables and rows in ``conn``'s write; return whether it had e-mail addresses."""
        self._lock_survey(conn, slug)
        design_hash = conn.execute("SELECT design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()[0]
        addresses = "invitation_addresses" in tables and conn.execute(
            "SELECT 1 FROM invitation_addresses WHERE survey = ?", [slug]).fetchone() is not None
        self._schema.drop_reports(conn, slug)
        self._schema.drop_sandbox(conn, slug, design_hash)
        for table in tables:
            conn.execute(f'DELETE FROM "{table}" WHERE survey = ?', [slug])
        conn.execute("DELETE FROM surveys WHERE slug = ?", [slug])
        return addresses
