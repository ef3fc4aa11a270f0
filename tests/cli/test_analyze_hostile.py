"""Hostile input files for `ldp-survey analyze` and `ldp-survey codebook`: each ends with a clean error (exit code 1
or 2, one paragraph naming the file and the problem, no traceback) or, where the file is odd but valid, with the
same numbers as its plain form; and a huge one-line file is refused in bounded memory."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from survey.cli import files as files_module
from survey.cli import main
from survey.exports.codebook import codebook as product_codebook
from survey.core.definition import load_definition
from survey.core.design import build_design, design_hash
from survey.exports.export import responses_csv
from survey.core.reanalysis import binary_codebook
from survey.core.simulate import complete_truth, simulate_answers

from conftest import REPO

PLAIN = b"sex,used\n" + b"".join(b"%s,%d\n" % (b"fm"[i % 2:i % 2 + 1], (i * 7) % 3 == 0) for i in range(40))
BOOK = binary_codebook([("used", "0.75", "0.25")], exact=["sex"])


def _book(**changes) -> dict:
    """Return the plain codebook with top-level changes, or with ``edit(book)`` applied."""
    book = copy.deepcopy(BOOK)
    edit = changes.pop("edit", None)
    book.update(changes)
    if edit:
        edit(book)
    return book


def _set(path: str, value):
    """Return an edit that sets book[path] (dotted, with list indexes) to value."""
    def edit(book):
        *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]
        target = book
        for part in parents:
            target = target[part]
        target[last] = value
    return edit


def _drop(path: str):
    def edit(book):
        *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]
        target = book
        for part in parents:
            target = target[part]
        del target[last]
    return edit


def _json(book) -> bytes:
    return json.dumps(book).encode("utf-8")


# (name, responses bytes, codebook bytes, extra args, expected: "ok" (the plain numbers) or a phrase of the error)
CSV_CASES = [
    ("empty file", b"", None, (), "is empty"),
    ("blank lines only", b"\n\n\n", None, (), "is empty"),
    ("header only then regress", b"sex,used\n", None, ("regress",), "no response answered"),
    ("BOM", b"\xef\xbb\xbf" + PLAIN, None, (), "ok"),
    ("CRLF", PLAIN.replace(b"\n", b"\r\n"), None, (), "ok"),
    ("CRLF and LF mixed", b"".join(line + (b"\r\n" if i % 2 else b"\n")
                                   for i, line in enumerate(PLAIN.splitlines())), None, (), "ok"),
    ("a blank line at the end", PLAIN + b"\n", None, (), "ok"),
    ("unknown columns", PLAIN.replace(b"sex,used\n", b"sex,used,extra\n").replace(b"\n", b",x\n")
     .replace(b"sex,used,extra,x\n", b"sex,used,extra\n"), None, (), "ok"),
    ("lone CR line ends", PLAIN.replace(b"\n", b"\r"), None, (), "line 1: not a valid CSV"),
    ("NUL byte", PLAIN.replace(b"f,1", b"f\x00,1", 1), None, (), "NUL byte"),
    ("not UTF-8", PLAIN.replace(b"m,0", b"m\xe9,0", 1), None, (), "line 3: byte 0xe9"),
    ("UTF-16", PLAIN.decode().encode("utf-16"), None, (), "NUL byte"),
    ("131,073-character cell", PLAIN + b"f," + b"1" * 131_073 + b"\n", None, (),
     "line 42: a cell is longer than the 65,536 characters allowed"),
    ("70,000-character cell", PLAIN + b"f," + b"1" * 70_000 + b"\n", None, (),
     "line 42: a cell is longer than the 65,536 characters allowed (it has 70,000)"),
    ("a row of quoted cells over many lines", PLAIN + b"f" + b',"1\n"' * 250_000 + b"\n", None, (),
     "line 209757: a row is longer than 1,048,576 bytes"),
    ("a 2 MB line", b"x" * 2_000_000, None, (), "line 1: a row is longer than 1,048,576 bytes"),
    ("short row", PLAIN + b"f\n", None, (), "line 42: the row has 1 cells but the header has 2 columns"),
    ("long row", PLAIN + b"f,1,1\n", None, (), "line 42: the row has 3 cells but the header has 2 columns"),
    ("duplicate header", PLAIN.replace(b"sex,used\n", b"used,used\n"), None, (), "names the column 'used' twice"),
    ("missing column", PLAIN.replace(b"sex,used\n", b"sex,usd\n"), None, (), "no column 'used'"),
    ("non-numeric cell", PLAIN.replace(b"f,1", b"f,yes", 1), None, (), "column 'used': 'yes' is not a whole"),
    ("spaces around a report", PLAIN.replace(b"f,1", b"f, 1", 1), None, (), "' 1' is not a whole number"),
    ("other scripts' digits", PLAIN.replace(b"f,1", "f,١".encode(), 1), None, (), "is not a whole number"),
    ("underscored number", PLAIN.replace(b"f,1", b"f,1_0", 1), None, (), "is not a whole number"),
    ("huge number", PLAIN.replace(b"f,1", b"f," + b"9" * 5000, 1), None, (), "at most 18 digits"),
    ("negative report", PLAIN.replace(b"f,1", b"f,-1", 1), None, (), "a report must be 0 or 1, got -1"),
    ("report 2", PLAIN.replace(b"f,1", b"f,2", 1), None, (), "a report must be 0 or 1, got 2"),
    ("unterminated quote", PLAIN + b'f,"1\n', None, (), "row 42, column 'used': '1\\n' is not a whole"),
    ("binary garbage", bytes(range(256)) * 4, None, (), "NUL byte"),
]

CODEBOOK_CASES = [
    ("codebook empty", PLAIN, b"", (), "line 1: not valid JSON"),
    ("codebook not JSON", PLAIN, b'{"columns": [}\n', (), "line 1: not valid JSON"),
    ("codebook not UTF-8", PLAIN, b'{"title": "\xff"}', (), "line 1: byte 0xff is not UTF-8"),
    ("JSON nested 100,000 deep", PLAIN, b"[" * 100_000 + b"]" * 100_000, (), "nested more than 64 deep"),
    ("deep nesting inside a value", PLAIN, _json(_book(files={"x": "}"})).replace(b'"x"', b'"x": ' + b"{\"a\":" * 70
                                                                              + b"1" + b"}" * 70 + b', "y"'),
     (), "nested more than 64 deep"),
    ("NaN literal", PLAIN, _json(_book()).replace(b'"p": 0.75', b'"p": NaN'), (), "NaN is not a number JSON allows"),
    ("Infinity literal", PLAIN, _json(_book()).replace(b'"q": 0.25', b'"q": -Infinity'), (), "-Infinity"),
    ("duplicate key", PLAIN, _json(_book()).replace(b'"p": 0.75', b'"p": 0.75, "p": 0.9'), (), "appears twice"),
    ("huge integer", PLAIN, _json(_book()).replace(b'"simultaneous_over": 1', b'"simultaneous_over": '
                                                   + b"9" * 5000), (), "not a codebook"),
    ("a list", PLAIN, b"[]", (), "a codebook is a JSON object, got list"),
    ("a string", PLAIN, b'"codebook"', (), "a codebook is a JSON object, got str"),
    ("missing estimands", PLAIN, _json(_book(edit=_drop("estimands"))), (), "has no 'estimands'"),
    ("missing p", PLAIN, _json(_book(edit=_drop("estimands.0.p"))), (), "estimands[0] has no key 'p'"),
    ("missing column name", PLAIN, _json(_book(edit=_drop("columns.1.name"))), (), "columns[1] has no key 'name'"),
    ("extra top-level key", PLAIN, _json(_book(extra=1)), (), "unknown key 'extra'"),
    ("extra estimand key", PLAIN, _json(_book(edit=_set("estimands.0.P", 0.9))), (), "unknown key 'P'"),
    ("columns an object", PLAIN, _json(_book(columns={"used": 1})), (), "columns must be a non-empty list"),
    ("p a string", PLAIN, _json(_book(edit=_set("estimands.0.p", "0.75"))), (), "estimands[0].p must be"),
    ("p a bool", PLAIN, _json(_book(edit=_set("estimands.0.p", True))), (), "estimands[0].p must be"),
    ("p above 1", PLAIN, _json(_book(edit=_set("estimands.0.p", 1.5))), (), "number in [0, 1], got 1.5"),
    ("p below 0", PLAIN, _json(_book(edit=_set("estimands.0.q", -0.25))), (), "got -0.25"),
    ("p disagrees with p_exact", PLAIN, _json(_book(edit=_set("estimands.0.p", 0.8))), (), "p_exact must be"),
    ("p = q", PLAIN, _json(_book(edit=lambda b: b["estimands"][0].update(p=0.25, p_exact="1/4"))), (),
     "independent of the answers"),
    ("p underflows", PLAIN, _json(_book(edit=lambda b: b["estimands"][0].update(p=0.0, p_exact="1/" + "1" + "0" * 400))),
     (), "p_exact is too close to 0"),
    ("value a bool", PLAIN, _json(_book(edit=_set("estimands.0.value", True))), (), "value must be 1"),
    ("simultaneous_over a float", PLAIN, _json(_book(edit=_set("estimands.0.simultaneous_over", 1.5))), (),
     "simultaneous_over must be a whole number"),
    ("wrong mechanism", PLAIN, _json(_book(edit=_set("columns.0.mechanism", "warner"))), (), "mechanism must be"),
    ("wrong kind", PLAIN, _json(_book(edit=_set("columns.1.kind", "yes_no"))), (), "kind must be 'category'"),
    ("estimand of an exact column", PLAIN, _json(_book(edit=_set("estimands.0.column", "sex"))), (),
     "must name a binary column"),
    ("epsilon a string", PLAIN, _json(_book(epsilon="1.1")), (), "epsilon must be null or a number"),
    ("control character in a name", PLAIN, _json(_book(edit=lambda b: [b["columns"][1].update(
        name="s\u0007x", question="s\u0007x")])), (), "control characters"),
    ("design a string", PLAIN, _json(_book(design="x")), (), "must be an object with its hash"),
]


@pytest.fixture
def write(tmp_path):
    """Write a case's two files and return their paths."""
    def write(responses: bytes, book: bytes | None):
        (tmp_path / "r.csv").write_bytes(responses)
        (tmp_path / "c.json").write_bytes(_json(BOOK) if book is None else book)
        return tmp_path / "r.csv", tmp_path / "c.json"
    return write


