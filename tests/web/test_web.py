"""Web tests: the respondent API validates every report and stores nothing from a rejected request."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import flask
import pytest
from flask.sessions import NullSession
from werkzeug.security import generate_password_hash

from survey.core.aggregate import CSV_HEADER
from survey.store import Store
from conftest import OWNER, stored_count, table_columns, table_names

pytestmark = pytest.mark.both_backends

REPO = Path(__file__).resolve().parents[2]
SLUG = "smoking-2026"
GOOD = {"smoker": 1, "lung_disease": 0, "cigarettes": [0, 0, 1, 1, 0], "age": 1}


def post(client, body, **kwargs):
    """POST a submission as the respondent page does: JSON, no cookie, no token."""
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(f"/s/{SLUG}/responses", data=data,
                       content_type=kwargs.pop("content_type", "application/json"), **kwargs)



@pytest.fixture
def web(client, smoking_survey):
    """Return a test client of the app (CSRF on) with the smoking survey created."""
    return client


def test_valid_response_is_stored_with_only_the_day(web, db_path, smoking_survey):
    response = post(web, {"design": smoking_survey["hash"], "answers": GOOD})
    assert response.status_code == 201, response.get_data(as_text=True)
    assert stored_count(db_path, SLUG) == 1
    store = Store(db_path)
    table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = ?", [SLUG]).fetchone()[0]
    columns = set(table_columns(store, table))
    every_column = {name for other in table_names(store) for name in table_columns(store, other)}
    rows = list(store.iter_responses(SLUG))
    store.close()
    assert columns == {"id", "received_day", "q0_0", "q1_0", "q2_0", "q3_0"}
    assert not every_column & {"ip", "ip_address", "user_agent", "received_at", "created_at", "timestamp", "token"}
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", rows[0]["received_day"])
    assert rows[0]["answers"] == GOOD


def test_multi_and_oue_reports_are_lists(db_path, tmp_path):
    from survey.core.definition import parse_definition
    from survey.core.design import build_design
    from survey.web import create_app

    design = build_design(parse_definition({
        "slug": "wide", "title": "Wide", "epsilon": 0.5, "release_every": 1,
        "questions": [{"id": "pick", "kind": "choice", "text": "Pick",
                       "options": [f"o{i}" for i in range(12)]},
                      {"id": "tick", "kind": "multi", "text": "Tick", "options": ["a", "b", "c"]}]}))
    pick, tick = design["questions"]
    assert (pick["mechanism"], pick["subset_size"], tick["mechanism"]) == ("ss", 5, "sampled")
    store = Store(db_path)
    store.create_survey("", design)
    store.close()
    client = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "t",
                         "WTF_CSRF_ENABLED": False}).test_client()
    subset = [0] * 7 + [1] * 5
    for report in ([0, 0, 0], [0, 1, 0]):
        good = {"design": design["hash"], "answers": {"pick": subset, "tick": report}}
        assert client.post("/s/wide/responses", json=good).status_code == 201
    assert stored_count(db_path, "wide") == 2
    for pick_report, tick_report, field in (([0] * 11, [1, 0, 0], "pick"), ([0] * 10 + [1, 1], [1, 0, 0], "pick"),
                                            (subset, [1, 2, 1], "tick"), (subset, [1, 0, 1], "tick")):
        bad = {"design": design["hash"], "answers": {"pick": pick_report, "tick": tick_report}}
        response = client.post("/s/wide/responses", json=bad)
        assert response.status_code == 400 and response.json["field"] == field
    assert stored_count(db_path, "wide") == 2


BAD_BODIES = [
    ("out of domain yes_no", {"answers": {**GOOD, "smoker": 2}}, 400, "smoker"),
    ("option index for a subset", {"answers": {**GOOD, "cigarettes": 2}}, 400, "cigarettes"),
    ("subset of the wrong size", {"answers": {**GOOD, "cigarettes": [0, 1, 1, 1, 0]}}, 400, "cigarettes"),
    ("empty subset", {"answers": {**GOOD, "cigarettes": [0, 0, 0, 0, 0]}}, 400, "cigarettes"),
    ("subset bit out of domain", {"answers": {**GOOD, "cigarettes": [0, 2, 0, 0, 0]}}, 400, "cigarettes"),
    ("subset too short", {"answers": {**GOOD, "cigarettes": [1, 1]}}, 400, "cigarettes"),
    ("true number sent", {"answers": {**GOOD, "age": 42}}, 400, "age"),
    ("missing answer", {"answers": {k: v for k, v in GOOD.items() if k != "age"}}, 400, "age"),
    ("extra answer", {"answers": {**GOOD, "income": 1}}, 400, "income"),
    ("string report", {"answers": {**GOOD, "smoker": "1"}}, 400, "smoker"),
    ("boolean report", {"answers": {**GOOD, "smoker": True}}, 400, "smoker"),
    ("float report", {"answers": {**GOOD, "smoker": 1.0}}, 400, "smoker"),
    ("list for a scalar", {"answers": {**GOOD, "smoker": [1]}}, 400, "smoker"),
    ("answers not an object", {"answers": [1, 0, 2, 1]}, 400, "answers"),
    ("extra top-level key", {"answers": GOOD, "ip": "1.2.3.4"}, 400, "ip"),
    ("stale design hash", {"design": "0" * 64, "answers": GOOD}, 409, "design"),
]


@pytest.mark.parametrize("name,body,status,field", BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_reports_are_rejected_and_nothing_is_stored(web, db_path, smoking_survey, name, body, status, field):
    body = {"design": smoking_survey["hash"], **body}
    response = post(web, body)
    assert response.status_code == status
    assert response.is_json and response.json["field"] == field and response.json["error"]
    assert stored_count(db_path, SLUG) == 0


@pytest.mark.parametrize("raw", [b"not json", b'{"design": NaN}', b"\xff\xfe", b"[]",
                                 b'{"design": "x", "design": "y", "answers": {}}'])
def test_malformed_bodies_are_rejected(web, db_path, smoking_survey, raw):
    response = post(web, raw)
    assert response.status_code == 400 and response.is_json and response.json["error"]
    assert stored_count(db_path, SLUG) == 0


def test_duplicate_answer_keys_are_rejected(web, db_path, smoking_survey):
    raw = ('{"design": "%s", "answers": {"smoker": 1, "smoker": 0, "lung_disease": 0, '
           '"cigarettes": [0, 0, 1, 1, 0], "age": 1}}' % smoking_survey["hash"])
    response = post(web, raw)
    assert response.status_code == 400 and response.json["field"] == "smoker"
    assert stored_count(db_path, SLUG) == 0


def test_non_json_content_type_is_rejected(web, db_path, smoking_survey):
    body = json.dumps({"design": smoking_survey["hash"], "answers": GOOD})
    response = post(web, body, content_type="text/plain")
    assert response.status_code == 400 and response.is_json
    assert stored_count(db_path, SLUG) == 0


def test_the_respondent_page_and_a_submission_set_no_cookie(web, db_path, smoking_survey):
    page = web.get(f"/s/{SLUG}")
    assert "Set-Cookie" not in page.headers and "csrf" not in page.get_data(as_text=True)
    response = post(web, {"design": smoking_survey["hash"], "answers": GOOD})
    assert response.status_code == 201 and "Set-Cookie" not in response.headers
    assert stored_count(db_path, SLUG) == 1


def test_a_submission_neither_reads_nor_sets_the_session(web, db_path, smoking_survey):
    """A researcher's browser answering a survey sends its session cookie: the submission ignores it (NullSession)."""
    with web.session_transaction() as session:
        session["user_id"] = 1
    response = post(web, {"design": smoking_survey["hash"], "answers": GOOD})
    assert response.status_code == 201 and "Set-Cookie" not in response.headers
    assert "Cookie" not in response.headers.get("Vary", "")
    assert stored_count(db_path, SLUG) == 1


