"""Correcting a live survey: text revisions with their history, and versions that keep designs apart (issue 27).

A *text* revision (``core.revisions.TEXT``, and likewise a *settings* one: access or panel)
keeps the survey's randomization, its design hash, report table, tallies and sandbox: the
stored design takes the new wording and keeps the hash of the design its reports were made
with, and ``wordings`` records each definition with the day (never a time) from which
respondents saw it.

A *design* change of a survey with responses makes a new version under the same slug. The
survey row keeps the public slug, its invitations, owner, collaborators and mailing, and takes the
new design with empty counts; the old version becomes a closed survey row of its own under
``SLUG.vN`` (a dot is never in a slug, so the key cannot be taken), with its reports,
tallies, sandbox, held responses and text history, linked by ``family`` and ``version``. A
kept version has no people of its own: who sees it follows its survey (``accounts.people_of``).
Every per-survey feature keeps working on each version unchanged, and nothing pools them.
"""

from __future__ import annotations

import json

from ..core.definition import parse_definition_toml
from ..core.design import build_design
from ..core.revisions import DESIGN, NONE, SAME_DATA_SET, SETTINGS, TEXT, classify_change, wording_history
from .errors import StoreError, StoreUnavailable, SurveyNotFound
from .ids import today
from . import schema
from .schema import migrations

# Rows that belong to the survey's address, not to one design: they stay with the newest version.
FAMILY_TABLES = ("invitations", "unused_invitations", "invitation_addresses", "mail_log", "collaborators",
                 "collaborator_invitations", "interview_sessions")


