"""Every command given wrong arguments exits non-zero with one plain `Error:` line, never a traceback.

A definition's mistakes are listed under that line, one "  - " line each.
"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from survey.cli import main
from survey.store import Store

from conftest import OWNER, smoking_text

SLUG = "smoking-2026"
ANSWERS = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}
HUGE = "9" * 30
UNREACHABLE = "postgresql://nobody@127.0.0.1:1/ldp"  # port 1: refused at once


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A database with the smoking survey at version 2 (version 1 kept as SLUG.v1), an account, and hostile files."""
    root = tmp_path_factory.mktemp("hostile")
    db = root / "study.db"
    files = {"toml": smoking_text(), "changed.toml": re.sub(r"^epsilon = .*$", "epsilon = 1", smoking_text(),
                                                            count=1, flags=re.M),
             "wrong-types.toml": 'slug = 5\ntitle = ["x"]\nepsilon = "two"\n[[questions]]\nid = 3\nkind = {a = 1}\n',
             "broken.toml": 'slug = "x\n[[[', "empty.toml": ""}
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "binary.toml").write_bytes(b"\xff\xfe\x00\x01garbage")
    (root / "folder.toml").mkdir()
    runner = CliRunner()
    assert runner.invoke(main, ["--db", str(db), "create", str(root / "toml")]).exit_code == 0
    store = Store(db)
    try:
        store.add_responses(SLUG, store.get_design(SLUG)["hash"], [ANSWERS] * 4)
        store.add_user(OWNER[0], "pbkdf2:sha256:1000$salt$hash")
    finally:
        store.close()
    assert runner.invoke(main, ["--db", str(db), "revise", SLUG, str(root / "changed.toml")]).exit_code == 0
    return root


# (arguments after --db DB, where {root} is the place's folder; a part of the one error line)
CASES = [
    # Files: missing, a folder, wrong types, not TOML, not text, empty.
    (["create", "{root}/missing.toml"], "does not exist"),
    (["create", "{root}/folder.toml"], "is a directory"),
    (["create", "{root}/wrong-types.toml"], "6 mistakes"),
    (["create", "{root}/broken.toml"], ""),
    (["create", "{root}/binary.toml"], ""),
    (["create", "{root}/empty.toml"], ""),
    (["plan", "{root}/wrong-types.toml"], "6 mistakes"),
    (["revise", SLUG, "{root}/missing.toml"], "does not exist"),
    # Slugs: unknown, odd, and a kept version where it is refused.
    (["publish", "nope"], "no survey with slug 'nope'"),
    (["aggregate", "a.b"], "no survey with slug 'a.b'"),
    (["close", "x" * 300], "no survey"),
    (["share", f"{SLUG}.v1", OWNER[0]], "earlier version"),
    (["publish", f"{SLUG}.v1"], "earlier version"),
    (["reopen", f"{SLUG}.v1"], "earlier version"),
    (["interview", f"{SLUG}.v1"], "not open"),
    (["revise", f"{SLUG}.v1", "{root}/toml"], "not 'smoking-2026.v1'"),
    # Numbers: NaN passed click's FloatRange (no comparison with NaN is true) and reached the core as a ValueError.
    (["aggregate", SLUG, "--level", "nan"], "'nan' is not a number in the range 0<x<1"),
    (["crosstab", SLUG, "smoker", "lung_disease", "--level", "NaN"], "'NaN' is not a number in the range 0<x<1"),
    (["plan", "{root}/toml", "--margin", "nan"], "'nan' is not a number in the range 0<x<1"),
    (["create", "{root}/toml", "--warn-margin", "nan"], "'nan' is not a number in the range 0<x<1"),
    (["plan", "{root}/toml", "--power", "smoker", "0.3", "0.5", "--alpha", "nan"], "not a number"),
    (["aggregate", SLUG, "--intervals", "posterior", "--prior", "nan,nan"], "prior"),
    (["invite", SLUG, "--count", HUGE], "is not in the range"),
    # Ids past a database INTEGER, and text that is no id or token.
    (["interview", SLUG, "--end", HUGE], "no interviewer session"),
    (["token", "revoke", OWNER[0], HUGE], "no API token"),
    (["token", "revoke", OWNER[0], "²"], "no API token"),
    (["uninvite", SLUG, "²"], "not cancelled"),
    # Databases and output paths that cannot be used.
    (["--db", "{root}/no-folder/study.db", "create", "{root}/toml"], "cannot create the database"),
    (["--db", "{root}/toml", "list"], "cannot use the database"),
    (["--db", UNREACHABLE, "list"], "cannot open the PostgreSQL database"),
    (["--db", "postgresql://x:y@[::1", "list"], "cannot open the PostgreSQL database"),
    (["migrate", "--to", "bogus://x"], "cannot create the database"),
    (["qr", SLUG, "--out", "{root}/no-folder/link.svg"], "cannot write"),
    (["backup", "{root}/no-folder/copy.db"], "no-folder"),
    (["export", SLUG, "--responses", "-o", "{root}/no-folder/r.csv"], "cannot write"),
]


@pytest.mark.parametrize("args, expected", CASES, ids=[" ".join(args)[:60] for args, _ in CASES])
def test_wrong_arguments_end_in_one_error_line(place, args, expected):
    args = [arg.replace("{root}", str(place)) for arg in args]
    db = ["--db", str(place / "study.db")] if args[0] != "--db" else []
    result = CliRunner().invoke(main, [*db, *args])
    assert result.exit_code in (1, 2), (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # not an exception's traceback
    lines = result.stderr.strip().splitlines()
    errors = [number for number, line in enumerate(lines) if line.startswith("Error: ")]
    assert len(errors) == 1 and expected in lines[errors[0]], result.stderr
    assert all(line.startswith("  - ") for line in lines[errors[0] + 1:]), result.stderr  # nothing more but mistakes
    assert "Traceback" not in result.output


@pytest.mark.both_backends
def test_a_nul_character_in_a_definition_or_an_address_list_is_refused(db_path, tmp_path):
    """PostgreSQL's text cannot hold NUL: a title "A\\u0000B" or such an address ended in a traceback there."""
    from survey.core.invitations import read_addresses

    path = tmp_path / "nul.toml"
    path.write_text(smoking_text().replace('title = "', 'title = "A\\u0000', 1), encoding="utf-8")
    result = CliRunner().invoke(main, ["--db", str(db_path), "create", str(path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (result.output, result.exception)
    assert "NUL" in result.stderr.splitlines()[0]
    assert read_addresses("email\na\x00b@example.org\nc\x7f@example.org\n")[1] == [
        "line 2: 'a\\x00b@example.org' is not an e-mail address", "line 3: 'c\\x7f@example.org' is not an e-mail address"]
