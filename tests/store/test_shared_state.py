"""Several servers on one database: the flood limit, sign-in throttle and signing key are shared, not per process.

The database comes from the ``db_path`` fixture and is read only through ``Store`` and
HTTP, so these tests can run on a database server too; the one SQLite-specific check
(every table's every value) is marked as such.
"""

from __future__ import annotations

import csv
import http.cookiejar
import io
import json
import logging
import math
import re
import urllib.error
import urllib.parse
import urllib.request

import pytest

from survey.cli import main
from survey.store import Store
from survey.web import create_app
from survey.web.flood import DatabaseLimiter, FloodStoreError, SubmissionLimiter, flood_store
from survey.web.secret import SECRET_ENV, SETTING, SecretKeyError, is_url, key_path, load_secret_key, stored_key

from conftest import OWNER, domain_answers, free_port, start_server, table_names

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
LIMIT = 6
ADDRESS = "203.0.113.77"
# A moment 10 s into a window of one minute, in 2025 (past: a server start deletes it).
WINDOW = 29_000_000
START = WINDOW * 60.0 + 10


@pytest.fixture
def servers(db_path, smoking_survey, monkeypatch):
    """Return two apps on one database, as two servers: each loads the key itself, floods counted in the database."""
    monkeypatch.delenv(SECRET_ENV, raising=False)
    apps = [create_app({"TESTING": True, "DATABASE": str(db_path), "FLOOD_STORE": "database",
                        "MAX_SUBMISSIONS_PER_MINUTE": LIMIT}) for _ in range(2)]
    yield apps
    for app in apps:
        app.extensions["ldp_stores"].close_all()


def client_from(app, address: str = ADDRESS):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def csrf_token(page: str) -> str:
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def submit(client, design) -> int:
    body = {"design": design["hash"], "answers": domain_answers(design, smoker=1)}
    return client.post(f"/s/{SLUG}/responses", json=body).status_code


def flood_rows(db_path) -> list[tuple]:
    """Return every (client, window_number, count) row of the shared flood counts, oldest window first."""
    store = Store(db_path)
    try:
        return [tuple(row) for row in store.conn.execute(
            "SELECT client, window_number, count FROM flood_counts ORDER BY window_number, client").fetchall()]
    finally:
        store.close()


def test_the_database_limit_counts_one_client_across_two_servers(servers, smoking_survey):
    first, second = (client_from(app) for app in servers)
    statuses = [submit(first if n % 2 == 0 else second, smoking_survey) for n in range(LIMIT + 4)]
    assert statuses == [201] * LIMIT + [429] * 4, "the limit is counted once for both servers"
    assert submit(client_from(servers[1], "198.51.100.1"), smoking_survey) == 201, "another client is not limited"


def test_the_estimate_slides_and_says_how_long_to_wait(servers, smoking_survey):
    now = [WINDOW * 60.0 + 54]  # 90% into the window
    for app in servers:
        app.extensions["ldp_submission_limiter"].clock = lambda: now[0]
    first, second = (client_from(app) for app in servers)
    assert [submit(first, smoking_survey) for _ in range(LIMIT)] == [201] * LIMIT
    now[0] = WINDOW * 60.0 + 60 + 6  # 10% into the next: 6 × 0.9 of the last window still counts
    refused = second.post(f"/s/{SLUG}/responses", json={"design": smoking_survey["hash"],
                                                          "answers": domain_answers(smoking_survey)})
    assert refused.status_code == 429
    # One more fits once 6 × (1 - f) ≤ 5, at f = 1/6 of the window: 10 s in, 4 s from now.
    assert refused.headers["Retry-After"] == "4" and "Nothing was stored" in refused.get_json()["error"]
    now[0] = WINDOW * 60.0 + 60 + 10.5
    assert submit(first, smoking_survey) == 201
    assert submit(second, smoking_survey) == 429


def test_hashes_rotate_every_window_and_old_windows_are_deleted(servers, db_path, smoking_survey):
    now = [START]
    limiters = [app.extensions["ldp_submission_limiter"] for app in servers]
    for limiter in limiters:
        limiter.clock = lambda: now[0]
    first, second = (client_from(app) for app in servers)
    assert submit(first, smoking_survey) == 201 and submit(second, smoking_survey) == 201
    hashed = limiters[0].client(ADDRESS, WINDOW)
    assert hashed == limiters[1].client(ADDRESS, WINDOW), "every server hashes a client alike"
    assert flood_rows(db_path) == [(hashed, WINDOW, 2)]
    now[0] += 60
    assert submit(second, smoking_survey) == 201
    rehashed = limiters[0].client(ADDRESS, WINDOW + 1)
    assert rehashed != hashed, "the key changes with the window"
    assert flood_rows(db_path) == [(hashed, WINDOW, 2), (rehashed, WINDOW + 1, 1)], "the last window still weighs"
    now[0] += 60
    assert submit(client_from(servers[0], "198.51.100.2"), smoking_survey) == 201
    rows = flood_rows(db_path)
    assert [row[1] for row in rows] == [WINDOW + 1, WINDOW + 2], "a window is deleted once it weighs no more"
    now[0] += 5 * 60
    assert submit(client_from(servers[1], "198.51.100.3"), smoking_survey) == 201
    assert [row[1:] for row in flood_rows(db_path)] == [(WINDOW + 7, 1)]


