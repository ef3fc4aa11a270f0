"""`create` lists every mistake of a definition at once, with "did you mean" (issue 27)."""

from __future__ import annotations

from survey.cli import main

from test_every_mistake import BAD


def test_create_lists_every_mistake(tmp_path, cli_runner):
    path = tmp_path / "bad.toml"
    path.write_text(BAD, encoding="utf-8")
    result = cli_runner.invoke(main, ["--db", str(tmp_path / "x.db"), "create", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"7 mistakes in {path}, all of them:" in result.stderr
    assert "(did you mean 'title'?)" in result.stderr and "(did you mean 'text'?)" in result.stderr
    assert "(did you mean 'options'?)" in result.stderr
