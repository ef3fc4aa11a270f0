"""A database reader cannot tell which invitee gave which response, nor in what order (docs/explanation/privacy.md).

PostgreSQL: every row carries the number of the transaction that wrote it (``xmin``); a use
of an invitation writes no row (it deletes the invitation's unused row), so joining the
invitations to the reports or held responses on ``xmin`` finds nothing, and every invitation
keeps the ``xmin`` of the transaction that made it. SQLite: the WAL holds the pages written
since it was last emptied, in order; it is emptied after every use of an invitation, so a
reader copying it after every response, diffing each page against its previous version, finds
no used token and no new response in it. Without the emptying the same reader links every
response to its invitation (the last test), so the check is not vacuous.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import PANEL_TOML

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store
from survey.store.admission import invite_hash
from survey.store.schema import pending_table_name
from survey.store.sqlite import SqliteStore

INVITED = 20
ANSWERED = 12


def make_survey(location, step: int):
    """Create the invitation-only panel with release step ``step``; return (store, design, tokens)."""
    text = PANEL_TOML.replace("release_every = 1", f"release_every = {step}")
    design = build_design(parse_definition_toml(text))
    store = Store(location)
    store.create_survey(text, design)
    return store, design, store.create_invitations("panel", INVITED)


def answer(store, design, tokens, seed: int, after=None) -> list[str]:
    """Let ANSWERED invitees answer in a random order, calling ``after(token)`` after each; return their tokens."""
    rng = np.random.default_rng(seed)
    order = [str(t) for t in rng.permutation(tokens)[:ANSWERED]]
    for token in order:
        assert store.add_submission("panel", design["hash"], {"remote": int(rng.integers(2))}, invite=token)
        if after is not None:
            after(token)
    return order


# PostgreSQL: the xmin join


def report_xmins(store, design) -> set[int]:
    """Return the xmin of every response row, released or held."""
    table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = 'panel'").fetchone()[0]
    xmins = {int(r[0]) for r in store.conn.execute(f'SELECT xmin::text FROM "{table}"').fetchall()}
    held = pending_table_name(design)
    if store.conn.execute("SELECT to_regclass(?)", [held]).fetchone()[0] is not None:
        xmins |= {int(r[0]) for r in store.conn.execute(f'SELECT xmin::text FROM "{held}"').fetchall()}
    return xmins


@pytest.mark.parametrize("step", [1, 5])
def test_postgresql_xmin_join_links_no_response_to_its_invitation(pg_url, step):
    store, design, tokens = make_survey(pg_url, step)
    made = {row[0] for row in store.conn.execute(
        "SELECT DISTINCT xmin::text FROM invitations UNION SELECT DISTINCT xmin::text FROM unused_invitations")}
    answer(store, design, tokens, seed=step)
    responses = report_xmins(store, design)
    table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = 'panel'").fetchone()[0]
    assert len(responses) >= 1 and store.received_count("panel") == ANSWERED
    for invitations in ("invitations", "unused_invitations"):
        linked = store.conn.execute(f'SELECT count(*) FROM "{table}" r JOIN {invitations} i ON i.xmin = r.xmin'
                                    ).fetchone()[0]
        assert linked == 0, f"{linked} responses share a transaction with a row of {invitations}"
        xmins = {int(r[0]) for r in store.conn.execute(f"SELECT xmin::text FROM {invitations}")}
        assert not xmins & responses
        # Nothing about an invitation changed when it was used: every row is as it was made.
        assert {str(x) for x in xmins} <= made
    assert store.invitation_counts("panel") == (INVITED, ANSWERED)
    store.close()


# SQLite: a reader of the WAL


def wal_frames(wal: bytes):
    """Yield (page number, page bytes, commits) for every valid frame of a WAL file, in order."""
    if len(wal) < 32:
        return
    page_size = int.from_bytes(wal[8:12], "big")
    salt = wal[16:24]
    offset = 32
    while offset + 24 + page_size <= len(wal):
        header = wal[offset:offset + 24]
        if header[8:16] != salt:
            return
        yield int.from_bytes(header[:4], "big"), wal[offset + 24:offset + 24 + page_size], header[4:8] != bytes(4)
        offset += 24 + page_size


def page_images(db: bytes) -> dict[int, bytes]:
    """Return the pages of a database file by number (1-based)."""
    page_size = int.from_bytes(db[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    return {i // page_size + 1: db[i:i + page_size] for i in range(0, len(db), page_size)}


def wal_links(db_before: bytes, wals: list[bytes], hashes: set[str], ids: set[str]) -> dict[str, str]:
    """Link token hashes to report ids from WAL copies: a transaction in which one hash vanished and one id appeared.

    Each copy's frames are read in order; every page is compared with its previous version
    (from an earlier frame, or the database file before the responses). ``hashes`` and ``ids``
    are what any reader of the database finds in it: the invitations' hashes, the reports' ids.
    """

    def found(data: bytes, words: set[str]) -> set[str]:
        return {word for word in words if word.encode() in data}

    pages = page_images(db_before)
    links: dict[str, str] = {}
    seen_transactions: set[bytes] = set()
    for wal in wals:
        before = dict(pages)
        changed: dict[int, bytes] = {}
        for number, image, commits in wal_frames(wal):
            changed[number] = image
            if not commits:
                continue
            key = b"".join(changed[n] for n in sorted(changed))
            if key not in seen_transactions:
                seen_transactions.add(key)
                old = b"".join(before.get(n, b"") for n in changed)
                new = b"".join(changed.values())
                vanished = found(old, hashes) - found(new, hashes)
                appeared = found(new, ids) - found(old, ids)
                if len(vanished) == 1 and len(appeared) == 1:
                    links[vanished.pop()] = appeared.pop()
            before.update(changed)
            changed = {}
        pages = before
    return links


def reports_by_token(store, order: list[str], ids_before_each: list[set[str]]) -> dict[str, str]:
    """Return the true link, token hash -> report id, from the ids that appeared after each response."""
    truth = {}
    for token, (before, after) in zip(order, zip(ids_before_each, ids_before_each[1:])):
        [new] = after - before
        truth[invite_hash(token)] = new
    return truth


def all_ids(store, design) -> set[str]:
    table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = 'panel'").fetchone()[0]
    ids = {row[0] for row in store.conn.execute(f'SELECT id FROM "{table}"')}
    held = pending_table_name(design)
    if store.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", [held]).fetchone():
        ids |= {row[0] for row in store.conn.execute(f'SELECT id FROM "{held}"')}
    return ids


def read_wal_while_answering(tmp_path: Path, step: int, seed: int):
    """Answer with a second connection open (as a server's workers have); copy the WAL after every response."""
    path = tmp_path / "panel.db"
    store, design, tokens = make_survey(path, step)
    other = Store(path, migrate=False)  # another worker's connection: the WAL is not removed at close
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db_before = path.read_bytes()
    wal = Path(f"{path}-wal")
    wals, ids = [], [all_ids(store, design)]

    def after(token):
        wals.append(wal.read_bytes() if wal.exists() else b"")
        ids.append(all_ids(store, design))

    order = answer(store, design, tokens, seed, after)
    truth = reports_by_token(store, order, ids)
    links = wal_links(db_before, wals, {invite_hash(str(t)) for t in tokens}, ids[-1])
    other.close()
    store.close()
    return wals, links, truth


@pytest.mark.parametrize("step", [1, 5])
def test_sqlite_wal_read_after_every_response_holds_no_link(tmp_path, step):
    wals, links, truth = read_wal_while_answering(tmp_path, step, seed=10 + step)
    assert len(truth) == ANSWERED
    correct = sum(truth.get(token) == report for token, report in links.items())
    assert correct == 0, f"the WAL linked {correct} of {ANSWERED} responses to their invitation"
    assert all(len(w) == 0 for w in wals), "the WAL was not emptied after a use of an invitation"


def test_sqlite_deleted_unused_rows_are_zeroed_in_the_file(tmp_path):
    """secure_delete: the bytes of a used invitation's unused row (and its index entry) are overwritten."""
    path = tmp_path / "panel.db"
    store, design, tokens = make_survey(path, 1)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def copies():
        data = path.read_bytes()
        return {str(token): data.count(invite_hash(str(token)).encode()) for token in tokens}

    before = copies()
    order = answer(store, design, tokens, seed=3)
    after = copies()
    store.close()
    # Each hash is in invitations and unused_invitations, each table and its index by survey: 4 copies.
    assert set(before.values()) == {4}
    assert {after[t] for t in order} == {2}, "a used invitation's unused row is still in the file"
    assert {after[str(t)] for t in tokens if str(t) not in order} == {4}


def test_the_wal_reader_links_every_response_when_the_wal_is_kept(tmp_path, monkeypatch):
    """Not vacuous: without emptying the WAL, the same reader links every response to its invitation."""
    monkeypatch.setattr(SqliteStore, "_forget_order", lambda self: True)
    shutil.rmtree(tmp_path, ignore_errors=True)
    tmp_path.mkdir()
    wals, links, truth = read_wal_while_answering(tmp_path, 1, seed=7)
    correct = sum(truth.get(token) == report for token, report in links.items())
    assert correct == ANSWERED
