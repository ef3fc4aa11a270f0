"""One client floods the real server (gunicorn) beyond --max-submissions-per-minute: 429 JSON, nothing of it stored."""

from __future__ import annotations

import http.cookiejar
import json
import re
import urllib.error
import urllib.request

import pytest

from survey.store import Store

from conftest import create_smoking_db, start_server

pytestmark = pytest.mark.slow

SLUG = "smoking-2026"
LIMIT = 6
SENT = 15
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": 2, "age": 1}


def test_a_flood_beyond_the_limit_gets_429_and_stores_nothing_of_it(tmp_path):
    db_path = tmp_path / "flood.db"
    create_smoking_db(db_path)
    server = start_server(db_path, tmp_path / "server.log", "--workers", "1",
                          "--max-submissions-per-minute", str(LIMIT))
    try:
        store = Store(db_path)
        design = store.get_design(SLUG)
        store.close()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        page = opener.open(f"{server.origin}/s/{SLUG}", timeout=10).read().decode()
        token = re.search(r'<meta name="csrf-token" content="([^"]+)"', page).group(1)
        replies = []
        for _ in range(SENT):
            body = json.dumps({"design": design["hash"], "answers": GOOD}).encode()
            request = urllib.request.Request(f"{server.origin}/s/{SLUG}/responses", data=body, method="POST",
                                             headers={"Content-Type": "application/json", "X-CSRFToken": token})
            try:
                with opener.open(request, timeout=10) as reply:
                    replies.append((reply.status, dict(reply.headers), reply.read()))
            except urllib.error.HTTPError as error:
                replies.append((error.code, dict(error.headers), error.read()))
                error.close()
        # A minute refills LIMIT submissions: at most one more can have been earned while sending.
        accepted = [r for r in replies if r[0] == 201]
        refused = [r for r in replies if r[0] == 429]
        assert len(accepted) + len(refused) == SENT
        assert LIMIT <= len(accepted) <= LIMIT + 1
        assert replies[:LIMIT] == accepted[:LIMIT] and all(r[0] == 201 for r in replies[:LIMIT])
        for _, headers, body in refused:
            assert headers["Content-Type"].startswith("application/json")
            assert int(headers["Retry-After"]) >= 1
            assert "Nothing was stored" in json.loads(body)["error"]
        store = Store(db_path)
        assert store.response_count(SLUG) == len(accepted)
        store.close()
        log = server.log_text()
        assert "/responses" not in log and " 429" not in log, "refused submissions are not logged"
    finally:
        assert server.stop() == 0
