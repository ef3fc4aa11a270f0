"""`ldp-survey create` of a survey in several languages: created, with a warning per missing translation."""

from __future__ import annotations

from conftest import definition
from survey.cli import main


def test_create_warns_about_each_missing_translation(cli_runner, tmp_path):
    text = definition("languages").replace('translations.es.text = "¿Fuma usted?"\n', "")
    path = tmp_path / "languages.toml"
    path.write_text(text, encoding="utf-8")
    result = cli_runner.invoke(main, ["--db", str(tmp_path / "l.db"), "create", str(path)])
    assert result.exit_code == 0, result.output
    assert "/s/daily-health" in result.stdout
    assert "Warning: es: question 'smoker' has no translation of its text; shown in en" in result.stderr
    assert result.stderr.count("has no translation") == 1


def test_create_of_a_complete_translation_warns_of_none(cli_runner, tmp_path):
    path = tmp_path / "languages.toml"
    path.write_text(definition("languages"), encoding="utf-8")
    result = cli_runner.invoke(main, ["--db", str(tmp_path / "l.db"), "create", str(path)])
    assert result.exit_code == 0 and "no translation" not in result.stderr, result.output
