"""The face of the store: ``Store(location)`` and the SQL both backends share (``sqlite``, ``postgres``).

Only noisy reports are stored, with the day they arrived: never an IP address, a user
agent or an exact time (docs/explanation/privacy.md). Reports are integers in one table per
survey keyed by a random id (``schema``), and per-indicator tallies are kept current in
the same transaction as every insert, so a survey's aggregates cost a few rows whatever
its size. The statements here are written with ``?`` placeholders and portable clauses;
each backend gives its connection, transactions and the writes it makes its own way.
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..core import codec
from ..core.design import release_every
from . import admission, lines, patterns
from .accounts import Accounts, people_of
from .interviews import Interviews
from .mailing import Mailing
from .retention import Retention
from .versioning import Versions
from .design_cache import DESIGNS as _DESIGNS, LOCK as _DESIGNS_LOCK, wording_key
from .errors import SlugTaken, StoreError, SurveyClosed, SurveyNotFound
from .ids import new_ids, today
from .location import is_postgres_url
from .batches import Batch, batch_from_answers, batch_from_columns
from .schema import REPORTS, RESPONSES, SANDBOX_SOURCES, column_names, report_columns, sandbox_table_name, table_name

BUSY_TIMEOUT_MS = 10_000
# How long a statement waits for another connection's lock before the store is unavailable.
LOCK_TIMEOUT_ENV = "LDP_SURVEY_LOCK_TIMEOUT_MS"
ID_ATTEMPTS = 3


# The lifecycle's transitions: the action, the statuses it applies to, the status it leads to.
TRANSITIONS = {"publish": (("draft",), "open"), "close": (("open",), "closed"), "reopen": (("closed",), "open")}
# What a researcher may do with a survey in each status (named in every refused transition).
ALLOWED = {"draft": "a draft can be published, replaced, duplicated or deleted",
           "open": "an open survey can be closed or duplicated",
           "closed": "a closed survey can be reopened or duplicated"}


def survey_lock(slug: str) -> str:
    """Return the name of the lock that a change of a survey's status holds alone and its inserts share."""
    return "survey:" + slug


def lock_timeout_ms() -> int:
    """Return how long to wait for a lock, in milliseconds: $LDP_SURVEY_LOCK_TIMEOUT_MS, else BUSY_TIMEOUT_MS."""
    text = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not text:
        return BUSY_TIMEOUT_MS
    if not text.isdigit():
        raise StoreError(f"{LOCK_TIMEOUT_ENV} must be a whole number of milliseconds, got {text!r}")
    return int(text)


# The store class of each kind of location, "sqlite" and "postgresql": each backend's class
# names itself when it is defined (``Store.__init_subclass__``), so this module imports neither.
BACKENDS: dict[str, type] = {}


