"""The browser code as served (survey.web.static_files): gzip when accepted, a strong ETag per encoding, 304, caching."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, kind", [("respond.js", "text/javascript"), ("mechanisms/grr.js", "text/javascript"),
                                        ("style.css", "text/css")])
def test_text_assets_are_gzipped_when_accepted_and_revalidated_by_etag(client, name, kind):
    """gzip for a client that accepts it, the file as it is otherwise; Vary, Cache-Control and 304 on If-None-Match."""
    source = (REPO / "client_js" / name).read_bytes()
    packed = client.get(f"/static/js/{name}", headers={"Accept-Encoding": "gzip, deflate, br"})
    plain = client.get(f"/static/js/{name}")
    refused = client.get(f"/static/js/{name}", headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert packed.status_code == plain.status_code == refused.status_code == 200
    assert packed.headers["Content-Encoding"] == "gzip" and gzip.decompress(packed.get_data()) == source
    assert len(packed.get_data()) < 0.6 * len(source)
    for response in (plain, refused):
        assert "Content-Encoding" not in response.headers and response.get_data() == source
    for response in (packed, plain):
        assert response.mimetype == kind and "Accept-Encoding" in response.headers["Vary"].split(", ")
        assert response.headers["Cache-Control"] == "public, max-age=300"
    assert packed.headers["ETag"] != plain.headers["ETag"], "each encoding is its own representation"
    again = client.get(f"/static/js/{name}", headers={"Accept-Encoding": "gzip", "If-None-Match": packed.headers["ETag"]})
    assert again.status_code == 304 and again.get_data() == b"" and again.headers["ETag"] == packed.headers["ETag"]
    stale = client.get(f"/static/js/{name}", headers={"If-None-Match": '"not-this-one"'})
    assert stale.status_code == 200 and stale.get_data() == source


def test_a_changed_file_gets_a_new_etag_and_its_new_bytes(client, tmp_path, monkeypatch):
    """The kept copy is read again when the file changes on disk (its modification time or size)."""
    from survey.web import static_files

    folder = tmp_path / "client_js"
    folder.mkdir()
    script = folder / "a.js"
    script.write_text("export const A = 1;\n", encoding="utf-8")
    monkeypatch.setattr(static_files, "resource_dir", lambda name: folder)
    first = client.get("/static/js/a.js")
    script.write_text("export const A = 22;\n", encoding="utf-8")
    second = client.get("/static/js/a.js")
    assert first.get_data() == b"export const A = 1;\n" and second.get_data() == b"export const A = 22;\n"
    assert first.headers["ETag"] != second.headers["ETag"]


def test_missing_files_and_paths_outside_the_folder_are_404(client):
    """Nothing outside client_js/ is served, and a missing file is 404."""
    for path in ("/static/js/nope.js", "/static/js/../survey/__init__.py", "/static/js/%2e%2e/pyproject.toml"):
        assert client.get(path).status_code == 404, path
