"""Layers one way: the statistical core (survey/core) imports neither Flask nor the database nor anything above it;
the store imports no web code; nothing below the command line imports it; a mechanism is named only in its own
module and the registry."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from survey.core.mechanisms import MECHANISMS

ROOT = Path(__file__).resolve().parents[2]
CORE_DIR = ROOT / "survey" / "core"
# Every module of the core; the mechanisms package imports each of its modules, so it stands for them.
CORE = sorted(f"survey.core.{path.stem}" for path in CORE_DIR.glob("*.py") if path.stem != "__init__")
CORE += ["survey.core.mechanisms"]
FORBIDDEN = ["flask", "flask_wtf", "werkzeug", "sqlite3", "sqlite_utils", "psycopg", "psycopg_pool",
             "survey.store", "survey.web", "survey.cli"]


def _module_name(path: Path, root: Path) -> str:
    """Return the dotted name of a source file under ``root`` (a package's ``__init__.py`` is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Return every module of ``package`` (a folder under ``root``) with the names its import statements name.

    Static: each file is parsed, never run, so the imports inside functions count as much as the
    ones at the top; a name that is a module of the package leads to it and to its parent packages.
    """
    files = {_module_name(path, root): path for path in sorted((root / package).rglob("*.py"))}
    graph = {}
    for module, path in files.items():
        targets = set()
        for name in _imported_modules(path, root):
            while name not in files and "." in name and name.startswith(package + "."):
                name = name.rpartition(".")[0]  # ``from survey.core.x import f`` leads to survey.core.x
            parts = name.split(".")
            targets.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in files)
            targets.add(name)
        graph[module] = targets
    return graph


def reached(graph: dict[str, set[str]], module: str) -> set[str]:
    """Return every name importing ``module`` may import, at any depth (its parent packages run first)."""
    parts = module.split(".")
    todo = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    seen = set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(graph.get(name, ()))
    return seen


def forbidden_among(names: set[str], forbidden: list[str]) -> list[str]:
    """Return the names that are, or are inside, one of ``forbidden``."""
    return sorted(name for name in names if any(name == bad or name.startswith(bad + ".") for bad in forbidden))


@functools.cache
def survey_graph() -> dict[str, set[str]]:
    """Return the import graph of survey/, parsed once per run."""
    return import_graph(ROOT, "survey")


@pytest.mark.parametrize("module", CORE)
def test_core_module_imports_no_web_or_database(module):
    """Also through other modules of survey/ and through imports inside functions."""
    bad = forbidden_among(reached(survey_graph(), module), FORBIDDEN)
    assert not bad, f"{module} pulls in {bad}"


def test_the_import_check_sees_deferred_and_transitive_imports(tmp_path):
    """A planted chain core.a -> core.b -> (inside a function) flask, and b's package importing sqlite3, are found."""
    core = tmp_path / "pkg" / "core"
    core.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (core / "__init__.py").write_text("import sqlite3\n", encoding="utf-8")
    (core / "a.py").write_text("from .b import helper\n", encoding="utf-8")
    (core / "b.py").write_text("def helper():\n    from flask import Flask\n    return Flask\n", encoding="utf-8")
    (core / "c.py").write_text("import json\n", encoding="utf-8")
    graph = import_graph(tmp_path, "pkg")
    assert forbidden_among(reached(graph, "pkg.core.a"), ["flask", "sqlite3"]) == ["flask", "flask.Flask", "sqlite3"]
    assert forbidden_among(reached(graph, "pkg.core.c"), ["flask"]) == []


def test_store_does_not_import_flask():
    bad = forbidden_among(reached(survey_graph(), "survey.store"), ["flask", "flask_wtf", "werkzeug", "survey.web", "survey.cli"])
    assert not bad, f"survey.store pulls in {bad}"


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


def _mechanism_literal() -> re.Pattern:
    """Return a pattern of every registered mechanism's name in quotes, from the registry itself."""
    return re.compile(r"[\"'](" + "|".join(sorted({mechanism.name for mechanism in MECHANISMS})) + r")[\"']")


def test_mechanisms_are_named_only_in_their_modules_and_the_registry():
    """Everywhere else the product asks the mechanism (``mechanism_for``) or the registry (a number's choices)."""
    literal = _mechanism_literal()
    assert literal.fullmatch('"opm"') and literal.fullmatch("'sampled'"), literal.pattern
    places = []
    for folder in ("survey", "client_js", "templates"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".js", ".html") or "mechanisms" in path.relative_to(ROOT).parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                places += [f"{path.relative_to(ROOT)}:{number}: {match.group(0)}" for match in literal.finditer(line)]
    assert not places, "\n".join(places)


# The command line sits on top: survey.cli imports the core, the store and the web app, never the
# other way round, and stays split into modules by topic (surveys, results, accounts, operations).
LOWER_LAYERS = ["survey.core", "survey.store", "survey.web"]
CLI_DIR = ROOT / "survey" / "cli"
MAX_CLI_MODULE_LINES = 450


def _lower_layer_files():
    for package in LOWER_LAYERS:
        yield from sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def _imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Every module an import statement in ``path`` names, at any depth, relative ones resolved."""
    package = list(path.relative_to(root).parent.parts)  # a module's package; an __init__.py's own
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


def test_lower_layers_never_import_the_cli():
    """No module of core, store or web reaches survey.cli, through any chain of imports."""
    for module in sorted(survey_graph()):
        if module.startswith(tuple(f"{package}." for package in LOWER_LAYERS)) or module in LOWER_LAYERS:
            bad = forbidden_among(reached(survey_graph(), module), ["survey.cli"])
            assert not bad, f"importing {module} pulls in {bad}: the CLI is the top layer"


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


# The exports layer (codebook, responses.csv, labels, statistics files, spreadsheet, data package) sits on the
# core: it may import survey.core, never the store, the web app or the command line; the core never imports it.
EXPORTS_DIR = ROOT / "survey" / "exports"
SURVEY_DIR = ROOT / "survey"


def _survey_imports(path: Path) -> set[str]:
    """The ``survey.*`` modules a file imports anywhere in it (deferred imports too), as Python resolves them.

    ``from .pkg import name`` imports the module ``pkg.name`` if there is one, else ``pkg`` (a package's own
    ``__init__`` that a submodule's import runs first is not counted: every module would then import its package).
    """
    package = list(path.relative_to(ROOT).parent.parts)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join((package[:len(package) - node.level + 1] if node.level else [])
                            + ([node.module] if node.module else []))
            found.update(f"{base}.{alias.name}" if _module_path(f"{base}.{alias.name}") else base for alias in node.names)
    return {name for name in found if name.split(".")[0] == "survey" and _module_path(name)}


def _module_path(module: str) -> Path | None:
    """Return the file of a ``survey.*`` module or package, or None if there is none."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _dotted_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_exports_layer_imports_only_the_core():
    for path in sorted(EXPORTS_DIR.rglob("*.py")):
        above = sorted(name for name in _survey_imports(path) if name.split(".")[1] in ("store", "web", "cli"))
        assert not above, f"{path.relative_to(ROOT)} imports {', '.join(above)}: exports sit on the core alone"
        assert "flask" not in {name.split(".")[0] for name in _imported_modules(path)}, path


def test_the_core_never_imports_the_exports_layer():
    for path in sorted(CORE_DIR.rglob("*.py")):
        bad = sorted(name for name in _survey_imports(path) if name.startswith("survey.exports"))
        assert not bad, f"{path.relative_to(ROOT)} imports {', '.join(bad)}: the core sits below the exports"


def _import_graph() -> dict[str, set[str]]:
    """Map every module of survey/ to the survey modules it imports, at the top or inside a function."""
    return {_dotted_name(path): _survey_imports(path) - {_dotted_name(path)} for path in sorted(SURVEY_DIR.rglob("*.py"))}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return one circle through each strongly connected group of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


# Packages whose circles other work removes; delete the entry when it lands (the store split removes
# Store.__new__'s deferred import of postgres.py, which imports Store).
KNOWN_CIRCLES_IN = ()


def test_no_import_circle_in_survey():
    """A deferred import is still an import: a circle through one only waits for the first call to bite."""
    circles = [group for group in _circles(_import_graph())
               if not any(all(name.startswith(package) for name in group) for package in KNOWN_CIRCLES_IN)]
    assert not circles, "import circles: " + "; ".join(" <-> ".join(group) for group in circles)


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


INTERNALS = ROOT / "docs" / "explanation" / "internals.md"


def _module_map() -> dict[str, set[str]]:
    """Return the folders of internals.md's module map and the module names (in backticks) each row gives."""
    text = INTERNALS.read_text(encoding="utf-8")
    section = text.split("### Module map", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `(survey/[^`]*)` \| (.*) \|$", section, re.MULTILINE)
    return {folder.rstrip("/"): set(re.findall(r"`([A-Za-z_0-9]+)`", modules)) for folder, modules in rows}


def test_the_internals_map_names_every_module_and_only_modules():
    """docs/explanation/internals.md's module map: each folder of survey/ with its modules, none missing, none made up."""
    actual = {}
    for path in SURVEY_DIR.rglob("*.py"):
        if path.stem != "__init__":
            actual.setdefault(path.parent.relative_to(ROOT).as_posix(), set()).add(path.stem)
    named = _module_map()
    assert named, "internals.md has no module map"
    for folder in sorted(set(actual) | set(named)):
        modules, listed = actual.get(folder, set()), named.get(folder, set())
        missing, unknown = modules - listed, listed - modules
        assert not missing and not unknown, (f"internals.md's module map, {folder}/: add {sorted(missing)}, "
                                             f"remove {sorted(unknown)}")


MAX_PRODUCT_MODULE_LINES = 600


def test_no_product_module_is_over_600_lines():
    """A module that grows past this is split by topic (as the store and the planning were)."""
    sizes = {str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
             for path in (ROOT / "survey").rglob("*.py")}
    too_long = {name: lines for name, lines in sizes.items() if lines > MAX_PRODUCT_MODULE_LINES}
    assert not too_long, f"modules over {MAX_PRODUCT_MODULE_LINES} lines: {too_long}"