class Store(Accounts, Mailing, Retention, Interviews, Versions):
    """A survey database: ``Store(location)`` opens PostgreSQL's store for a ``postgresql://`` URL, else SQLite's.

    Both backends (``sqlite.SqliteStore``, ``postgres.PostgresStore``) run the methods here with
    the same SQL; each gives its connection (``conn``, ``_execute``), its transactions
    (``_write``, ``_snapshot``), its locks (``_serialize``, ``_hold_open``), its schema functions
    (``_schema``) and its own way of storing one response.
    """

    # How the backend concatenates a page of CSV lines in order (``lines.response_chunks``).
    LINE_CONCAT = lines.SQLITE_CONCAT

    def __init_subclass__(cls, *, backend: str | None = None, **kwargs):
        """Record a backend's class under the kind of location it opens (``BACKENDS``)."""
        super().__init_subclass__(**kwargs)
        if backend is not None:
            BACKENDS[backend] = cls

    def __new__(cls, path=None, *args, **kwargs):
        """Open a PostgreSQL store for a ``postgresql://`` URL, SQLite's for anything else (a file path)."""
        if cls is Store:
            cls = BACKENDS["postgresql" if is_postgres_url(path) else "sqlite"]
        return super().__new__(cls)

    # Surveys

    def create_survey(self, definition_text: str, design: dict, *, replace: bool = False,
                      owner: str | None = None, status: str | None = None):
        """Store a new survey, or replace the design of one that has no responses yet.

        ``owner`` is the email of the researcher it belongs to (None: no one sees it until
        ``share`` gives it an owner). ``status`` is "open" (the default: respondents can
        answer at once) or "draft"; a replaced survey keeps its status, and only a draft
        stays a draft. Raises StoreError if the slug exists (and ``replace`` is false), if
        the existing design is frozen because responses arrived (invariant 7) or the survey
        is closed, or if the owner has no account.
        """
        slug = design["slug"]
        if status not in (None, "open", "draft"):
            raise StoreError(f"a new survey is 'open' or 'draft', not {status!r}")
        with self._write() as conn:
            # A replaced design's tables are dropped: wait for the inserts that checked the old one.
            self._serialize(conn, survey_lock(slug))
            owner_id = None
            if owner is not None:
                account = self.get_user(owner)
                if account is None:
                    raise StoreError(f"no researcher account {owner!r}; create it with `ldp-survey user add`")
                owner_id = account["id"]
            row = conn.execute("SELECT status, design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is not None:
                if not replace:
                    raise SlugTaken(f"a survey with slug {slug!r} already exists")
                if self._received(slug):
                    raise StoreError(f"survey {slug!r} already has responses; its design is frozen")
                if row[0] == "closed":
                    raise StoreError(f"survey {slug!r} is closed; its design is frozen ({ALLOWED['closed']})")
                if status == "draft" and row[0] != "draft":
                    raise StoreError(f"survey {slug!r} is {row[0]}; a published survey cannot become a draft again")
                conn.execute("UPDATE surveys SET title = ?, definition = ?, design = ?, design_hash = ?, "
                             "owner_id = coalesce(?, owner_id) WHERE slug = ?",
                             [design["title"], definition_text, _design_text(design), design["hash"], owner_id,
                              slug])
            else:
                conn.execute("INSERT INTO surveys (slug, title, definition, design, design_hash, created_day, "
                             "owner_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [slug, design["title"], definition_text, _design_text(design), design["hash"],
                              today(), owner_id, status or "open"])
            self._schema.create_reports(conn, slug, design)
            if row is not None and row[1] != design["hash"]:
                # Test answers and simulated reports of the old design mean nothing under the new one.
                self._schema.drop_sandbox(conn, slug, row[1])
            self._schema.create_sandbox(conn, slug, design)

    # Lifecycle: draft -> open -> closed (-> open again)

    def survey_status(self, slug: str) -> str:
        """Return a survey's status: "draft", "open" or "closed"."""
        row = self._execute("SELECT status FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    def _transition(self, slug: str, action: str) -> str:
        sources, target = TRANSITIONS[action]
        with self._write() as conn:
            self._serialize(conn, survey_lock(slug))
            row = conn.execute("SELECT status, archived, family FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if row[1] or row[2] is not None:  # archived, or an earlier version kept as it was (``versioning``)
                raise StoreError(f"cannot {action} survey {slug!r}: it is " + ("archived and read-only (unarchive it "
                                 "first, or delete it)" if row[1] else f"an earlier version of {row[2]!r}, kept as it was"))
            if row[0] not in sources:
                raise StoreError(f"cannot {action} survey {slug!r}: it is {_status_phrase(row[0])} "
                                 f"({ALLOWED[row[0]]})")
            if target == "closed":
                self._settle_held(conn, slug)  # no whole step of responses stays held once none arrives
            conn.execute("UPDATE surveys SET status = ? WHERE slug = ?", [target, slug])
        return target

    def _lock_survey(self, conn, slug: str):
        """Wait in ``conn``'s write for the inserts that checked the survey's status, and hold them off."""
        self._serialize(conn, survey_lock(slug))

    def publish_survey(self, slug: str) -> str:
        """Open a draft to respondents (draft -> open); its design is then frozen once responses arrive."""
        return self._transition(slug, "publish")

    def close_survey(self, slug: str) -> str:
        """Stop taking responses (open -> closed); a submission racing the close is not stored."""
        return self._transition(slug, "close")

    def reopen_survey(self, slug: str) -> str:
        """Take responses again (closed -> open)."""
        return self._transition(slug, "reopen")

    def delete_draft(self, slug: str):
        """Delete a draft with its report table, tallies, sandbox and collaborators; any other survey is refused."""
        with self._write() as conn:
            self._serialize(conn, survey_lock(slug))
            row = conn.execute("SELECT status, design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if row[0] != "draft" or self._received(slug):
                raise StoreError(f"cannot delete survey {slug!r}: it is {_status_phrase(row[0])} and only a "
                                 f"draft can be deleted ({ALLOWED[row[0]]})")
            self._schema.drop_reports(conn, slug)
            self._schema.drop_sandbox(conn, slug, row[1])
            conn.execute("DELETE FROM collaborators WHERE survey = ?", [slug])
            conn.execute("DELETE FROM surveys WHERE slug = ?", [slug])

    def duplicate_survey(self, slug: str, definition_text: str, design: dict):
        """Store a copy of a survey as a new draft: ``design`` (its new slug) built from ``definition_text``.

        The copy has the same owner and collaborators, no responses, and status "draft".
        """
        new_slug = design["slug"]
        with self._write() as conn:
            row = conn.execute(f"SELECT f.owner_id, f.slug FROM surveys v JOIN surveys f ON f.slug = {people_of('v')} "
                               "WHERE v.slug = ?", [slug]).fetchone()  # a kept version's people are its survey's
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            if conn.execute("SELECT 1 FROM surveys WHERE slug = ?", [new_slug]).fetchone():
                raise SlugTaken(f"a survey with slug {new_slug!r} already exists")
            conn.execute("INSERT INTO surveys (slug, title, definition, design, design_hash, created_day, "
                         "owner_id, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'draft')",
                         [new_slug, design["title"], definition_text, _design_text(design), design["hash"],
                          today(), row[0]])
            conn.execute("INSERT INTO collaborators (survey, user_id) SELECT ?, user_id FROM collaborators "
                         "WHERE survey = ?", [new_slug, row[1]])
            self._schema.create_reports(conn, new_slug, design)
            self._schema.create_sandbox(conn, new_slug, design)

    def survey_exists(self, slug: str) -> bool:
        """Return whether a survey has this slug."""
        return self._execute("SELECT 1 FROM surveys WHERE slug = ?", [slug]).fetchone() is not None

    def get_design(self, slug: str) -> dict:
        """Return the design of a survey (shared and cached by hash: do not modify it), or raise SurveyNotFound."""
        # A corrected wording keeps its hash (``versioning``), so its stored text is read too and
        # named by its digest: never another database's or a deleted survey's wording of that number.
        row = self._execute("SELECT design_hash, wording, CASE WHEN wording <> 0 THEN design END FROM surveys "
                            "WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        key = wording_key(row[0], row[1], row[2])
        design = _DESIGNS.get(key)
        if design is None:
            text = row[2] or self._execute("SELECT design FROM surveys WHERE slug = ?", [slug]).fetchone()
            if text is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            design = json.loads(text if isinstance(text, str) else text[0])
            with _DESIGNS_LOCK:
                _DESIGNS[key] = design
        if design["slug"] != slug:  # a kept version (``versioning``) is named by its own key, pages and exports too
            design = {**design, "slug": slug}
        return design

    def get_definition(self, slug: str) -> str:
        """Return the definition text a survey was created from."""
        row = self._execute("SELECT definition FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    # Responses

    def create_invitations(self, slug: str, count: int) -> list[str]:
        """Make ``count`` single-use invitations of an invitation-only survey; return the tokens (shown once).

        Only each token's hash is stored, with the survey, a used flag and today's date.
        Raises StoreError unless the survey's design has access = "invite" and 1 <= count
        <= MAX_INVITATIONS.
        """
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= admission.MAX_INVITATIONS:
            raise StoreError(f"the number of invitations must be from 1 to {admission.MAX_INVITATIONS}, "
                             f"got {count!r}")
        design = self.get_design(slug)
        if design.get("access") != "invite":
            raise StoreError(f"survey {slug!r} is open to anyone with its link; invitations need "
                             "access = \"invite\" in its definition")
        with self._write() as conn:
            return admission.add_invitations(conn, slug, count, today())

    def invitation_status(self, slug: str, token: str) -> str:
        """Return "unused", "used" or "unknown" for an invitation token of a survey, without using it.

        Read-only and unrecorded: the same answer the submission would give (403 unknown,
        409 used), so the respondent page can say it before any answer is given.
        """
        return admission.invitation_status(self.conn, slug, token)

    def invitation_counts(self, slug: str) -> tuple[int, int]:
        """Return (invitations made, invitations used) of a survey."""
        return admission.invitation_counts(self.conn, slug)

    def add_responses(self, slug: str, design_hash: str, answers_list: Iterable[dict], *,
                      day: str | None = None, source: str | None = None) -> list[str]:
        """Store validated responses ``{QID: REPORT}`` in one transaction and return their random ids.

        With ``source`` ("test" or "simulated") they go to the survey's sandbox instead, in
        any status, a draft's included: the reports, their tallies and the response count
        are untouched, so a draft's design stays unfrozen.
        """
        answers_list = list(answers_list)
        design = self._design_with_hash(slug, design_hash)
        days = [day or today()] * len(answers_list)
        return self._insert(slug, design_hash, len(answers_list),
                            lambda ids: batch_from_answers(design, ids, days, answers_list), source=source)

    def add_report_columns(self, slug: str, design_hash: str, columns: Sequence[np.ndarray], *,
                           asked: np.ndarray | None = None, day: str | None = None,
                           source: str | None = None, ids: Sequence[str] | None = None) -> int:
        """Store validated reports given per question as (n, words) arrays (``survey.core.codec``) in one transaction.

        The fast path of simulations: every question answered by all n respondents, or with
        ``asked`` (an (n, k) boolean matrix, sample allocation) only the asked ones, the
        others stored as NULL. With ``source``, into the sandbox (as ``add_responses``). ``ids``
        gives the n rows' random ids (a block of ``ids.sorted_id_blocks``, for a bulk load of
        simulated respondents); new random ones are drawn if absent or if one is taken. Returns n.
        """
        design = self._design_with_hash(slug, design_hash)
        if len(columns) != len(design["questions"]):
            raise StoreError(f"expected reports to {len(design['questions'])} questions, got {len(columns)}")
        n = len(columns[0]) if columns else 0
        if asked is not None and np.shape(asked) != (n, len(columns)):
            raise StoreError(f"asked must be an ({n}, {len(columns)}) matrix, got shape {np.shape(asked)}")
        if ids is not None and len(ids) != n:
            raise StoreError(f"expected {n} ids, got {len(ids)}")
        days = [day or today()] * n
        self._insert(slug, design_hash, n, lambda made: batch_from_columns(design, made, days, columns, asked),
                     source=source, ids=ids)
        return n

    def _design_with_hash(self, slug: str, design_hash: str) -> dict:
        """Return the design with this hash (cached: no query), checking that it is the slug's current one.

        The check is repeated inside the insert's transaction (``_insert``).
        """
        design = _DESIGNS.get(design_hash)
        if design is not None and design["slug"] == slug:
            return design
        design = self.get_design(slug)
        if design["hash"] != design_hash:
            raise StoreError(f"design {design_hash!r} is not the current design of {slug!r}")
        return design

    def clear_sandbox(self, slug: str, source: str) -> int:
        """Delete every sandbox response of a source ("test" or "simulated"); return how many there were."""
        _check_source(source)
        with self._write() as conn:
            row = conn.execute("SELECT design_hash FROM surveys WHERE slug = ?", [slug]).fetchone()
            if row is None:
                raise SurveyNotFound(f"no survey with slug {slug!r}")
            deleted = conn.execute(f'DELETE FROM "{sandbox_table_name(row[0])}" WHERE source = ?',
                                   [source]).rowcount
            patterns.clear_sandbox(conn, self.get_design(slug), source)
            conn.execute("DELETE FROM sandbox_tallies WHERE survey = ? AND source = ?", [slug, source])
        return deleted

    def sandbox_counts(self, slug: str) -> dict[str, int]:
        """Return how many test answers and simulated responses a survey's sandbox holds: {"test": n, "simulated": m}."""
        self.get_design(slug)
        counts = dict.fromkeys(SANDBOX_SOURCES, 0)
        for source, count in self._execute("SELECT source, count FROM sandbox_tallies WHERE survey = ? "
                                           "AND question = ? AND option = ?", [slug, RESPONSES, REPORTS]):
            counts[source] = count
        return counts

    def _insert(self, slug: str, design_hash: str, n: int, make_batch, *, source: str | None = None,
                ids: Sequence[str] | None = None) -> list[str]:
        """Insert a batch into the reports (the survey must be open), or with ``source`` into its sandbox (any status).

        The rows get ``ids`` if given (new random ones if one collides), else new random ids.
        """
        if source is not None:
            _check_source(source)
        for attempt in range(ID_ATTEMPTS):
            ids = list(ids) if ids is not None and attempt == 0 else new_ids(n)
            batch: Batch = make_batch(ids)
            try:
                with self._write() as conn:
                    self._check_current(conn, slug, design_hash, must_be_open=source is None)
                    if source is None:
                        self._schema.insert_batch(conn, slug, _DESIGNS[design_hash], batch)
                    else:
                        self._schema.insert_sandbox(conn, slug, _DESIGNS[design_hash], batch, source)
                return ids
            except self._id_collision():
                # Two random 64-bit ids collided: draw new ones (the transaction was rolled back).
                if attempt == ID_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _check_current(self, conn, slug: str, design_hash: str, *, must_be_open: bool):
        """Raise unless the survey exists with this design and, when ``must_be_open``, is open (in the write)."""
        self._hold_open(conn, slug)
        current = conn.execute("SELECT design_hash, status FROM surveys WHERE slug = ?", [slug]).fetchone()
        if current is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        if must_be_open and current[1] != "open":
            raise SurveyClosed(closed_message(slug, current[1]))
        if current[0] != design_hash:
            raise StoreError(f"design {design_hash!r} is not the current design of {slug!r}")

    def release_state(self, slug: str) -> dict:
        """Return a survey's release step and counts: {"every", "released", "held", "smallest_release"}.

        ``released`` responses are the ones every read sees; ``held`` ones wait for the next
        release (fewer than ``every``); ``smallest_release`` is the size of a release made
        early with ``release_held`` (None if none was).
        """
        design = self.get_design(slug)
        row = self._execute("SELECT responses, pending, smallest_release FROM surveys WHERE slug = ?",
                            [slug]).fetchone()
        return {"every": release_every(design), "released": row[0], "held": row[1], "smallest_release": row[2]}

    def received_count(self, slug: str) -> int:
        """Return how many responses a survey has stored: released, and held for the next release."""
        if not self.survey_exists(slug):
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return self._received(slug)

    def _received(self, slug: str) -> int:
        """Return the released and held responses of a survey (0 when there is no such survey)."""
        row = self._execute("SELECT responses + pending FROM surveys WHERE slug = ?", [slug]).fetchone()
        return 0 if row is None else row[0]

    def response_count(self, slug: str) -> int:
        """Return how many responses a survey has released (kept current at insert: no scan)."""
        row = self._execute("SELECT responses FROM surveys WHERE slug = ?", [slug]).fetchone()
        if row is None:
            raise SurveyNotFound(f"no survey with slug {slug!r}")
        return row[0]

    def tallies(self, slug: str, *, sandbox: bool = False) -> tuple[int, dict[str, tuple[int, list[int]]]]:
        """Return the number of responses and question_counts, read together in one snapshot (of the sandbox with ``sandbox``)."""
        with self._snapshot():
            if sandbox:
                return sum(self.sandbox_counts(slug).values()), self.question_counts(slug, sandbox=True)
            return self.response_count(slug), self.question_counts(slug)

    def responses_per_day(self, slug: str) -> list[tuple[str, int]]:
        """Return (day, responses) for every day a survey received responses, oldest first (kept at insert)."""
        return [tuple(row) for row in self._execute(
            "SELECT day, responses FROM daily_responses WHERE survey = ? ORDER BY day", [slug]).fetchall()]

    def question_counts(self, slug: str, *, sandbox: bool = False) -> dict[str, tuple[int, list[int]]]:
        """Return per question id its number of reports and the 1s of each indicator (from the tallies).

        With ``sandbox``, of the survey's test answers and simulated responses together instead.
        """
        design = self.get_design(slug)
        reports = [0] * len(design["questions"])
        ones = [[0] * codec.tally_count(question) for question in design["questions"]]
        sql = ("SELECT question, option, CAST(sum(count) AS BIGINT) FROM sandbox_tallies WHERE survey = ? AND question >= 0 "
               "GROUP BY question, option" if sandbox else
               "SELECT question, option, count FROM tallies WHERE survey = ?")
        for index, option, count in self._execute(sql, [slug]):
            if option == REPORTS:
                reports[index] = count
            else:
                ones[index][option] = count
        return {question["id"]: (reports[index], ones[index])
                for index, question in enumerate(design["questions"])}

    def recount(self, slug: str, *, sandbox: bool = False) -> dict[str, tuple[int, list[int]]]:
        """Return the same counts as question_counts, recomputed from every stored report (a full scan)."""
        design = self.get_design(slug)
        table = _table(design, sandbox)
        counts = {}
        for question, names in zip(design["questions"], report_columns(design)):
            words = np.array(self._execute(
                f'SELECT {", ".join(names)} FROM "{table}" WHERE {names[0]} IS NOT NULL').fetchall(),
                dtype=np.int64).reshape(-1, len(names))
            counts[question["id"]] = (len(words), [int(x) for x in codec.tally(question, words)])
        return counts

    def joint_reports(self, slug: str, first: str, second: str, *,
                      sandbox: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return the distinct report pairs of two questions among respondents who answered both (in the sandbox with ``sandbox``).

        Returns (words of the first question, words of the second, how many respondents
        gave each pair): ``codec.indicators`` of each side, weighted by the counts, give
        every joint count of their indicators. One GROUP BY in SQL; no report is decoded.
        """
        (words_a, words_b), counts = self.joint_patterns(slug, [first, second], sandbox=sandbox)
        return words_a, words_b, counts

    def joint_patterns(self, slug: str, questions: list[str], *, sandbox: bool = False,
                       recount: bool = False) -> tuple[list[np.ndarray], np.ndarray]:
        """Return the distinct report patterns of some questions among respondents who answered all of them.

        Returns ([the words of each pattern, per question in the order given], how many respondents sent
        each pattern), in ascending order of the words: one GROUP BY in SQL over the report patterns kept
        at insert (``patterns``) when they cover the questions, else (or with ``recount``) over every
        stored report; both give the same. A question may be named twice (a crosstab of a question with itself).
        """
        design = self.get_design(slug)
        index = {question["id"]: i for i, question in enumerate(design["questions"])}
        for qid in questions:
            if qid not in index:
                raise StoreError(f"{qid!r} is not a question of {slug!r}")
        columns = report_columns(design)
        chosen = [columns[index[qid]] for qid in questions]
        selected = ", ".join(name for names in chosen for name in names)
        if not recount and patterns.covers(design, questions):
            table = patterns.sandbox_table(design["hash"]) if sandbox else patterns.released_table(design)
            answered = " AND ".join(f"{names[0]} >= 0" for names in chosen)
            count = "CAST(sum(count) AS BIGINT)"
        else:
            table, count = _table(design, sandbox), "count(*)"
            answered = " AND ".join(f"{names[0]} IS NOT NULL" for names in chosen)
        rows = self._execute(f'SELECT {selected}, {count} FROM "{table}" '
                             f"WHERE {answered} GROUP BY {selected} ORDER BY {selected}").fetchall()
        width = sum(len(names) for names in chosen)
        table = np.array(rows, dtype=np.int64).reshape(-1, width + 1)
        words, start = [], 0
        for names in chosen:
            words.append(table[:, start:start + len(names)])
            start += len(names)
        return words, table[:, -1]

    def released_patterns(self, slug: str, questions: list[str]) -> tuple[int, list[np.ndarray], np.ndarray]:
        """Return the released response count with ``joint_patterns`` of the released reports, read in one snapshot."""
        with self._snapshot():
            return (self.response_count(slug), *self.joint_patterns(slug, questions))

    def iter_responses(self, slug: str, *, sandbox: bool = False, after: str | None = None,
                       limit: int | None = None) -> Iterator[dict]:
        """Yield ``{"id", "received_day", "answers"}`` of every response, ordered by random id.

        ``answers`` maps each answered question id to its wire-format report. With ``sandbox``,
        the sandbox's responses instead, each with its ``source`` ("test" or "simulated").
        ``after`` starts past that id and ``limit`` stops after so many rows (a page of the API).
        """
        design = self.get_design(slug)
        columns = report_columns(design)
        names = ", ".join(column_names(design))
        spans, start = [], 3
        for names_of_question in columns:
            spans.append((start, start + len(names_of_question)))
            start += len(names_of_question)
        source = "source" if sandbox else "NULL"
        where = "" if after is None else " WHERE id > ?"
        tail = "" if limit is None else " LIMIT ?"
        parameters = [value for value in (after, limit) if value is not None]
        sql = f'SELECT id, received_day, {source}, {names} FROM "{_table(design, sandbox)}"{where} ORDER BY id{tail}'
        for row in self._execute(sql, parameters):
            answers = {}
            for question, (lo, hi) in zip(design["questions"], spans):
                if row[lo] is not None:
                    answers[question["id"]] = codec.decode_report(question, row[lo:hi])
            response = {"id": row[0], "received_day": row[1], "answers": answers}
            if sandbox:
                response["source"] = row[2]
            yield response

    def iter_response_lines(self, slug: str, cells: Sequence[tuple[int, int | None]], *, sandbox: bool = False,
                            page: int | None = None) -> Iterator[list[str]]:
        """Yield the responses as CSV lines made by the database, ``page`` at a time (``lines``; the export's read)."""
        design = self.get_design(slug)
        return lines.response_lines(self._execute, design, cells, _table(design, sandbox), sandbox=sandbox, page=page,
                                    concat=self.LINE_CONCAT)

    def iter_response_chunks(self, slug: str, cells: Sequence[tuple[int, int | None]], *, sandbox: bool = False,
                             page: int | None = None) -> Iterator[str]:
        """Yield the responses as CSV text made by the database, one string of ``page`` lines at a time (``lines``)."""
        design = self.get_design(slug)
        return lines.response_chunks(self._execute, design, cells, _table(design, sandbox), sandbox=sandbox, page=page,
                                     concat=self.LINE_CONCAT)

    def iter_answers(self, slug: str) -> Iterator[dict]:
        """Yield the noisy answers ``{QID: REPORT}`` of every response, ordered by random id."""
        for response in self.iter_responses(slug):
            yield response["answers"]


def _table(design: dict, sandbox: bool) -> str:
    """Return the name of the table of a design's reports, or of its sandbox."""
    return sandbox_table_name(design["hash"]) if sandbox else table_name(design)


def _check_source(source: str):
    if source not in SANDBOX_SOURCES:
        raise StoreError(f"a sandbox source is one of {', '.join(SANDBOX_SOURCES)}, not {source!r}")


def _status_phrase(status: str) -> str:
    return "a draft" if status == "draft" else status


def closed_message(slug: str, status: str) -> str:
    """Return why a survey that is not open stored nothing (a draft, or closed)."""
    if status == "draft":
        return f"survey {slug!r} is a draft and takes no responses until it is published"
    return f"survey {slug!r} is closed and takes no more responses"


def _design_text(design: dict) -> str:
    return json.dumps(design, sort_keys=True)
