"""Run the node tests of client_js/ (tests/js, node:test) as part of pytest."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_node_tests_pass():
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the browser code (client_js/) is tested with `node --test tests/js/`; "
                    "install Node.js 20 or later")
    result = subprocess.run([node, "--test", "tests/js/"], cwd=ROOT, capture_output=True, text=True,
                            timeout=600, check=False)
    assert result.returncode == 0, f"node --test tests/js/ failed:\n{result.stdout}\n{result.stderr}"
