"""Separate processes on one database: one submission id sent by two at once, and a writer killed with SIGKILL
while four of its threads store responses held for releases (SQLite).

Each child process opens its own store, says "ready", and waits for a line on its standard input, so the
parent starts them together without sleeping; it prints what the store answered, one line per call.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from survey.core.design import release_every
from survey.store import Store
from survey.store.checks import check_counts
from survey.store.schema import pending_table_name, table_name

from conftest import REPO, create_from_toml

pytestmark = [pytest.mark.slow, pytest.mark.both_backends]

ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
CHILD = r"""
import json, sys, threading
from survey.store import Store
location, slug, design_hash, mode, submission = sys.argv[1:6]
store = Store(location, migrate=False)
answers = json.loads(sys.stdin.readline())
print("ready", flush=True)
sys.stdin.readline()
if mode == "once":
    try:
        print("stored" if store.add_submission(slug, design_hash, answers, submission=submission) else "repeat",
              flush=True)
    except Exception as exc:
        print("error", type(exc).__name__, exc, flush=True)
else:  # four threads, each with its store, whose responses share group commits; an id is printed once stored
    printing = threading.Lock()

    def stream():
        mine = Store(location, migrate=False)
        while True:
            stored = mine.add_response(slug, design_hash, answers)
            with printing:
                print(stored, flush=True)

    threads = [threading.Thread(target=stream, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
"""


def _survey(location, *, every: int) -> dict:
    text = (REPO / "examples" / "smoking.toml").read_text(encoding="utf-8")
    text = re.sub(r'^slug = "[^"]*"$', f'slug = "habits"\nrelease_every = {every}', text, count=1, flags=re.M)
    return create_from_toml(location, text)


def _children(location, design: dict, mode: str, count: int, submission: str = "-") -> list[subprocess.Popen]:
    """Start ``count`` children, wait until each is ready, then let them all go."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(location), "habits", design["hash"], mode,
                                  submission], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
                for _ in range(count)]
    for child in children:
        child.stdin.write(json.dumps(ANSWERS) + "\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "ready"
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    return children


def test_one_submission_id_sent_by_two_processes_at_once_is_stored_once(db_path):
    design = _survey(db_path, every=1)
    children = _children(db_path, design, "once", 2, submission="d" * 32)
    answers = sorted(child.communicate(timeout=120)[0].strip() for child in children)
    assert answers == ["repeat", "stored"], answers  # both answered 201 by the web app
    store = Store(db_path)
    try:
        assert store.received_count("habits") == 1 and check_counts(store, "habits")[1] == []
    finally:
        store.close()


def test_sigkill_while_storing_held_responses_keeps_every_acknowledged_one_and_sound_counts(tmp_path):
    location = tmp_path / "crash.db"
    design = _survey(location, every=3)
    [child] = _children(location, design, "stream", 1)
    acknowledged = [child.stdout.readline().strip() for _ in range(200)]
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    child.stdin.close()
    store = Store(location)
    try:
        assert store.integrity_check() == "ok"
        ids = {row[0] for table in (table_name(design), pending_table_name(design))
               for row in store._execute(f'SELECT id FROM "{table}"').fetchall()}
        assert set(acknowledged) <= ids, "every acknowledged response survived the crash"
        assert check_counts(store, "habits")[1] == []
        state = store.release_state("habits")
        assert state["held"] < release_every(design) and state["released"] + state["held"] == len(ids)
    finally:
        store.close()
