"""Packaging: a non-editable install, used from elsewhere, finds its templates, browser code and examples."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

CHECK_INSTALLED_APP = textwrap.dedent("""
    import sys
    from pathlib import Path

    import survey
    from survey.resources import resource_dir
    from survey.web import create_app

    venv = Path(sys.prefix).resolve()
    assert Path(survey.__file__).resolve().is_relative_to(venv), survey.__file__
    for name in ("templates", "client_js", "examples"):
        assert resource_dir(name).resolve().is_relative_to(venv), (name, resource_dir(name))

    client = create_app({"TESTING": True, "DATABASE": sys.argv[1], "SECRET_KEY": "test"}).test_client()
    for path, needle in [("/s/smoking-2026", "Smoking and lung health"),
                         ("/static/js/random.js", "crypto.getRandomValues"),
                         ("/static/js/mechanisms/index.js", "export function mechanismOf"),
                         ("/static/js/mechanisms/common.js", "from '../random.js'"),
                         ("/static/js/style.css", "")]:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        assert needle in response.get_data(as_text=True), (path, needle)
    # The catalogs were compiled into the wheel, and a respondent's error page is in their language.
    translations = Path(survey.__file__).resolve().parent / "translations"
    assert (translations / "ar" / "LC_MESSAGES" / "messages.mo").is_file(), sorted(translations.rglob("*"))
    response = client.get("/s/no-such-survey", headers={"Accept-Language": "ar"})
    assert "لا يوجد استبيان على هذا العنوان." in response.get_data(as_text=True)
    print("installed app ok")
""")


def run(args, **kwargs):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=120, **kwargs)
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result


def share_running_site_packages(python: Path):
    """Let the new venv import what the running interpreter has (hatchling, flask...), after its own packages.

    ``--system-site-packages`` would expose the base interpreter's packages, not those of
    the virtualenv the tests may be running in; a .pth file names the running ones instead.
    """
    own = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    running = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (Path(own) / "running-interpreter.pth").write_text("".join(f"{path}\n" for path in running))


def test_non_editable_install_works_from_another_directory(tmp_path):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    share_running_site_packages(python)
    run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--quiet", REPO])

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "LDP_SURVEY_DB")}
    db = elsewhere / "installed.db"
    created = run([bin_dir / "ldp-survey", "--db", db, "create", REPO / "examples" / "smoking.toml"],
                  cwd=elsewhere, env=env)
    assert "/s/smoking-2026" in created.stdout
    version = run([bin_dir / "ldp-survey", "--version"], cwd=elsewhere, env=env).stdout
    assert version.startswith("ldp-survey, version")
    assert run([python, "-m", "survey", "--help"], cwd=elsewhere, env=env).stdout.startswith("Usage: ldp-survey")
    checked = run([python, "-c", CHECK_INSTALLED_APP, db], cwd=elsewhere, env=env)
    assert "installed app ok" in checked.stdout
