"""Run the node tests of client_js/ (tests/js/*.test.mjs, node:test) as part of pytest, one item per file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS_TESTS = Path(__file__).resolve().parent
# The files whose audits or simulations take more than a few seconds (the fast lane leaves them out).
SLOW = {"audit.test.mjs", "branching.test.mjs", "frequency.test.mjs", "mechanism-conformance.test.mjs", "question-sample.test.mjs",
        "series.test.mjs", "waves-audit.test.mjs"}


def _node_test_files() -> list:
    """Return one parameter per node test file, marked slow when it is."""
    return [pytest.param(path.name, id=path.name, marks=[pytest.mark.slow] if path.name in SLOW else [])
            for path in sorted(JS_TESTS.glob("*.test.mjs"))]


def test_every_slow_name_is_a_node_test_file():
    assert SLOW <= {path.name for path in JS_TESTS.glob("*.test.mjs")}


@pytest.mark.parametrize("name", _node_test_files())
def test_node_test_file_passes(name):
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the browser code (client_js/) is tested with `node --test tests/js/`; "
                    "install Node.js 20 or later")
    result = subprocess.run([node, "--test", f"tests/js/{name}"], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, f"node --test tests/js/{name} failed:\n{result.stdout}\n{result.stderr}"