@pytest.mark.parametrize("path, without", [(f"/s/{SLUG}/responses", True), ("/api/surveys", True),
                                           (f"/s/{SLUG}", False), ("/surveys", False), ("/login", False)])
def test_submissions_and_the_api_run_without_a_session(app, path, without):
    with app.test_request_context(path, method="POST"):
        assert isinstance(flask.session._get_current_object(), NullSession) == without


def test_a_browser_request_from_another_site_is_refused(web, db_path, smoking_survey):
    body = {"design": smoking_survey["hash"], "answers": GOOD}
    for site in ("cross-site", "same-site"):
        response = post(web, body, headers={"Sec-Fetch-Site": site})
        assert response.status_code == 403 and response.is_json and response.json["field"] is None
    assert stored_count(db_path, SLUG) == 0
    for site in ("same-origin", "none"):
        assert post(web, body, headers={"Sec-Fetch-Site": site}).status_code == 201
    assert stored_count(db_path, SLUG) == 2


def test_a_submission_works_over_https_where_the_page_sends_no_referrer(app, smoking_survey, db_path):
    client = app.test_client()
    body = json.dumps({"design": smoking_survey["hash"], "answers": GOOD})
    response = client.post(f"/s/{SLUG}/responses", data=body, content_type="application/json",
                           base_url="https://localhost", headers={"Sec-Fetch-Site": "same-origin"})
    assert response.status_code == 201, response.get_data(as_text=True)
    assert stored_count(db_path, SLUG) == 1


