"""Measure response submission through the real server against direct storage.

Starts `ldp-survey serve` (waitress) on 127.0.0.1 with the smoking survey, sends N valid
randomized responses from T client threads (each with its own session and CSRF token),
and compares the throughput with the reference: the same N responses validated and
stored directly through Store.add_response in this process. Prints both and the ratio.
Traffic goes only to 127.0.0.1; the request count is bounded by --n and --timeout.

    python bench/bench_submit.py --n 2000 --threads 8
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from survey.definition import load_definition  # noqa: E402
from survey.design import build_design  # noqa: E402
from survey.reports import validate_submission  # noqa: E402
from survey.simulate import complete_truth, simulate_answers  # noqa: E402
from survey.store import Store  # noqa: E402

SLUG = "smoking-2026"


def make_bodies(design: dict, n: int, seed: int) -> list[bytes]:
    """Return n randomized submissions of the design, as JSON bodies."""
    rng = np.random.default_rng(seed)
    answers = simulate_answers(design, complete_truth(design, {}, rng), n, rng)
    return [json.dumps({"design": design["hash"], "answers": a}).encode() for a in answers]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def client_worker(origin: str, bodies: list[bytes], failures: list, deadline: float):
    """Fetch the page for a session and token, then POST each body in turn."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    page = opener.open(f"{origin}/s/{SLUG}", timeout=10).read().decode()
    token = re.search(r'<meta name="csrf-token" content="([^"]+)"', page).group(1)
    for body in bodies:
        if time.monotonic() > deadline:
            failures.append("timeout")
            return
        request = urllib.request.Request(f"{origin}/s/{SLUG}/responses", data=body, method="POST",
                                         headers={"Content-Type": "application/json", "X-CSRFToken": token})
        with opener.open(request, timeout=10) as response:
            if response.status != 201:
                failures.append(response.status)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="responses to send (default 2000)")
    parser.add_argument("--threads", type=int, default=8, help="client threads (default 8)")
    parser.add_argument("--timeout", type=float, default=300, help="stop after this many seconds")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        toml = ROOT / "examples" / "smoking.toml"
        design = build_design(load_definition(toml))
        bodies = make_bodies(design, args.n, seed=1)

        reference_db = Path(tmp) / "reference.db"
        store = Store(reference_db)
        store.create_survey(toml.read_text(), design)
        start = time.perf_counter()
        for body in bodies:
            store.add_response(SLUG, design["hash"], validate_submission(design, json.loads(body)))
        reference = time.perf_counter() - start
        store.close()

        server_db = Path(tmp) / "server.db"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-m", "survey", "--db", str(server_db), "create", str(toml)],
                       check=True, env=env, capture_output=True)
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "survey", "--db", str(server_db), "serve",
                                   "--host", "127.0.0.1", "--port", str(port), "--threads", str(args.threads)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            origin = f"http://127.0.0.1:{port}"
            failures: list = []
            deadline = time.monotonic() + args.timeout
            chunks = [bodies[i::args.threads] for i in range(args.threads)]
            workers = [threading.Thread(target=client_worker, args=(origin, chunk, failures, deadline))
                       for chunk in chunks]
            start = time.perf_counter()
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            served = time.perf_counter() - start
        finally:
            server.terminate()
            server.wait(timeout=10)
        stored = Store(server_db)
        count = stored.response_count(SLUG)
        stored.close()

    print(f"responses: {args.n}, client threads: {args.threads}, failures: {len(failures)}, stored: {count}")
    print(f"reference (validate + store in-process): {reference:.3f} s, {args.n / reference:,.0f} responses/s")
    print(f"served (HTTP POST through waitress):     {served:.3f} s, {args.n / served:,.0f} responses/s")
    print(f"ratio served/reference: {served / reference:.2f}")


if __name__ == "__main__":
    main()