def test_a_server_start_deletes_the_counts_that_weigh_no_more(servers, db_path, smoking_survey):
    servers[0].extensions["ldp_submission_limiter"].clock = lambda: START
    assert submit(client_from(servers[0]), smoking_survey) == 201
    assert len(flood_rows(db_path)) == 1
    create_app({"TESTING": True, "DATABASE": str(db_path), "FLOOD_STORE": "database"})
    assert flood_rows(db_path) == []


def test_no_table_holds_the_address(servers, db_path, accounts, smoking_survey):
    for app in servers:
        assert submit(client_from(app), smoking_survey) == 201
        guesser = client_from(app)
        token = csrf_token(guesser.get("/login").get_data(as_text=True))
        guess = guesser.post("/login", data={"csrf_token": token, "email": OWNER[0], "password": "guess"})
        assert guess.status_code == 200
    store = Store(db_path)
    try:
        tables = table_names(store)
        values = [str(value) for table in tables for row in store.conn.execute(f'SELECT * FROM "{table}"')
                  for value in row]
    finally:
        store.close()
    assert values and not [value for value in values if ADDRESS in value]
    assert "flood_counts" in tables


# The signing key and the sign-in throttle


def test_a_session_and_csrf_token_of_one_server_are_accepted_by_the_other(servers, accounts):
    first, second = (client_from(app, "198.51.100.20") for app in servers)
    token = csrf_token(first.get("/login").get_data(as_text=True))
    second.set_cookie("session", first.get_cookie("session").value)
    signed_in = second.post("/login", data={"csrf_token": token, "email": OWNER[0], "password": OWNER[1]})
    assert signed_in.status_code == 302, "the CSRF token and the cookie made by the first server"
    first.set_cookie("session", second.get_cookie("session").value)
    assert first.get("/surveys").status_code == 200, "the session made by the second server"


def test_the_sign_in_throttle_counts_wrong_passwords_across_servers(servers, accounts):
    clients = [client_from(app) for app in servers]

    def attempt(n, password):
        client = clients[n % 2]
        token = csrf_token(client.get("/login").get_data(as_text=True))
        return client.post("/login", data={"csrf_token": token, "email": OWNER[0], "password": password}).status_code

    assert [attempt(n, "wrong guess") for n in range(7)] == [200] * 5 + [429] * 2
    assert attempt(0, OWNER[1]) == 429 and attempt(1, OWNER[1]) == 429


def test_the_throttle_key_comes_from_the_secret_key(servers, db_path):
    first, second = (app.extensions["ldp_signin_throttle"] for app in servers)
    assert first.client(ADDRESS) == second.client(ADDRESS)
    other = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "another key " * 4})
    assert other.extensions["ldp_signin_throttle"].client(ADDRESS) != first.client(ADDRESS)