def test_oversized_body_is_rejected(web, db_path, smoking_survey):
    body = json.dumps({"design": smoking_survey["hash"], "answers": GOOD, "pad": "x" * 70_000})
    response = post(web, body)
    assert response.status_code == 413 and response.is_json
    assert stored_count(db_path, SLUG) == 0


def test_unknown_survey_is_404(web):
    assert web.get("/s/no-such-survey").status_code == 404
    assert web.get("/s/no-such-survey/design.json").status_code == 404


def test_design_json_is_public_and_complete(web, smoking_survey):
    design = web.get(f"/s/{SLUG}/design.json").json
    assert design == smoking_survey
    assert set(design) >= {"hash", "epsilon", "allocation", "questions"}
    mechanisms = {q["id"]: q["mechanism"] for q in design["questions"]}
    assert mechanisms == {"smoker": "rr", "lung_disease": "rr", "cigarettes": "ss", "age": "duchi"}
    assert sum(q["epsilon"] for q in design["questions"]) <= design["epsilon"]


def test_respondent_page_inputs_have_no_name(web, smoking_survey):
    html = web.get(f"/s/{SLUG}").get_data(as_text=True)
    inputs = re.findall(r"<(?:input|select|textarea)\b[^>]*>", html)
    assert inputs, "the page has answer inputs"
    assert not [tag for tag in inputs if re.search(r"\sname=", tag)]
    assert "<noscript>" in html
    assert not re.search(r'(?:src|href)="(?:https?:)?//', html), "no third-party resources"


def test_security_headers(web, smoking_survey):
    response = web.get(f"/s/{SLUG}")
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert web.get("/login").headers["Referrer-Policy"] == "same-origin"


def test_a_researcher_signs_in_over_https_behind_a_proxy(app, accounts):
    """Over HTTPS CSRF protection needs a same-origin Referer, which the same-origin policy lets the browser send."""
    from werkzeug.middleware.proxy_fix import ProxyFix

    app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1)
    client = app.test_client()
    proxy = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
    page = client.get("/login", headers=proxy).get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    email, password = OWNER
    form = {"csrf_token": token, "email": email, "password": password}
    refused = client.post("/login", data=form, headers=proxy)
    assert refused.status_code == 400, "without a Referer the HTTPS check refuses, as a no-referrer policy would"
    signed_in = client.post("/login", data=form, headers={**proxy, "Referer": "https://localhost/login"})
    assert signed_in.status_code == 302 and signed_in.headers["Location"].endswith("/surveys")


