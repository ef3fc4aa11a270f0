"""Durability of the real server's storage: SIGKILL under load loses nothing acknowledged, backup while serving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from survey.core.aggregate import aggregate_counts, rows_to_csv
from survey.core.simulate import complete_truth, simulate_answers
from survey.store import Store

from conftest import REPO, create_smoking_db, start_server

pytestmark = [pytest.mark.slow, pytest.mark.both_backends, pytest.mark.serial]

SLUG = "smoking-2026"
CLIENTS = 6


def key(answers: dict) -> str:
    return json.dumps(answers, sort_keys=True)


class Load:
    """Client threads that submit valid responses until stopped, recording what was acknowledged."""

    def __init__(self, origin: str, design: dict, seed: int):
        rng = np.random.default_rng(seed)
        self.pool = simulate_answers(design, complete_truth(design, {}, rng), 500, rng)
        self.origin, self.design = origin, design
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acknowledged: Counter = Counter()
        self.unknown: Counter = Counter()
        self.threads = [threading.Thread(target=self._client, args=(index,)) for index in range(CLIENTS)]

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in self.threads)

    def wait_for(self, count: int, timeout: float = 60):
        deadline = time.monotonic() + timeout
        while sum(self.acknowledged.values()) < count:
            assert time.monotonic() < deadline, f"only {sum(self.acknowledged.values())} acknowledged"
            time.sleep(0.02)

    def _client(self, index: int):
        opener = urllib.request.build_opener()
        sent = index
        while not self.stop.is_set():
            answers = self.pool[sent % len(self.pool)]
            sent += CLIENTS
            body = json.dumps({"design": self.design["hash"], "answers": answers}).encode()
            request = urllib.request.Request(f"{self.origin}/s/{SLUG}/responses", data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                with opener.open(request, timeout=10) as reply:
                    acknowledged = reply.status == 201
            except urllib.error.HTTPError as error:
                error.close()
                raise AssertionError(f"a valid response got {error.code}") from error
            except OSError:
                acknowledged = False  # the server died mid-request: stored or not, never acknowledged
                self.stop.wait(0.05)
            with self.lock:
                (self.acknowledged if acknowledged else self.unknown)[key(answers)] += 1


def process_tree(pid: int) -> list[int]:
    """Return pid and all its descendants (Linux /proc)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            children = (task / "children").read_text().split() if (task / "children").exists() else []
            queue.extend(int(child) for child in children)
    return found


@contextmanager
def opened(db_path: Path):
    """Open the database for one check and close it afterwards."""
    store = Store(db_path)
    try:
        yield store
    finally:
        store.close()


def stored_answers(db_path: Path) -> Counter:
    with opened(db_path) as store:
        assert store.integrity_check() == "ok"
        assert store.question_counts(SLUG) == store.recount(SLUG), "tallies agree with the stored reports"
        return Counter(key(answers) for answers in store.iter_answers(SLUG))


def design_of(db_path: Path) -> dict:
    with opened(db_path) as store:
        return store.get_design(SLUG)


def test_sigkill_under_concurrent_submissions_loses_and_duplicates_nothing(tmp_path, db_path):
    create_smoking_db(db_path)
    server = start_server(db_path, tmp_path / "server.log", "--workers", "2", "--threads", "4",
                          "--max-submissions-per-minute", "0")
    with Load(server.origin, design_of(db_path), seed=21) as load:
        load.wait_for(300)
        for pid in process_tree(server.process.pid):
            os.kill(pid, signal.SIGKILL)
        server.process.wait(timeout=30)
    server.stop()
    stored = stored_answers(db_path)
    assert sum(load.acknowledged.values()) >= 300
    assert not load.acknowledged - stored, "every acknowledged response survived the crash"
    assert not (stored - load.acknowledged) - load.unknown, "nothing stored twice or out of nowhere"


def backup(db_path: Path, destination: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "survey", "--db", str(db_path), "backup", str(destination)],
                          env=env, capture_output=True, text=True, timeout=120)


def aggregates_csv(db_path: Path) -> str:
    with opened(db_path) as store:
        return rows_to_csv(aggregate_counts(store.get_design(SLUG), store.question_counts(SLUG)))


def test_backup_while_serving_is_a_sound_snapshot_and_aggregates_the_same(tmp_path, db_path):
    create_smoking_db(db_path)
    server = start_server(db_path, tmp_path / "server.log", "--workers", "2", "--threads", "4",
                          "--max-submissions-per-minute", "0")
    try:
        with Load(server.origin, design_of(db_path), seed=22) as load:
            load.wait_for(100)
            during = backup(db_path, tmp_path / "during.db")
            assert during.returncode == 0, during.stderr
            assert "integrity ok" in during.stdout
            load.wait_for(sum(load.acknowledged.values()) + 100)
    finally:
        assert server.stop() == 0
    snapshot = stored_answers(tmp_path / "during.db")
    final = stored_answers(db_path)
    assert 100 <= sum(snapshot.values()) < sum(final.values())
    assert not snapshot - final, "the snapshot holds only responses the database holds"

    after = backup(db_path, tmp_path / "after.db")
    assert after.returncode == 0, after.stderr
    assert aggregates_csv(tmp_path / "after.db") == aggregates_csv(db_path)
    refused = backup(db_path, tmp_path / "after.db")
    assert refused.returncode == 1 and refused.stderr.startswith("Error: ") and "already exists" in refused.stderr
