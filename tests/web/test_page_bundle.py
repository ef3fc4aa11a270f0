"""The respondent page's joined script (survey.web.page_bundle): the modules as written, only the survey's mechanisms.

Checked: the joined registry, run by Node, holds exactly the mechanisms asked for and randomizes
with them as the module files do (the same report for the same random integers); every line of
every module that is not an import, an export keyword or a comment alone is in the joined text unchanged; a
module left out cannot be imported by name; bad parameters are 400, unknown pages 404.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from survey.web import page_bundle
from survey.web.js_comments import without_comment_lines

REPO = Path(__file__).resolve().parents[2]
CLIENT_JS = REPO / "client_js"


def read(path: str) -> str:
    return (CLIENT_JS / path).read_text(encoding="utf-8")


def test_the_joined_registry_runs_with_only_the_mechanisms_asked_for(tmp_path):
    """Node loads the joined registry: MECHANISMS are those asked for (and what they import); draws equal the files'."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (Node.js 20 or later tests client_js/)")
    used = frozenset({("yes_no", "rr"), ("number", "hybrid")})
    joined = page_bundle.join("mechanisms/index.js", used, read).replace(
        'load("mechanisms/index.js");\n', 'export const registry = load("mechanisms/index.js");\n')
    assert 'define("mechanisms/piecewise.js"' in joined, "hybrid's own import of piecewise comes along"
    assert 'define("mechanisms/opm.js"' not in joined and 'define("mechanisms/grr.js"' not in joined
    (tmp_path / "joined.mjs").write_text(joined, encoding="utf-8")
    script = f"""
import {{ registry }} from {json.dumps((tmp_path / 'joined.mjs').as_uri())};
import * as files from {json.dumps((CLIENT_JS / 'mechanisms' / 'index.js').as_uri())};
const names = registry.MECHANISMS.map((m) => `${{m.kind}}/${{m.name}}`);
const question = {{ id: 'q', kind: 'yes_no', mechanism: 'rr', flip_threshold: 2 ** 51 }};
const replay = (values) => {{ let i = 0; const next = () => values[i++ % values.length];
  return {{ u32: next, u53: next, bern53: (t) => next() < t, below: (n) => next() % n, bern: (a, b) => next() % b < a }}; }};
const same = [0, 1, 5, 2 ** 52, 7].every((v) =>
  registry.randomizeQuestion(question, 1, replay([v])) === files.randomizeQuestion(question, 1, replay([v])));
console.log(JSON.stringify({{ names, same }}));
"""
    result = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    # piecewise comes with hybrid, which imports it, so the registry lists it too
    assert sorted(out["names"]) == ["number/hybrid", "number/piecewise", "yes_no/rr"] and out["same"]


def test_every_module_line_but_imports_export_keywords_and_comment_lines_is_kept_as_written():
    """Each module's lines are in the joined text as they are, save import lines, the word export and the lines
    that hold only a comment (survey.web.js_comments)."""
    used = frozenset({("yes_no", "rr"), ("choice", "grr"), ("multi", "rr"), ("number", "duchi")})
    names = page_bundle.bundle_modules("respond.js", used, read)
    joined = page_bundle.join("respond.js", used, read)
    assert names[-1] == "respond.js" and names.index("random.js") < names.index("mechanisms/common.js")
    for name in names:
        body = joined.split(f'define("{name}", function (exports, load) {{\n', 1)[1].split("\n});\ndefine(", 1)[0]
        assert "/**" not in body, name
        for line in without_comment_lines(read(name)).splitlines():
            if line.startswith(("import ", "export ", "}", "  ")) and ("from '" in line or line.startswith(
                    ("import ", "export "))):
                continue
            assert line in body, (name, line)
        assert not re.search(r"^\s*(import|export)\s", body, re.M), name


def test_a_left_out_module_cannot_be_imported_by_name():
    """Only the registry's default imports of mechanisms may be left out; a named import of one is an error, as is
    an export list (the loader takes exported declarations only)."""
    with pytest.raises(ValueError, match="leaves out"):
        page_bundle.rewrite("x.js", "import { a } from './mechanisms/opm.js';\n", present=set())
    assert page_bundle.rewrite("x.js", "import opm from './mechanisms/opm.js';\n", present=set()).count(
        "const opm = undefined;") == 1
    with pytest.raises(ValueError, match="export list"):
        page_bundle.rewrite("x.js", "const a = 1;\nexport { a };\n", present=set())


def test_the_page_script_route_checks_its_parameters(client):
    """A malformed mechanisms parameter is 400, another page 404; a good one is JavaScript with an ETag."""
    assert client.get("/static/js/page/respond.js?mechanisms=yes_no.rr,choice.grr").status_code == 200
    assert client.get("/static/js/page/respond.js?mechanisms=yes_no.rr;rm").status_code == 400
    assert client.get("/static/js/page/builder.js?mechanisms=yes_no.rr").status_code == 404
    good = client.get("/static/js/page/respond.js?mechanisms=yes_no.rr", headers={"Accept-Encoding": "gzip"})
    assert good.mimetype == "text/javascript" and good.headers["Content-Encoding"] == "gzip" and good.headers["ETag"]
