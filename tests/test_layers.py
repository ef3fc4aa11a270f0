"""The statistical core imports neither Flask nor the database (DESIGN.md §2, invariant 6)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ["survey.core.definition", "survey.core.design", "survey.core.mechanisms", "survey.core.estimators",
        "survey.core.aggregate", "survey.core.reports", "survey.core.replay", "survey.core.explain", "survey.core.charts",
        "survey.core.crosstab", "survey.core.planning"]
CORE += ["survey.core.codebook", "survey.core.csvsafe", "survey.core.export", "survey.core.invitations"]
CORE += ["survey.core.definition_toml", "survey.core.definition_check"]
FORBIDDEN = ["flask", "flask_wtf", "werkzeug", "sqlite3", "sqlite_utils", "survey.store", "survey.web"]


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_no_web_or_database(module):
    code = (f"import sys, {module}\n"
            f"bad = [m for m in {FORBIDDEN!r} if m in sys.modules]\n"
            "print(','.join(bad))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "", f"{module} pulls in {result.stdout.strip()}"


def test_store_does_not_import_flask():
    code = "import sys, survey.store\nprint('flask' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