def test_respondent_page_links_every_module_it_runs_each_served_as_javascript(web, smoking_survey):
    html = web.get(f"/s/{SLUG}").get_data(as_text=True)
    linked = re.findall(r'<a href="/static/js/([\w./-]+\.js)">', html)
    client_js = REPO / "client_js"
    design = json.loads(web.get(f"/s/{SLUG}/design.json").get_data(as_text=True))
    registry = (client_js / "mechanisms" / "index.js").read_text(encoding="utf-8")
    used = set()
    for path in (client_js / "mechanisms").glob("*.js"):
        declared = re.search(r"kind: '(\w+)',\s*name: '(\w+)',", path.read_text(encoding="utf-8"))
        if declared and (declared.group(1), declared.group(2)) in {(q["kind"], q["mechanism"]) for q in design["questions"]}:
            used.add(f"mechanisms/{path.name}")
    assert linked[0] == "respond.js" and len(linked) == len(set(linked))
    assert used and used <= set(linked), "every mechanism module the survey uses is listed for the respondent"
    assert {"mechanisms/index.js", "mechanisms/common.js"} <= set(linked) and "./opm.js" in registry
    assert "mechanisms/opm.js" not in linked, "a mechanism the survey does not use is neither sent nor listed"
    scripts = re.findall(r'<script type="module" src="(/static/js/page/respond\.js\?[^"]+)"></script>', html)
    assert len(scripts) == 1 and html.count("<script type=\"module\"") == 1, "one script: the modules joined"
    joined = web.get(scripts[0].replace("&amp;", "&")).get_data(as_text=True)
    assert sorted(re.findall(r'^define\("([\w./-]+\.js)"', joined, re.M)) == sorted(linked)
    for name in linked:
        served = web.get(f"/static/js/{name}")
        text = served.get_data(as_text=True)
        served.close()
        assert served.status_code == 200 and served.mimetype == "text/javascript", name
        assert text == (client_js / name).read_text(encoding="utf-8"), name


RESEARCHER_ROUTES = ["/surveys", f"/surveys/{SLUG}/results", f"/surveys/{SLUG}/results.csv",
                     f"/surveys/{SLUG}/responses.csv", f"/surveys/{SLUG}/chart.svg",
                     f"/surveys/{SLUG}/charts/smoker.svg", f"/surveys/{SLUG}/codebook.json"]


@pytest.mark.parametrize("path", RESEARCHER_ROUTES)
def test_researcher_routes_redirect_to_login(web, smoking_survey, path):
    response = web.get(path)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login")


@pytest.fixture
def researcher(db_path, smoking_survey):
    store = Store(db_path)
    store.add_user("r@example.org", generate_password_hash("correct horse"))
    store.share(SLUG, "r@example.org")
    store.close()
    return "r@example.org", "correct horse"


def login(client, email, password, next_path=None):
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    url = "/login" + (f"?next={next_path}" if next_path else "")
    return client.post(url, data={"csrf_token": token, "email": email, "password": password})


def test_login_wrong_password_stays_out(web, researcher):
    response = login(web, researcher[0], "wrong password")
    assert response.status_code == 200 and "Wrong email or password" in response.get_data(as_text=True)
    assert web.get("/surveys").status_code == 302


def test_login_rejects_offsite_next(web, researcher):
    response = login(web, *researcher, next_path="//evil.example/")
    assert response.status_code == 302 and response.headers["Location"] == "/surveys"


