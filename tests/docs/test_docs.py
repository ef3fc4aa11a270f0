"""The documentation site: it builds with MkDocs in strict mode (every warning an error), and
its reference names every command-line command and every HTTP route of the product."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import click
import pytest

from survey.cli import main as cli_main

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """Build the site once with ``mkdocs build --strict`` and return its directory."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    return out


def page_text(site: Path, page: str) -> str:
    """Return a built page's text without tags, entities decoded."""
    html = (site / page / "index.html").read_text(encoding="utf-8")
    return unescape(re.sub(r"<[^>]+>", "", html))


def command_paths(group: click.Group, prefix: str = "ldp-survey") -> list[str]:
    """Return every command's full invocation, subcommands of groups included."""
    paths = []
    for name, command in group.commands.items():
        paths.append(f"{prefix} {name}")
        if isinstance(command, click.Group):
            paths.extend(command_paths(command, f"{prefix} {name}"))
    return paths


def test_the_site_builds_without_a_warning(site):
    assert (site / "index.html").is_file()
    assert (site / "reference" / "cli" / "index.html").is_file()


def test_the_cli_reference_names_every_command_with_its_options(site):
    text = page_text(site, "reference/cli")
    paths = command_paths(cli_main)
    assert len(paths) > 20
    missing = [path for path in paths if path not in text]
    assert not missing, missing
    export = cli_main.commands["export"]
    for option in export.params:
        for flag in option.opts:
            assert flag in text, flag


def test_no_page_cites_a_file_the_product_does_not_contain():
    """The docs and the code cite papers; the design notes the product was built from are not in it."""
    offenders = []
    for root in ("survey", "client_js", "templates", "docs", "tests", "bench", "examples"):
        for path in (REPO / root).rglob("*"):
            if path.is_file() and path.suffix in {".py", ".js", ".mjs", ".md", ".html", ".toml", ".css", ".R"}:
                text = path.read_text(encoding="utf-8", errors="replace")
                if re.search(r"\b(DESIGN|MATH)\.md\b", text) and path.name != "test_docs.py":
                    offenders.append(str(path.relative_to(REPO)))
    for name in ("README.md", "pyproject.toml", "mkdocs.yml"):
        if re.search(r"\b(DESIGN|MATH)\.md\b", (REPO / name).read_text(encoding="utf-8")):
            offenders.append(name)
    assert not offenders, offenders


def test_readme_is_a_short_front_page():
    readme = (REPO / "README.md").read_bytes()
    assert len(readme) <= 12 * 1024, len(readme)


def test_license_changelog_and_citation_exist():
    assert "MIT License" in (REPO / "LICENSE").read_text(encoding="utf-8")
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## 0.1.0" in changelog
    citation = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version:" in citation and "title: ldp-survey" in citation


def documented_rule(rule: str) -> str:
    """Return a Flask rule as the docs write it: converters dropped (``<path:x>`` → ``<x>``, ``<any(a, b):fmt>`` → ``<fmt>``)."""
    return re.sub(r"<(?:[a-z]+(?:\([^)]*\))?:)?([a-z_]+)>", r"<\1>", rule)


def test_every_route_appears_in_the_http_or_the_api_reference(site, tmp_path):
    """Each page route is in the HTTP reference; each API route, with its methods, in the API reference rendered
    from the OpenAPI document (so a route missing from the document is missing from the page)."""
    from survey.web import create_app

    app = create_app({"TESTING": True, "DATABASE": str(tmp_path / "x.db"), "SECRET_KEY": "test"})
    http = (REPO / "docs" / "reference" / "http.md").read_text(encoding="utf-8")
    api = page_text(site, "reference/api")
    missing = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "api.unknown":
            continue
        methods = sorted(rule.methods - {"HEAD", "OPTIONS"})
        if rule.rule.startswith("/api/"):
            shown = rule.rule.replace("<", "{").replace(">", "}")
            missing += [f"{method} {shown}" for method in methods if f"{method} {shown}" not in api]
        else:
            shown = documented_rule(rule.rule)
            rows = [line for line in http.splitlines() if re.search(rf"(?<![\w>]){re.escape(shown)}(?=[`\s\[])", line)]
            if not all(any(re.search(rf"\b{method}\b", row) for row in rows) for method in methods):
                missing.append(f"{'/'.join(methods)} {shown}")
    assert not missing, missing


def test_the_choose_epsilon_table_is_what_the_planner_says():
    """Every number of the how-to's table, recomputed from the design and planning modules."""
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design
    from survey.core.mechanisms import mechanism_for
    from survey.core.planning import plan_question, posterior_bound
    from survey.core.words import percent, percent_up

    def question(kind: str, epsilon: str) -> dict:
        options = 'options = ["a", "b", "c", "d", "e"]' if kind == "choice" else ""
        text = f'slug = "x"\ntitle = "x"\nepsilon = {epsilon}\n[[questions]]\nid = "q"\nkind = "{kind}"\ntext = "t"\n{options}\n'
        return build_design(parse_definition_toml(text, source="choose-epsilon.md"))["questions"][0]

    page = (REPO / "docs" / "how-to" / "choose-epsilon.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([0-9.]+) \| ([0-9.]+%) \| ([0-9.]+%) \| ([0-9,]+) \| ([0-9,]+) \|$", page, re.MULTILINE)
    assert len(rows) == 7
    for epsilon, kept, sure, yes_no, choice in rows:
        yn, five = question("yes_no", epsilon), question("choice", epsilon)
        assert kept == percent(mechanism_for(yn).probabilities()[0]), epsilon
        assert sure == percent_up(posterior_bound(yn["epsilon"])), epsilon
        assert int(yes_no.replace(",", "")) == plan_question(yn, respondents=1000, margin=0.05).respondents
        assert int(choice.replace(",", "")) == plan_question(five, respondents=1000, margin=0.05).respondents


def test_every_link_of_the_readme_reaches_a_file():
    """The README is read on the forge and in the sdist, outside the site: its relative links must exist."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = {target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", readme)
               if not re.match(r"[a-z]+:", target) and not target.startswith("#")}
    assert len(targets) > 10
    missing = sorted(target for target in targets if not (REPO / target).exists())
    assert not missing, missing


def test_the_readme_screenshots_are_real_pngs_and_small():
    """docs/tools/screenshots.py makes them from the demo; each stays small enough for a front page."""
    from PIL import Image

    for name, width in (("respondent-phone.png", 720), ("results-desktop.png", 1280)):
        path = REPO / "docs" / "images" / name
        with Image.open(path) as image:
            assert image.format == "PNG" and image.width == width
        assert path.stat().st_size < 150 * 1024, (name, path.stat().st_size)
