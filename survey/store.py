"""Store surveys, noisy reports and researcher accounts in SQLite (sqlite-utils, WAL).

Only noisy reports are stored, with the day they arrived: never an IP address, a user
agent or an exact time (DESIGN.md §1, invariant 5). Response ids are random, so their
order says nothing about arrival order. This module does not import Flask.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from pathlib import Path
from typing import Iterable, Iterator

import sqlite_utils

migrations = sqlite_utils.Migrations("ldp-survey")


@migrations()
def m001_initial(db):
    """Create the surveys, responses, users and settings tables."""
    db["surveys"].create({"slug": str, "title": str, "definition": str, "design": str,
                          "design_hash": str, "created_day": str}, pk="slug")
    db["responses"].create({"id": str, "survey": str, "design_hash": str, "received_day": str,
                            "answers": str}, pk="id", foreign_keys=[("survey", "surveys", "slug")])
    db["responses"].create_index(["survey"])
    db["users"].create({"id": int, "email": str, "password_hash": str, "created_day": str}, pk="id")
    db["users"].create_index(["email"], unique=True)
    db["settings"].create({"key": str, "value": str}, pk="key")


class StoreError(Exception):
    """A storage request cannot be honoured (unknown survey, frozen design, duplicate)."""


class SurveyNotFound(StoreError):
    """No survey has this slug."""


def today() -> str:
    """Return the current UTC day as YYYY-MM-DD, the only time recorded with a response."""
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


class Store:
    """Open (and migrate) the database at ``path``."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        self.db = sqlite_utils.Database(self.path)
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.execute("PRAGMA busy_timeout = 5000")
        if self.path != ":memory:":
            self.db.enable_wal()
        migrations.apply(self.db)

    def close(self):
        """Close the connection."""
        self.db.close()

    # Surveys

    def create_survey(self, definition_text: str, design: dict, *, replace: bool = False):
        """Store a new survey, or replace the design of one that has no responses yet.

        Raises StoreError if the slug exists (and ``replace`` is false) or if the existing
        design is frozen because responses arrived (invariant 7).
        """
        slug = design["slug"]
        row = {"slug": slug, "title": design["title"], "definition": definition_text,
               "design": json.dumps(design, sort_keys=True), "design_hash": design["hash"],
               "created_day": today()}
        with self.db.conn:
            if self.survey_exists(slug):
                if not replace:
                    raise StoreError(f"a survey with slug {slug!r} already exists")
                if self.response_count(slug):
                    raise StoreError(f"survey {slug!r} already has responses; its design is frozen")
                self.db["surveys"].update(slug, {k: v for k, v in row.items() if k != "created_day"})
            else:
                self.db["surveys"].insert(row)

    def survey_exists(self, slug: str) -> bool:
        """Return whether a survey has this slug."""
        return self.db.execute("select 1 from surveys where slug = ?", [slug]).fetchone() is not None

    def get_design(self, slug: str) -> dict:
        """Return the design of a survey, or raise SurveyNotFound."""
        row = self.db.execute("select design from surveys where slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return json.loads(row[0])

    def get_definition(self, slug: str) -> str:
        """Return the definition text a survey was created from."""
        row = self.db.execute("select definition from surveys where slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    def list_surveys(self) -> list[dict]:
        """Return every survey's slug, title, creation day and response count, by slug."""
        sql = """select s.slug, s.title, s.created_day, s.design_hash,
                        (select count(*) from responses r where r.survey = s.slug) as responses
                 from surveys s order by s.slug"""
        return [dict(zip(("slug", "title", "created_day", "design_hash", "responses"), row))
                for row in self.db.execute(sql).fetchall()]

    # Responses

    def add_response(self, slug: str, design_hash: str, answers: dict, *, day: str | None = None) -> str:
        """Store one validated response in its own transaction and return its random id."""
        return self.add_responses(slug, design_hash, [answers], day=day)[0]

    def add_responses(self, slug: str, design_hash: str, answers_list: Iterable[dict], *,
                      day: str | None = None) -> list[str]:
        """Store validated responses in one transaction and return their random ids."""
        day = day or today()
        rows = [{"id": secrets.token_hex(8), "survey": slug, "design_hash": design_hash,
                 "received_day": day, "answers": json.dumps(answers, separators=(",", ":"))}
                for answers in answers_list]
        with self.db.conn:
            current = self.db.execute("select design_hash from surveys where slug = ?", [slug]).fetchone()
            if current is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if current[0] != design_hash:
                raise StoreError(f"design {design_hash!r} is not the current design of {slug!r}")
            self.db["responses"].insert_all(rows)
        return [row["id"] for row in rows]

    def response_count(self, slug: str) -> int:
        """Return how many responses a survey has."""
        return self.db.execute("select count(*) from responses where survey = ?", [slug]).fetchone()[0]

    def iter_answers(self, slug: str) -> Iterator[dict]:
        """Yield the noisy answers ``{QID: REPORT}`` of every response of a survey."""
        for (answers,) in self.db.execute("select answers from responses where survey = ?", [slug]):
            yield json.loads(answers)

    def iter_responses(self, slug: str) -> Iterator[dict]:
        """Yield ``{"id", "received_day", "answers"}`` of every response, ordered by random id."""
        sql = "select id, received_day, answers from responses where survey = ? order by id"
        for rid, day, answers in self.db.execute(sql, [slug]):
            yield {"id": rid, "received_day": day, "answers": json.loads(answers)}

    # Users

    def add_user(self, email: str, password_hash: str, *, replace: bool = False):
        """Create a researcher account, or set its password when ``replace`` is true."""
        with self.db.conn:
            existing = self.get_user(email)
            if existing and not replace:
                raise StoreError(f"a user with email {email!r} already exists")
            if existing:
                self.db["users"].update(existing["id"], {"password_hash": password_hash})
            else:
                self.db["users"].insert({"email": email, "password_hash": password_hash,
                                         "created_day": today()})

    def get_user(self, email: str) -> dict | None:
        """Return the account with this email (case-insensitive), or None."""
        row = self.db.execute("select id, email, password_hash from users where lower(email) = lower(?)",
                              [email]).fetchone()
        return dict(zip(("id", "email", "password_hash"), row)) if row else None

    def get_user_by_id(self, user_id: int) -> dict | None:
        """Return the account with this id, or None."""
        row = self.db.execute("select id, email, password_hash from users where id = ?", [user_id]).fetchone()
        return dict(zip(("id", "email", "password_hash"), row)) if row else None

    # Settings

    def get_setting(self, key: str, default: str | None = None) -> str | None:
        """Return a stored setting, or ``default``."""
        row = self.db.execute("select value from settings where key = ?", [key]).fetchone()
        return row[0] if row else default

    def set_setting(self, key: str, value: str):
        """Store a setting."""
        with self.db.conn:
            self.db["settings"].upsert({"key": key, "value": value}, pk="key")

    def secret_key(self) -> str:
        """Return the app's session-signing key, creating and storing a random one on first use."""
        key = self.get_setting("secret_key")
        if key is None:
            key = secrets.token_hex(32)
            self.db.execute("insert or ignore into settings (key, value) values (?, ?)", ["secret_key", key])
            self.db.conn.commit()
            key = self.get_setting("secret_key")
        return key
