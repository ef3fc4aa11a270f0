"""The package imports and its offline commands run where POSIX-only modules are missing (Windows).

A subprocess hides ``fcntl`` (and the other modules Windows lacks) before anything is imported,
imports the whole web package (``respond`` pulls in the flood limit), runs ``codebook``,
``analyze`` and ``plan`` through click's CliRunner, and drives the flood limit's thread-locked
fallback from many threads: it must allow exactly its limit, as the fcntl lock does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIDDEN = ["fcntl", "termios", "resource", "grp", "pwd"]

SCRIPT = textwrap.dedent("""
    import sys
    for name in {hidden!r}:
        sys.modules[name] = None  # "import name" now raises ImportError, as on Windows
    import json, threading
    from pathlib import Path
    from click.testing import CliRunner
    import survey.web.respond, survey.web.fast_submissions, survey.web
    from survey.cli import main
    from survey.web.flood import SubmissionLimiter

    out, runner = {{}}, CliRunner()
    work = Path(sys.argv[1])
    book = work / "book.json"
    result = runner.invoke(main, ["codebook", "--binary", "cheated", "0.9", "1/5", "-o", str(book)])
    out["codebook"] = (result.exit_code, result.output)
    (work / "survey.csv").write_text("id,cheated\\n" + "".join(f"{{i}},{{int(i < 430)}}\\n" for i in range(1000)))
    result = runner.invoke(main, ["analyze", str(work / "survey.csv"), "aggregate", "--codebook", str(book),
                                  "--format", "json"])
    out["analyze"] = (result.exit_code, result.output)
    result = runner.invoke(main, ["plan", sys.argv[2], "--format", "json"])
    out["plan"] = (result.exit_code, result.output)

    limiter = SubmissionLimiter(50, clock=lambda: 100.0, slots=64)
    waits = []
    def send():
        for _ in range(40):
            waits.append(limiter.take("203.0.113.9"))
    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out["limiter"] = [limiter._fcntl is None, sum(wait == 0 for wait in waits), len(waits)]
    out["hidden"] = [name for name in {hidden!r} if name in sys.modules and sys.modules[name] is not None]
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_the_package_imports_and_runs_without_fcntl(tmp_path):
    script = SCRIPT.format(hidden=HIDDEN)
    result = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(REPO / "examples" / "smoking.toml")],
                            capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin", "PYTHONHASHSEED": "0"})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.splitlines()[-1])
    assert out["hidden"] == []
    for command in ("codebook", "analyze", "plan"):
        assert out[command][0] == 0, (command, out[command][1])
    row = json.loads(out["analyze"][1])[0]
    assert row["n"] == 1000 and abs(row["estimate"] - (0.43 - 0.2) / 0.7) < 1e-12
    plan = json.loads(out["plan"][1])
    assert plan["survey"] == "smoking-2026" and plan["allocations"][0]["questions"][0]["id"] == "smoker"
    assert out["limiter"] == [True, 50, 320]  # the thread lock alone: exactly the limit, once