def test_dashboard_and_exports_after_login(web, researcher, db_path, smoking_survey):
    store = Store(db_path)
    store.add_responses(SLUG, smoking_survey["hash"], [GOOD, {**GOOD, "smoker": 0}])
    store.close()
    response = login(web, *researcher, next_path=f"/surveys/{SLUG}/results")
    assert response.status_code == 302 and response.headers["Location"] == f"/surveys/{SLUG}/results"

    listing = web.get("/surveys").get_data(as_text=True)
    assert "Smoking and lung health" in listing
    page = web.get(f"/surveys/{SLUG}/results")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "Clopper" in html and "cigarettes" in html and "more than 20" in html

    chart = web.get(f"/surveys/{SLUG}/chart.svg")
    assert chart.status_code == 200 and chart.mimetype == "image/svg+xml"
    assert chart.get_data(as_text=True).lstrip().startswith("<?xml")

    aggregates = web.get(f"/surveys/{SLUG}/results.csv")
    assert aggregates.mimetype == "text/csv"
    rows = list(csv.reader(io.StringIO(aggregates.get_data(as_text=True))))
    assert rows[0] == CSV_HEADER
    assert len(rows) == 1 + 1 + 1 + 5 + 1

    responses = web.get(f"/surveys/{SLUG}/responses.csv")
    assert responses.is_streamed
    rows = list(csv.reader(io.StringIO(responses.get_data(as_text=True))))
    assert len(rows) == 3
    assert sorted(row[2:] for row in rows[1:]) == [["0", "0", "0", "0", "1", "1", "0", "1"], ["1", "0", "0", "0", "1", "1", "0", "1"]]
    assert rows[0][:2] == ["response_id", "received_day"]

    assert web.get(f"/surveys/{SLUG}/results?level=2").status_code == 400

    book = web.get(f"/surveys/{SLUG}/codebook.json")
    assert book.status_code == 200 and book.mimetype == "application/json"
    assert book.headers["Cache-Control"] == "no-store"
    data = book.get_json()
    assert data["survey"] == SLUG and data["design_hash"] == smoking_survey["hash"]
    assert [column["name"] for column in data["columns"]] == rows[0][2:]
    assert [(e["question"], e["option"]) for e in data["estimands"]] == [
        (row[0], row[1]) for row in csv.reader(io.StringIO(aggregates.get_data(as_text=True)))][1:]


def test_logout_requires_post_with_token(web, researcher):
    login(web, *researcher)
    assert web.get("/surveys").status_code == 200
    page = web.get("/surveys").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert web.post("/logout", data={"csrf_token": token}).status_code == 302
    assert web.get("/surveys").status_code == 302


def test_design_is_frozen_once_a_response_exists(db_path, smoking_survey):
    from survey.store import StoreError

    store = Store(db_path)
    store.add_response(SLUG, smoking_survey["hash"], GOOD)
    with pytest.raises(StoreError, match="frozen"):
        store.create_survey("", {**smoking_survey, "hash": "changed"}, replace=True)
    assert store.get_design(SLUG)["hash"] == smoking_survey["hash"]
    store.close()


def test_dashboard_of_a_survey_without_responses(web, researcher):
    login(web, *researcher)
    page = web.get(f"/surveys/{SLUG}/results")
    assert page.status_code == 200 and "0 responses" in page.get_data(as_text=True)
    assert web.get(f"/surveys/{SLUG}/chart.svg").status_code == 200
    rows = list(csv.reader(io.StringIO(web.get(f"/surveys/{SLUG}/results.csv").get_data(as_text=True))))
    assert rows[1][CSV_HEADER.index("n")] == "0" and rows[1][CSV_HEADER.index("estimate")] == ""


def test_results_follow_new_responses(web, researcher, db_path, smoking_survey):
    login(web, *researcher)

    def smoker_row():
        text = web.get(f"/surveys/{SLUG}/results.csv").get_data(as_text=True)
        return next(row for row in csv.reader(io.StringIO(text)) if row[0] == "smoker")

    store = Store(db_path)
    store.add_responses(SLUG, smoking_survey["hash"], [GOOD] * 3)
    first = smoker_row()
    assert smoker_row() == first
    store.add_responses(SLUG, smoking_survey["hash"], [{**GOOD, "smoker": 0}] * 3)
    store.close()
    second = smoker_row()
    n = CSV_HEADER.index("n")
    share = CSV_HEADER.index("noisy_share")
    assert (first[n], second[n]) == ("3", "6")
    assert (first[share], second[share]) == ("1.000000", "0.500000")


