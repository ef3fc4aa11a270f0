"""The joined page script leaves out comment lines only (survey.web.js_comments).

Checked: a comment line goes, while a comment after code, a ``//`` or ``/*`` inside a string, a
template literal (with ``${...}`` and a nested template) or a regular expression stays, with every
other line; text that cannot be read to its end comes back unchanged; every module of client_js/
is read to its end, loses only lines that are comments, and still parses in Node.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

import pytest

from survey.web.js_comments import comment_spans, without_comment_lines

CLIENT_JS = Path(__file__).resolve().parents[2] / "client_js"

SOURCE = """/**
 * A module's header: gone.
 */
// a line comment: gone
const url = 'http://example.org/*not a comment*/'; // a comment after code: kept
const words = `first line
// inside a template literal: kept
${ratio / 2} and ${`nested ${'}'} // kept`}
/* kept too */`;
  /* a block on its own line, indented: gone */
const pattern = /\\/\\/|[/*]/g;
const half = total / 2; const third = total / 3;
if (a) { return /a\\/*b/.test(s); }
export default words;
"""

KEPT = """const url = 'http://example.org/*not a comment*/'; // a comment after code: kept
const words = `first line
// inside a template literal: kept
${ratio / 2} and ${`nested ${'}'} // kept`}
/* kept too */`;
const pattern = /\\/\\/|[/*]/g;
const half = total / 2; const third = total / 3;
if (a) { return /a\\/*b/.test(s); }
export default words;
"""


def test_only_the_lines_that_hold_nothing_but_a_comment_go():
    assert without_comment_lines(SOURCE) == KEPT


@pytest.mark.parametrize("text", ["const a = `open template\n// line\n", "const a = 'open string\n// b\n",
                                  "/* never closed\nconst a = 1;\n", "const a = `${b\n// c\n"])
def test_text_that_cannot_be_read_to_its_end_is_kept_whole(text):
    assert comment_spans(text) is None
    assert without_comment_lines(text) == text


def modules() -> list[Path]:
    return sorted(CLIENT_JS.rglob("*.js"))


def test_every_module_is_read_to_its_end_and_loses_only_comment_lines(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (Node.js 20 or later tests client_js/)")
    assert len(modules()) > 20
    for path in modules():
        source = path.read_text(encoding="utf-8")
        assert comment_spans(source) is not None, path
        shorter = without_comment_lines(source)
        before, after = source.split("\n"), shorter.split("\n")
        for tag, start, end, _from, _to in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
            assert tag in ("equal", "delete"), (path, tag, before[start:end])
            if tag == "delete":
                for line in before[start:end]:
                    stripped = line.strip()
                    assert stripped.startswith(("//", "/*", "*")) or stripped.endswith("*/"), (path, line)
        copy = tmp_path / f"{path.stem}.mjs"
        copy.write_text(shorter, encoding="utf-8")
        checked = subprocess.run([node, "--check", str(copy)], capture_output=True, text=True, timeout=60, check=False)
        assert checked.returncode == 0, (path, checked.stderr)