@migrations()
def m019_versions_and_wordings(db):
    """Give surveys a family and version number and a wording revision, and keep each wording with its first day."""
    db.conn.execute("ALTER TABLE surveys ADD COLUMN family TEXT")
    db.conn.execute("ALTER TABLE surveys ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
    db.conn.execute("ALTER TABLE surveys ADD COLUMN wording INTEGER NOT NULL DEFAULT 0")
    db.conn.execute("""CREATE TABLE wordings (
                        survey TEXT NOT NULL REFERENCES surveys(slug) ON DELETE CASCADE,
                        revision INTEGER NOT NULL, from_day TEXT NOT NULL, definition TEXT NOT NULL,
                        PRIMARY KEY (survey, revision)) WITHOUT ROWID""")


@migrations()
def m021_kept_versions_follow_their_survey(db):
    """Drop the owner and collaborators copied to kept versions: who sees one follows its survey (``accounts``).

    Registered after m019 (it needs ``family``); it touches nothing m020 does.
    """
    kept = "family IN (SELECT f.slug FROM surveys f)"
    db.conn.execute(f"DELETE FROM collaborators WHERE survey IN (SELECT v.slug FROM surveys v WHERE v.{kept})")
    db.conn.execute(f"UPDATE surveys SET owner_id = NULL WHERE {kept}")


def version_key(slug: str, version: int) -> str:
    """Return the key under which version ``version`` of the survey ``slug`` is kept once a newer one exists."""
    return f"{slug}.v{version}"


class Versions:
    """Text revisions and versions: the part of ``Store`` that corrects a live survey."""

    def revise_text(self, slug: str, definition_text: str, design: dict) -> int:
        """Store a new wording of a survey whose randomization is unchanged; return its wording revision.

        ``design`` is built from ``definition_text``; it is stored with the current design's
        hash (the reports are one data set). The first revision also records the wording
        respondents saw before, from the day the survey was created. Raises StoreError when, against the
        definition stored now (a design change may have committed since the correction was classified),
        ``definition_text`` changes how answers are randomized.
        """
        with self._write() as conn:
            self._lock_survey(conn, slug)
            row = conn.execute("SELECT design_hash, definition, wording, created_day, archived FROM surveys "
                               "WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if row[4]:
                raise StoreError(f"survey {slug!r} is archived and read-only (unarchive it first)")
            if classify_change(parse_definition_toml(row[1]), parse_definition_toml(definition_text)).kind == DESIGN:
                # Classified against a definition a design change has replaced since: the reports would not match.
                raise StoreError(f"survey {slug!r} changed while this correction was prepared: it now changes how "
                                 "answers are randomized; review the correction again")
            stored = {**design, "hash": row[0]}
            revision = row[2] + 1
            if row[2] == 0:
                conn.execute("INSERT INTO wordings (survey, revision, from_day, definition) VALUES (?, 0, ?, ?)",
                             [slug, row[3], row[1]])
            conn.execute("INSERT INTO wordings (survey, revision, from_day, definition) VALUES (?, ?, ?, ?)",
                         [slug, revision, today(), definition_text])
            conn.execute("UPDATE surveys SET title = ?, definition = ?, design = ?, wording = ? WHERE slug = ?",
                         [design["title"], definition_text, json.dumps(stored, separators=(",", ":")), revision,
                          slug])
        return revision

    def apply_revision(self, slug: str, definition_text: str, design: dict, kind: str) -> tuple[str, int]:
        """Store a new definition of kind ``kind`` (``core.revisions``); return what was done and its number.

        ("none", 0) for no change; ("text", wording revision) for a text correction and
        ("settings", wording revision) for a settings change (both keep one data set);
        ("replaced", 1) for any change of a draft, replaced as drafts are; ("version", number) for a
        design change of a survey with responses; ("replaced", 1) for one of a survey without.
        """
        if kind == NONE:
            return "none", 0
        if kind not in (TEXT, SETTINGS, DESIGN):
            raise StoreError(f"a revision is {TEXT!r}, {SETTINGS!r} or {DESIGN!r}, not {kind!r}")
        if self.family(slug) != slug:
            raise StoreError(f"{slug!r} is an earlier version, kept as it was; correct the survey "
                             f"{self.family(slug)!r} instead")
        if self.survey_status(slug) == "draft":
            self.create_survey(definition_text, design, replace=True, status="draft")
            return "replaced", 1
        if kind in SAME_DATA_SET:
            return kind, self.revise_text(slug, definition_text, design)
        if not self._received(slug):
            try:
                self.create_survey(definition_text, design, replace=True)
                return "replaced", 1
            except StoreUnavailable:
                raise
            except StoreError:
                if not self._received(slug):  # refused for another reason than a first response that came meanwhile
                    raise
        return "version", self.new_version(slug, definition_text, design)

    def wordings(self, slug: str) -> list[dict]:
        """Return a survey's wordings, oldest first: {"revision", "from_day", "definition"} (empty: never corrected)."""
        self.get_design(slug)
        return [{"revision": row[0], "from_day": row[1], "definition": row[2]} for row in self._execute(
            "SELECT revision, from_day, definition FROM wordings WHERE survey = ? ORDER BY revision", [slug])]

    def new_version(self, slug: str, definition_text: str, design: dict) -> int:
        """Give a survey with responses a new design as its next version; return the new version number.

        The old version moves, closed, to ``SLUG.vN`` with all its data; the slug keeps its
        status, address, invitations and people, and takes the new design with no responses.
        """
        with self._write() as conn:
            self._lock_survey(conn, slug)
            row = conn.execute("SELECT design_hash, version, design, archived FROM surveys WHERE slug = ?",
                               [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if row[3]:
                raise StoreError(f"survey {slug!r} is archived and read-only (unarchive it first)")
            if row[0] == design["hash"]:
                raise StoreError(f"the new design of {slug!r} is the current one; nothing to version")
            earlier = conn.execute("SELECT slug FROM surveys WHERE family = ? AND design_hash = ?",
                                   [slug, design["hash"]]).fetchone()
            if earlier is not None:  # its tables are named by the design's hash
                raise StoreError(f"the new design of {slug!r} is the design of its earlier version {earlier[0]!r}, "
                                 "kept as it was; a new version needs a design of its own")
            version, old_design = row[1], json.loads(row[2])
            key = version_key(slug, version)
            if conn.execute("SELECT 1 FROM surveys WHERE slug = ?", [key]).fetchone() is not None:
                raise StoreError(f"version {version} of {slug!r} is already kept as {key!r}")
            self._settle_held(conn, slug)  # no whole step of responses stays held in the closed version
            self._keep_version(conn, slug, key, old_design)
            conn.execute("UPDATE surveys SET title = ?, definition = ?, design = ?, design_hash = ?, version = ?, "
                         "wording = 0, reports_table = NULL, pending = 0, smallest_release = NULL WHERE slug = ?",
                         [design["title"], definition_text, json.dumps(design, separators=(",", ":")),
                          design["hash"], version + 1, slug])
            self._schema.create_reports(conn, slug, design)
            self._schema.create_sandbox(conn, slug, design)
        return version + 1

    def _keep_version(self, conn, slug: str, key: str, design: dict):
        """Copy the survey row to ``key`` (closed), move its data rows there and point its counting at the copy."""
        columns = [column for column in self._survey_columns(conn) if column not in ("slug", "status", "family")]
        listed = ", ".join(columns)
        conn.execute(f"INSERT INTO surveys (slug, status, family, {listed}) "
                     f"SELECT ?, 'closed', ?, {listed} FROM surveys WHERE slug = ?", [key, slug, slug])
        # Who sees a kept version follows its survey (``accounts.people_of``): it keeps no owner or collaborators.
        conn.execute("UPDATE surveys SET owner_id = NULL WHERE slug = ?", [key])
        for table in self._schema.survey_tables(conn):
            if table not in FAMILY_TABLES:
                conn.execute(f'UPDATE "{table}" SET survey = ? WHERE survey = ?', [key, slug])
        if hasattr(self._schema, "create_submit_function"):
            # PostgreSQL: the submission function (named by the design) counts into the kept version.
            self._schema.create_submit_function(conn, key, design)
        else:
            # SQLite: the tally trigger names the survey; held responses released later count there.
            conn.execute(f'DROP TRIGGER IF EXISTS "{schema.trigger_name(design)}"')
            conn.execute(schema.tally_trigger_sql(key, design))

    def _survey_columns(self, conn) -> list[str]:
        """Return the columns of the surveys table (every one is copied to a kept version)."""
        cursor = conn.execute("SELECT * FROM surveys WHERE 1 = 0")
        return [column[0] for column in cursor.description]

    def versions(self, slug: str) -> list[dict]:
        """Return every version of a survey's family, oldest first: {"slug", "version", "status", "responses", "epsilon", "current"}."""
        row = self._execute("SELECT coalesce(family, slug) FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        found = []
        for key, version, status, design_text in self._execute(
                "SELECT slug, version, status, design FROM surveys "
                "WHERE slug = ? OR family = ? ORDER BY version", [row[0], row[0]]).fetchall():
            found.append({"slug": key, "version": version, "status": status, "responses": self._received(key),
                          "epsilon": json.loads(design_text)["epsilon"], "current": key == row[0]})
        return found

    def kept_versions(self, slug: str) -> list[str]:
        """Return the keys of the earlier versions a survey keeps (none for a kept version itself)."""
        return [row[0] for row in self._execute("SELECT slug FROM surveys WHERE family = ? ORDER BY version",
                                                [slug]).fetchall()]

    def family(self, slug: str) -> str:
        """Return the public slug of a survey's family (the slug itself, or the slug a kept version belongs to)."""
        row = self._execute("SELECT coalesce(family, slug) FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    def revision_record(self, slug: str) -> dict:
        """Return what exports record of a survey's corrections: {"version", "of", "public_slug"} and, once its
        wording was corrected, "wording_history" (``core.revisions.wording_history``) and "hashed_design" (the
        design of the first wording, whose hash the reports carry)."""
        versions = self.versions(slug)
        own = next(entry for entry in versions if entry["slug"] == slug)
        record = {"version": own["version"], "of": len(versions), "public_slug": self.family(slug)}
        wordings = self.wordings(slug)
        if wordings:
            definitions = [(entry["from_day"], parse_definition_toml(entry["definition"])) for entry in wordings]
            record["wording_history"] = wording_history(definitions)
            first = build_design(definitions[0][1])
            if first["hash"] == self.get_design(slug)["hash"]:
                record["hashed_design"] = first
        elif record["public_slug"] != slug:
            # A kept version's design as stored: under the public slug its hash covers.
            row = self._execute("SELECT design FROM surveys WHERE slug = ?", [slug]).fetchone()
            record["hashed_design"] = json.loads(row[0])
        return record