def test_repeated_failed_sign_ins_are_throttled(web, researcher):
    for _ in range(5):
        assert login(web, researcher[0], "wrong password").status_code == 200
    response = login(web, *researcher)
    body = response.get_data(as_text=True)
    assert response.status_code == 429 and "Too many wrong passwords from this device" in body
    assert 0 < int(response.headers["Retry-After"]) <= 900
    assert web.get("/surveys").status_code == 302


def test_sign_in_throttle_window(tmp_path):
    from survey.web.db import ThreadStores
    from survey.web.throttle import SignInThrottle

    Store(tmp_path / "t.db").close()
    stores = ThreadStores(str(tmp_path / "t.db"))
    now = [1000.0]
    throttle = SignInThrottle(stores, "test key", limit=2, window=60, clock=lambda: now[0])
    try:
        assert throttle.attempt("A@x.org", "10.0.0.1") is None
        assert throttle.attempt("a@x.org ", "10.0.0.1") is None
        assert throttle.attempt("a@x.org", "10.0.0.1").seconds == 60
        assert throttle.attempt("a@x.org", "10.0.0.2") is None, "another client is not locked"
        now[0] = 1030
        lock = throttle.attempt("a@x.org", "10.0.0.1")
        assert lock.seconds == 30 and lock.this_device and lock.minutes == 1
        now[0] = 1060.5
        assert throttle.attempt("a@x.org", "10.0.0.1") is None
        throttle.succeed("a@x.org", "10.0.0.1")
        assert throttle.attempt("a@x.org", "10.0.0.1") is None
        assert throttle.attempt("a@x.org", "10.0.0.1") is None
        assert throttle.attempt("a@x.org", "10.0.0.1") is not None
    finally:
        stores.close_all()


def test_dashboard_shows_question_text_responses_per_day_and_an_empty_state(web, db_path, researcher):
    login(web, *researcher)
    empty = web.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "No responses yet" in empty and "Responses per day" not in empty
    store = Store(db_path)
    design = store.get_design(SLUG)
    store.add_response(SLUG, design["hash"], GOOD, day="2026-11-20")
    store.add_responses(SLUG, design["hash"], [GOOD, GOOD], day="2026-11-21")
    store.close()
    html = web.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "No responses yet" not in html
    assert "Do you smoke tobacco at least once a week?" in html
    days = re.findall(r'<tr><th scope="row">(\d{4}-\d{2}-\d{2})</th><td class="num">(\d+)</td></tr>', html)
    assert days == [("2026-11-20", "1"), ("2026-11-21", "2")]


LEVEL_SURVEY = {
    "slug": "income", "title": "Income", "epsilon": 4.0, "release_every": 1,
    "questions": [{"id": "smoker", "kind": "yes_no", "text": "Smoke?", "weight": 1},
                  {"id": "income", "kind": "number", "text": "Income?", "min": 0, "max": 250, "weight": 3}]}


def level_design(mechanism: str) -> dict:
    """Return the design of LEVEL_SURVEY with its number under ``mechanism``.

    The definition asks for the hybrid (or the optimal piecewise) mechanism at this share; a piecewise
    design is what surveys created before the hybrid hold, frozen, and must keep working.
    """
    from survey.core.definition import parse_definition
    from survey.core.design import build_design, design_hash
    from survey.core.mechanisms import piecewise as mech

    forced = "opm" if mechanism == "opm" else "hybrid"
    income = {**LEVEL_SURVEY["questions"][1], "mechanism": forced}
    design = build_design(parse_definition({**LEVEL_SURVEY, "questions": [LEVEL_SURVEY["questions"][0], income]}))
    assert design["questions"][1]["mechanism"] == forced
    if mechanism == "piecewise":
        question = {key: value for key, value in design["questions"][1].items() if key != "levels"}
        a, b = mech.piecewise_ratio(epsilon=question["epsilon_nominal"])
        question.update(mechanism="piecewise", ratio_a=a, ratio_b=b, bins=a + b,
                        epsilon=float(mech.piecewise_epsilon(a, b)))
        design = {**design, "questions": [design["questions"][0], question]}
        design["hash"] = design_hash(design)
    return design


