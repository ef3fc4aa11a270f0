"""Degenerate surveys through the real server and the command line: crosstabs and regressions never fail.

Surveys of 0 to 30 respondents, with all-equal reports, empty cells, an option never
reported and one respondent, are created through the store; one `ldp-survey serve` answers
the crosstab and regression pages, CSVs and API for many pairs and levels, and the CLI
(`crosstab`, `regress`, `export` then `analyze`) runs in process on the same database. No
answer may be a 5xx, show a traceback, or write nan/inf into a CSV or JSON (issue 25).
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests
from click.testing import CliRunner
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.core import codec
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store

from conftest import OWNER, start_server

PATTERNS = ("random", "equal", "missing", "corner")
SIZES = range(31)
FULL_SIZES = {0, 1, 2, 3, 5, 8, 13, 21, 30}     # every pattern; the other sizes get "random" only
PAIRS = [("y1", "y2"), ("y1", "c"), ("c", "y2"), ("y1", "num"), ("c", "num"), ("num", "y1"), ("y1", "y1")]
REGRESSIONS = [("y1", ["y2"]), ("y1", ["c", "num"]), ("y2", ["y1", "c"]), ("num", ["y1"])]
BAD_NUMBER = re.compile(r"(?<![A-Za-z])(nan|NaN|-?inf|-?Infinity)(?![A-Za-z])")
TRACEBACK = "Traceback (most recent call last)"


def definition(slug: str, epsilon: float) -> str:
    """Return a survey of two yes/no questions, a 3-option choice and a number, released at every response."""
    return f"""slug = "{slug}"
