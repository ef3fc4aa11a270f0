"""Layers one way: the statistical core (survey/core) imports neither Flask nor the database nor anything above it;
the store imports no web code; a mechanism is named only in its own module and the registry."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE_DIR = ROOT / "survey" / "core"
# Every module of the core; the mechanisms package imports each of its modules, so it stands for them.
CORE = sorted(f"survey.core.{path.stem}" for path in CORE_DIR.glob("*.py") if path.stem != "__init__")
CORE += ["survey.core.mechanisms"]
FORBIDDEN = ["flask", "flask_wtf", "werkzeug", "sqlite3", "sqlite_utils", "survey.store", "survey.web", "survey.cli"]


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


def _relative_imports(path: Path) -> list[tuple[int, str]]:
    """Return (level, module) of every relative import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.level, node.module or "") for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]


def test_the_core_imports_nothing_above_it():
    """No module of survey/core reaches out of it with a relative import (``from ..store``, ``from ...web``)."""
    for path in CORE_DIR.rglob("*.py"):
        depth = len(path.relative_to(CORE_DIR).parts)  # 1 in survey/core, 2 in survey/core/mechanisms
        escapes = [f"{'.' * level}{module}" for level, module in _relative_imports(path) if level > depth]
        assert not escapes, f"{path.relative_to(ROOT)} imports {escapes}"


def test_the_store_imports_no_web_or_command_line():
    for path in (ROOT / "survey" / "store").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"from \.\.(web|cli)\b|import survey\.(web|cli)", text), path


MECHANISM_LITERAL = re.compile(r"[\"'](rr|grr|oue|ss|sampled|duchi|piecewise|hybrid)[\"']")


def test_mechanisms_are_named_only_in_their_modules_and_the_registry():
    """Everywhere else the product asks the mechanism (``mechanism_for``); a number's definition field may list its choices."""
    places = []
    for folder in ("survey", "client_js", "templates"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".js", ".html") or "mechanisms" in path.relative_to(ROOT).parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                places += [f"{path.relative_to(ROOT)}:{number}: {match.group(0)}" for match in MECHANISM_LITERAL.finditer(line)]
    assert len(places) <= 3, "\n".join(places)
