"""Layers one way: the statistical core (survey/core) imports neither Flask nor the database nor anything above it;
the store imports no web code; nothing below the command line imports it; a mechanism is named only in its own
module and the registry."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


# The command line sits on top: survey.cli imports the core, the store and the web app, never the
# other way round, and stays split into modules by topic (surveys, results, accounts, operations).
LOWER_LAYERS = ["survey.core", "survey.store", "survey.web"]
CLI_DIR = ROOT / "survey" / "cli"
MAX_CLI_MODULE_LINES = 450


def _lower_layer_files():
    for package in LOWER_LAYERS:
        yield from sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def _imported_modules(path: Path) -> set[str]:
    """Every module an import statement in ``path`` names, at any depth, relative ones resolved."""
    package = list(path.relative_to(ROOT).parent.parts)  # a module's package; an __init__.py's own
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def test_lower_layers_never_import_the_cli_at_import_time():
    code = ("import pkgutil, sys, survey.core, survey.store, survey.web\n"
            "for package in (survey.core, survey.store, survey.web):\n"
            "    for info in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
            "        __import__(info.name)\n"
            "print(','.join(sorted(m for m in sys.modules if m == 'survey.cli' or m.startswith('survey.cli.'))))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"importing core/store/web pulls in {result.stdout.strip()}"


@pytest.mark.parametrize("path", list(_lower_layer_files()), ids=lambda path: str(path.relative_to(ROOT)))
def test_lower_layer_source_names_no_cli_module(path):
    """Also the imports inside functions, which the import-time check above cannot see."""
    bad = sorted(name for name in _imported_modules(path) if name == "survey.cli" or name.startswith("survey.cli."))
    assert not bad, f"{path.relative_to(ROOT)} imports {', '.join(bad)}: the CLI is the top layer"


def test_cli_is_a_package_of_small_modules():
    assert not (ROOT / "survey" / "cli.py").exists(), "the command line is the survey/cli/ package"
    modules = sorted(CLI_DIR.glob("*.py"))
    assert {path.name for path in modules} >= {"__init__.py", "common.py", "surveys.py", "results.py",
                                               "accounts.py", "operations.py"}
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in modules}
    too_long = {name: lines for name, lines in sizes.items() if lines > MAX_CLI_MODULE_LINES}
    assert not too_long, (f"CLI modules over {MAX_CLI_MODULE_LINES} lines: {too_long}; split them by topic "
                          "rather than growing one file")