@pytest.fixture(params=["hybrid", "piecewise", "opm"])
def level_client(db_path, request):
    """Return (client with CSRF off, design) of a survey whose number reports a level (hybrid, piecewise or opm)."""
    from survey.web import create_app

    design = level_design(request.param)
    store = Store(db_path)
    store.create_survey("", design)
    store.close()
    client = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "t",
                         "WTF_CSRF_ENABLED": False}).test_client()
    return client, design


def _level_scores(question: dict) -> list[int]:
    from survey.core.mechanisms.hybrid import hybrid_scores

    if question["mechanism"] == "hybrid":
        return hybrid_scores(question["ratio_a"], question["ratio_b"])
    return list(range(question.get("bins") or question["levels"]))


def test_levels_are_stored_and_tallied(level_client, db_path):
    client, design = level_client
    question = design["questions"][1]
    top = (question.get("levels") or question["bins"]) - 1
    sent = (0, top, min(7, top - 2), top - 1)
    for level in sent:
        reply = client.post("/s/income/responses", json={"design": design["hash"],
                                                         "answers": {"smoker": 1, "income": level}})
        assert reply.status_code == 201, reply.get_data(as_text=True)
    scores = _level_scores(question)
    store = Store(db_path)
    try:
        counts = store.question_counts("income")
        assert counts["income"] == (4, [sum(scores[k] for k in sent), sum(scores[k] ** 2 for k in sent)])
        assert counts == store.recount("income")
        assert sorted(r["answers"]["income"] for r in store.iter_responses("income")) == sorted(sent)
    finally:
        store.close()


@pytest.mark.parametrize("report", ["top", -1, 1.5, "3", True, [1], None])
def test_report_outside_the_levels_is_refused_and_nothing_stored(level_client, db_path, report):
    client, design = level_client
    question = design["questions"][1]
    levels = (question.get("levels") or question["bins"])
    value = levels if report == "top" else report
    reply = client.post("/s/income/responses", json={"design": design["hash"],
                                                     "answers": {"smoker": 1, "income": value}})
    assert reply.status_code == 400 and reply.is_json and reply.json["field"] == "income"
    assert f"an output level from 0 to {levels - 1}" in reply.json["error"] or report is None
    store = Store(db_path)
    try:
        assert store.response_count("income") == 0
        assert store.question_counts("income")["income"] == (0, [0, 0])
    finally:
        store.close()


def test_results_and_exports_of_a_level_number(level_client, client, db_path):
    _, design = level_client
    question = design["questions"][1]
    sent = [3, (question.get("bins") or question["levels"]) - 1, (question.get("levels") or question["bins"]) - 1]
    store = Store(db_path)
    store.add_user("pw@example.org", generate_password_hash("correct horse battery"))
    store.share("income", "pw@example.org")
    store.add_responses("income", design["hash"], [{"smoker": 1, "income": level} for level in sent])
    store.close()
    login(client, "pw@example.org", "correct horse battery")
    html = client.get("/surveys/income/results").get_data(as_text=True)
    assert "the hybrid or the optimal piecewise mechanism" in html and "Student’s t" in html
    rows = list(csv.DictReader(io.StringIO(client.get("/surveys/income/results.csv").get_data(as_text=True))))
    income = rows[-1]
    assert (income["question"], income["mechanism"], income["n"]) == ("income", question["mechanism"], "3")
    assert 0 <= float(income["ci_low"]) <= float(income["ci_high"]) <= 250
    responses = list(csv.reader(io.StringIO(client.get("/surveys/income/responses.csv").get_data(as_text=True))))
    assert sorted(int(row[3]) for row in responses[1:]) == sorted(sent)