def run_analyze(cli_runner, responses, book, extra=()):
    """Run analyze (aggregate, or regress used sex) and check it ends cleanly: a result or a one-paragraph error."""
    args = ["regress", "used", "sex"] if extra == ("regress",) else ["aggregate"]
    result = cli_runner.invoke(main, ["analyze", str(responses), *args, "--codebook", str(book), "--format", "json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def assert_clean_error(result, expected: str, path) -> None:
    """Exit code 1 or 2, one paragraph naming the file and holding the expected phrase."""
    assert result.exit_code in (1, 2), result.output
    message = result.stderr.strip()
    assert message.startswith("Error: ") and "\n" not in message and len(message) < 600, message
    assert str(path) in message and expected in message, (expected, message)


@pytest.mark.parametrize("name, responses, book, extra, expected", CSV_CASES + CODEBOOK_CASES,
                         ids=[case[0] for case in CSV_CASES + CODEBOOK_CASES])
def test_a_hostile_file_ends_in_a_clean_error_or_the_plain_numbers(cli_runner, write, name, responses, book,
                                                                   extra, expected):
    paths = write(responses, book)
    result = run_analyze(cli_runner, *paths, extra)
    if expected == "ok":
        plain = run_analyze(cli_runner, *write(PLAIN, None))
        assert result.exit_code == plain.exit_code == 0, result.output
        assert result.stdout == plain.stdout
        return
    assert_clean_error(result, expected, paths[1] if book is not None else paths[0])


def test_unicode_ids_are_names_like_any_other(cli_runner, write):
    book = binary_codebook([("a_usé_👍", "0.75", "0.25")], exact=["性别"])
    text = PLAIN.decode().replace("sex,used", "性别,a_usé_👍").encode()
    result = run_analyze(cli_runner, *write(text, _json(book)))
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["question"] == "a_usé_👍", result.output


def test_a_codebook_over_the_size_limit_is_refused_before_parsing(cli_runner, write, monkeypatch):
    monkeypatch.setattr(files_module, "MAX_CODEBOOK", 1000)
    paths = write(PLAIN, _json(_book(title="x" * 2000)))
    assert_clean_error(run_analyze(cli_runner, *paths), "is larger than", paths[1])


@pytest.fixture(scope="module")
def own():
    """A codebook exported by ldp-survey (built from the example's design) and rows of valid reports."""
    design = build_design(load_definition(REPO / "examples" / "smoking.toml"))
    rng = np.random.default_rng(5)
    answers = simulate_answers(design, complete_truth(design, {}, rng), 5, rng)
    text = responses_csv(design, [{"id": f"r{i}", "received_day": "2026-01-01", "answers": answer}
                                  for i, answer in enumerate(answers)])
    return product_codebook(design), text.encode()


def _rehash(book: dict) -> dict:
    """Give an edited design its right hash again (as a careful forger would)."""
    book["design"]["hash"] = book["design_hash"] = design_hash(book["design"])
    return book


OWN_CASES = [
    ("epsilon edited", lambda book: book["design"].update(epsilon=99), "was altered"),
    ("design_hash edited", lambda book: book.update(design_hash="0" * 64), "was altered"),
    ("a question's kind edited and re-hashed",
     lambda book: (book["design"]["questions"][0].update(kind="bogus"), _rehash(book)), "not one ldp-survey makes"),
    ("a question's fields removed and re-hashed",
     lambda book: (book["design"]["questions"][2].clear(), _rehash(book)), "not one ldp-survey makes"),
    ("questions a string, re-hashed", lambda book: (book["design"].update(questions="x"), _rehash(book)),
     "not one ldp-survey makes"),
    ("a threshold a string, re-hashed", lambda book: (
        [question.update({key: "x" for key in question if "threshold" in key})
         for question in book["design"]["questions"]], _rehash(book)), "design"),
    ("a column renamed", lambda book: book["columns"][0].update(name="smoker2"), "not those of its design"),
    ("an estimand's p a string", lambda book: book["estimands"][0].update(p="0.7"), "probabilities"),
]


@pytest.mark.parametrize("name, edit, expected", OWN_CASES, ids=[case[0] for case in OWN_CASES])
def test_an_edited_exported_codebook_ends_in_a_clean_error(cli_runner, write, own, name, edit, expected):
    book, responses = copy.deepcopy(own[0]), own[1]
    edit(book)
    paths = write(responses, _json(book))
    result = cli_runner.invoke(main, ["analyze", str(paths[0]), "aggregate", "--codebook", str(paths[1])])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert_clean_error(result, expected, paths[1])


def test_the_exported_codebook_itself_is_accepted(cli_runner, write, own):
    paths = write(own[1], _json(own[0]))
    result = cli_runner.invoke(main, ["analyze", str(paths[0]), "aggregate", "--codebook", str(paths[1]),
                                      "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["n"] == 5, result.output


@pytest.mark.parametrize("p, expected", [
    ("1e-400", "too close to 0"), ("1-1e-30", "is not a probability"), ("0.99999999999999999999", "too close to 1"),
    ("1e999999999", "is not a probability"), ("nan", "is not a probability"), ("inf", "is not a probability"),
    ("-0.5", "is not a probability"), ("1/0", "denominator is 0"), ("", "is not a probability"),
    ("3/2", "must be in [0, 1]"), ("0.7\x00", "is not a probability"),
])
def test_the_codebook_command_refuses_a_probability_it_cannot_compute_with(cli_runner, p, expected):
    result = cli_runner.invoke(main, ["codebook", "--binary", "drug", p, "0.5"])
    assert result.exit_code in (1, 2) and isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output and expected in result.stderr, result.stderr


@pytest.mark.parametrize("name", ["", "x" * 201, "a\tb"])
def test_the_codebook_command_refuses_a_bad_column_name(cli_runner, name):
    result = cli_runner.invoke(main, ["codebook", "--binary", name, "0.75", "0.25"])
    assert result.exit_code == 1 and "column's name" in result.stderr, result.stderr


def test_every_codebook_it_writes_is_accepted_by_analyze(cli_runner, write):
    book = binary_codebook([("a", "1", "0.5"), ("b", "0.1971293", "0.8028707"), ("c", "1e-300", "1/3")],
                           exact=["d"])
    text = b"a,b,c,d\n" + b"1,0,1,x\n0,1,0,y\n"
    result = run_analyze(cli_runner, *write(text, _json(book)))
    assert result.exit_code == 0, result.output
    assert [row["n"] for row in json.loads(result.stdout)] == [2, 2, 2]


MEMORY = textwrap.dedent("""
    import resource, sys
    from click.testing import CliRunner
    from survey.cli import main
    import survey.cli.analysis, survey.cli.files, survey.exports.codebook_check, survey.core.reanalysis  # imported first
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = CliRunner().invoke(main, ["analyze", sys.argv[1], "aggregate", "--codebook", sys.argv[2]])
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(result.exit_code, (after - before) // 1024, result.stderr.strip()[:300])
""")


@pytest.mark.slow
def test_a_200_mb_one_line_file_is_refused_in_bounded_memory(write):
    """ru_maxrss is the peak resident set in KiB: its rise while analyze reads the file stays under 100 MB."""
    responses, book = write(b"", None)
    with responses.open("wb") as handle:
        block = b"0," * (1 << 19)
        for _ in range(200):
            handle.write(block)
    result = subprocess.run([sys.executable, "-c", MEMORY, str(responses), str(book)], capture_output=True,
                            text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    code, rise, message = result.stdout.split(" ", 2)
    assert code == "1" and "a row is longer than" in message, result.stdout + result.stderr
    assert int(rise) < 100, f"peak RSS rose by {rise} MiB"