title = "Fuzz {slug}"
epsilon = {epsilon}
release_every = 1
[[questions]]
id = "y1"
kind = "yes_no"
text = "One?"
[[questions]]
id = "y2"
kind = "yes_no"
text = "Two?"
[[questions]]
id = "c"
kind = "choice"
text = "Which?"
options = ["a", "b", "z"]
[[questions]]
id = "num"
kind = "number"
text = "How many?"
min = 0
max = 10
"""


def domain_size(question: dict) -> int:
    """Return how many reports a scalar report can take (bits, option indices or levels)."""
    mechanism = question["mechanism"]
    return {"rr": 2, "duchi": 2, "grr": len(question.get("options", ()))}.get(
        mechanism, question.get("levels") or question.get("bins") or 2)


def reports(question: dict, n: int, pattern: str, rng) -> np.ndarray:
    """Return n reports of a question (a scalar domain) following a degenerate pattern."""
    if codec.is_bit_vector(question):
        d = len(question["options"])
        bits = np.zeros((n, d), dtype=np.int64)
        if pattern == "random":
            bits = rng.integers(0, 2, (n, d))
        elif pattern == "corner":
            bits[:] = 1
        elif pattern == "missing":
            bits[:, 0] = 1
        return bits
    size = domain_size(question)
    if pattern == "random":
        return rng.integers(0, size, n)
    if pattern == "equal":
        return np.zeros(n, dtype=np.int64)
    if pattern == "corner":
        return np.full(n, size - 1, dtype=np.int64)
    return rng.integers(0, max(size - 1, 1), n)            # "missing": the last report never appears


def surveys():
    """Yield (slug, epsilon, n, pattern) of every fuzzed survey."""
    for n in SIZES:
        for pattern in (PATTERNS if n in FULL_SIZES else ("random",)):
            epsilon = 0.5 if (n + len(pattern)) % 2 else 6.0
            yield f"f{n}-{pattern}", epsilon, n, pattern


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory):
    """A database with every fuzzed survey, owned by OWNER."""
    db_path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    rng = np.random.default_rng(2025)
    store = Store(db_path)
    try:
        store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
        for slug, epsilon, n, pattern in surveys():
            text = definition(slug, epsilon)
            design = build_design(parse_definition_toml(text, source=f"{slug}.toml"))
            store.create_survey(text, design)
            store.share(slug, OWNER[0])
            if n:
                columns = [codec.encode_column(q, reports(q, n, pattern, rng)) for q in design["questions"]]
                store.add_report_columns(slug, design["hash"], columns)
    finally:
        store.close()
    return db_path


def check_body(kind: str, text: str, where: str):
    """Assert a body has no traceback, and a CSV or JSON body no nan/inf."""
    assert TRACEBACK not in text, where
    if kind == "json":
        json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in {where}"))
    if kind in ("csv", "json"):
        assert not BAD_NUMBER.search(text), f"{where}: {BAD_NUMBER.search(text).group(0)}"


def web_cases():
    """Yield (kind, path) of every request: crosstab and regression pages, CSVs and API answers."""
    for slug, _, n, _ in surveys():
        for a, b in PAIRS:
            query = f"a={a}&b={b}"
            yield "html", f"/surveys/{slug}/crosstab?{query}"
            yield "csv", f"/surveys/{slug}/crosstab.csv?{query}"
            yield "json", f"/api/surveys/{slug}/crosstab?{query}"
        yield "json", f"/api/surveys/{slug}/crosstab?a=y1&b=c&level=0.5"
        yield "html", f"/surveys/{slug}/crosstab?level={'0.999' if n % 2 else 'nan'}"
        for outcome, covariates in REGRESSIONS:
            query = f"outcome={outcome}&" + "&".join(f"covariate={name}" for name in covariates)
            yield "html", f"/surveys/{slug}/regression?{query}"
            yield "csv", f"/surveys/{slug}/regression.csv?{query}"
            yield "json", f"/api/surveys/{slug}/regression?outcome={outcome}&covariates={','.join(covariates)}"


@pytest.mark.slow
def test_degenerate_crosstabs_and_regressions_never_fail(fuzz_db, tmp_path):
    store = Store(fuzz_db)
    try:
        token = store.create_token(OWNER[0], "fuzz")[1]
    finally:
        store.close()
    server = start_server(fuzz_db, tmp_path / "server.log", "--workers", "2")
    cases = 0
    try:
        session = requests.Session()
        login = session.get(server.origin + "/login").text
        csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', login).group(1)
        signed = session.post(server.origin + "/login", data={"csrf_token": csrf, "email": OWNER[0],
                                                              "password": OWNER[1]}, allow_redirects=False)
        assert signed.status_code == 302

        def fetch(case):
            kind, path = case
            headers = {"Authorization": f"Bearer {token}"} if path.startswith("/api/") else {}
            response = session.get(server.origin + path, headers=headers)
            return kind, path, response.status_code, response.text

        with ThreadPoolExecutor(max_workers=2) as pool:
            for kind, path, status, text in pool.map(fetch, list(web_cases())):
                cases += 1
                assert status < 500, f"{status} for {path}:\n{text[:2000]}"
                assert status in (200, 400), f"{status} for {path}"
                check_body(kind if status == 200 else "html", text, path)
    finally:
        code = server.stop()
    assert code == 0
    assert TRACEBACK not in server.log_text()
    cases += cli_cases(fuzz_db, tmp_path)
    assert cases >= 2000


def cli_cases(db_path, tmp_path) -> int:
    """Run crosstab, regress, export and analyze in process on every fuzzed survey; return how many ran."""
    runner = CliRunner()
    ran = 0

    def run(*args, kind="json"):
        nonlocal ran
        result = runner.invoke(main, ["--db", str(db_path), *map(str, args)])
        ran += 1
        where = " ".join(map(str, args))
        assert result.exception is None or isinstance(result.exception, SystemExit), (where, result.output)
        assert result.exit_code in (0, 1, 2), (where, result.output)
        assert TRACEBACK not in result.output, where
        check_body(kind if result.exit_code == 0 else "text", result.stdout, where)
        return result

    for slug, _, n, pattern in surveys():
        for a, b in PAIRS[:5]:
            run("crosstab", slug, a, b, "--format", "json")
        run("crosstab", slug, "y1", "c", "--format", "csv", kind="csv")
        for outcome, covariates in REGRESSIONS:
            run("regress", slug, outcome, *covariates, "--format", "json")
        if n in FULL_SIZES:
            responses, codebook = tmp_path / f"{slug}.csv", tmp_path / f"{slug}.json"
            run("export", slug, "--responses", "-o", responses, kind="text")
            run("export", slug, "--codebook", "-o", codebook, kind="text")
            for analysis in (["crosstab", "y1", "c"], ["crosstab", "y1", "num"], ["regress", "y1", "y2", "c"]):
                run("analyze", responses, *analysis, "--codebook", codebook, "--format", "json")
            run("analyze", responses, "crosstab", "y1", "y2", "--codebook", codebook, "--format", "csv", kind="csv")
    return ran