def test_a_database_server_keeps_one_key_in_its_settings(db_path, tmp_path, monkeypatch, caplog):
    Store(db_path).close()
    made = stored_key(str(db_path))
    assert stored_key(str(db_path)) == made and len(made) >= 32, "the stored key is never overwritten"
    store = Store(db_path)
    try:
        assert store.get_setting(SETTING) == made
    finally:
        store.close()
    monkeypatch.delenv(SECRET_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    url = "postgresql://ldp@db.internal/ldp"
    monkeypatch.setattr("survey.web.secret.stored_key", lambda database: made if database == url else None)
    with caplog.at_level(logging.WARNING, logger="survey.web.secret"):
        assert load_secret_key(url) == made
    assert "every backup of it can forge sign-ins" in caplog.text and SECRET_ENV in caplog.text
    assert list(tmp_path.glob("postgres*")) == [], "no key file is made for a URL"
    with pytest.raises(SecretKeyError, match="no key file beside it"):
        key_path(url)
    monkeypatch.setenv(SECRET_ENV, "k" * 40)
    assert load_secret_key(url) == "k" * 40, "the environment comes first"


def test_what_is_a_url_and_where_floods_are_counted(monkeypatch):
    assert is_url("postgresql://u@h/d") and is_url("postgres://h/d")
    assert not is_url("ldp-survey.db") and not is_url("/srv/ldp.db") and not is_url("file:///tmp/x.db?mode=ro")
    monkeypatch.delenv("LDP_SURVEY_FLOOD_STORE", raising=False)
    assert flood_store({"DATABASE": "postgresql://h/d"}) == "database"
    assert flood_store({"DATABASE": "ldp-survey.db"}) == "memory"
    monkeypatch.setenv("LDP_SURVEY_FLOOD_STORE", "database")
    assert flood_store({"DATABASE": "ldp-survey.db"}) == "database"
    assert flood_store({"DATABASE": "postgresql://h/d", "FLOOD_STORE": "memory"}) == "memory"
    monkeypatch.setenv("LDP_SURVEY_FLOOD_STORE", "redis")
    with pytest.raises(FloodStoreError, match="must be memory or database, got 'redis'"):
        flood_store({"DATABASE": "ldp-survey.db"})


def test_each_flood_store_makes_its_limiter(db_path, monkeypatch):
    monkeypatch.delenv("LDP_SURVEY_FLOOD_STORE", raising=False)
    made = {where: create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "k" * 32,
                               "FLOOD_STORE": where}) for where in ("memory", "database")}
    assert isinstance(made["memory"].extensions["ldp_submission_limiter"], SubmissionLimiter)
    assert isinstance(made["database"].extensions["ldp_submission_limiter"], DatabaseLimiter)
    off = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "k" * 32, "FLOOD_STORE": "database",
                      "MAX_SUBMISSIONS_PER_MINUTE": 0})
    assert off.extensions["ldp_submission_limiter"] is None


# Two real servers


def fetch(opener, url, data=None, headers=None):
    body = data if data is None or isinstance(data, bytes) else urllib.parse.urlencode(data).encode()
    request = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.mark.slow
def test_two_real_servers_share_the_flood_limit_the_sessions_and_the_throttle(tmp_path, db_path, accounts,
                                                                                smoking_survey, monkeypatch):
    monkeypatch.delenv(SECRET_ENV, raising=False)
    args = ("--workers", "1", "--flood-store", "database", "--max-submissions-per-minute", str(LIMIT))
    started = [start_server(db_path, tmp_path / f"server-{n}.log", *args) for n in range(2)]
    try:
        origins = [server.origin for server in started]
        plain = urllib.request.build_opener()
        body = json.dumps({"design": smoking_survey["hash"], "answers": domain_answers(smoking_survey)}).encode()
        statuses = [fetch(plain, f"{origins[n % 2]}/s/{SLUG}/responses", body,
                         {"Content-Type": "application/json"})[0] for n in range(LIMIT + 4)]
        assert statuses == [201] * LIMIT + [429] * 4, "submissions alternated between the servers count once"

        # One browser, its cookies sent to both servers (cookies do not depend on the port), as behind a balancer.
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
                                              NoRedirect())
        token = csrf_token(fetch(browser, f"{origins[0]}/login")[1])
        signed_in = fetch(browser, f"{origins[1]}/login",
                          {"csrf_token": token, "email": OWNER[0], "password": OWNER[1]})
        assert signed_in[0] == 302, "the second server takes the first one's cookie and CSRF token"
        assert fetch(browser, f"{origins[0]}/surveys")[0] == 200, "the first server takes the second one's session"
        tables = [fetch(browser, f"{origin}/surveys/{SLUG}/results.csv") for origin in origins]
        assert tables[0] == tables[1] and tables[0][0] == 200, "both dashboards count every response"
        counts = {row["n"] for row in csv.DictReader(io.StringIO(tables[0][1]))}
        assert counts == {str(LIMIT)}, "each server counted the responses sent to the other"

        def wrong_password(n):
            guesser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
            origin = origins[n % 2]
            token = csrf_token(fetch(guesser, f"{origin}/login")[1])
            return fetch(guesser, f"{origin}/login", {"csrf_token": token, "email": OWNER[0], "password": "guess"})[0]

        assert [wrong_password(n) for n in range(7)] == [200] * 5 + [429] * 2, "failures counted across servers"
    finally:
        for server in started:
            assert server.stop() == 0, server.log_text()[-3000:]


def test_serve_refuses_an_unknown_flood_store_in_plain_words(db_path, cli_runner):
    result = cli_runner.invoke(main, ["--db", str(db_path), "serve", "--port", str(free_port())],
                               env={"LDP_SURVEY_FLOOD_STORE": "redis"})
    assert result.exit_code == 1
    assert "Error: the flood store must be memory or database, got 'redis'" in result.stderr
    assert "Traceback" not in result.stderr
