"""`ldp-survey plan --versus-direct`: the break-even sensitivity bias on the command line."""

from __future__ import annotations

import json
import math

import pytest

from survey.cli import main


def test_plan_versus_direct_cli(cli_runner, tmp_path):
    """`plan --versus-direct` prints and returns the break-even bias with its reference."""
    path = tmp_path / "v.toml"
    path.write_text(f'slug = "v"\ntitle = "V"\nepsilon = {math.log(3)!r}\n\n[[questions]]\nid = "smoker"\n'
                    'kind = "yes_no"\ntext = "Smoke?"\n')
    result = cli_runner.invoke(main, ["plan", str(path), "--versus-direct", "--format", "json"])
    assert result.exit_code == 0, result.output
    (found,) = json.loads(result.stdout)["versus_direct"]
    assert found["estimands"][0]["bias"] == pytest.approx(math.sqrt(0.75 / 1000), abs=1e-9)
    assert "Blair, Coppock & Moor 2020" in found["sentence"]
    table = cli_runner.invoke(main, ["plan", str(path), "--versus-direct", "--respondents", "4000"])
    assert table.exit_code == 0 and f"smoker: {math.sqrt(0.75 / 4000) * 100:.1f} percentage points" in table.stdout
    assert "--versus-direct" in cli_runner.invoke(main, ["plan", "--help"]).stdout
