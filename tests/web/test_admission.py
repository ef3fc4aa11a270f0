"""Each respondent counts once: idempotent submission ids, single-use invitations, the flood limit (web and CLI)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.core.definition import DefinitionError, parse_definition_toml
from survey.core.design import build_design
from survey.store import Store, SubmissionConflict, SurveyClosed
from survey.web import create_app
from survey.web.flood import SubmissionLimiter

from conftest import PANEL_TOML, create_from_toml, domain_answers, smoking_design, stored_count

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
# Reports in each question's output domain (cigarettes is a subset selection: a list of bits).
GOOD = domain_answers(smoking_design(), smoker=1, lung_disease=0, cigarettes=2, age=1)
OTHER = {**GOOD, "smoker": 0}
ID = "0123456789abcdef0123456789abcdef"


def post(client, body, slug=SLUG):
    """POST a submission as the respondent page does: JSON, no cookie, no token."""
    return client.post(f"/s/{slug}/responses", data=json.dumps(body), content_type="application/json")



@pytest.fixture
def panel(db_path, smoking_survey):
    """Create the invitation-only panel survey; return its design."""
    return create_from_toml(db_path, PANEL_TOML)


def invitations(db_path, n, slug="panel") -> list[str]:
    store = Store(db_path)
    try:
        return store.create_invitations(slug, n)
    finally:
        store.close()


# Submission ids


def test_a_repeat_with_the_same_id_and_answers_is_stored_once_and_answered_alike(client, db_path, smoking_survey):
    body = {"design": smoking_survey["hash"], "answers": GOOD, "submission": ID}
    first, again = post(client, body), post(client, body)
    assert (first.status_code, again.status_code) == (201, 201)
    assert first.get_data() == again.get_data()
    assert stored_count(db_path, SLUG) == 1


def test_the_same_id_with_other_answers_is_409_and_stores_nothing(client, db_path, smoking_survey):
    assert post(client, {"design": smoking_survey["hash"], "answers": GOOD, "submission": ID}).status_code == 201
    response = post(client, {"design": smoking_survey["hash"], "answers": OTHER, "submission": ID})
    assert response.status_code == 409 and response.get_json()["field"] == "submission"
    assert stored_count(db_path, SLUG) == 1
    store = Store(db_path)
    assert [*store.iter_answers(SLUG)] == [GOOD]
    store.close()


def test_different_ids_are_different_respondents(client, db_path, smoking_survey):
    for submission in (ID, "f" * 32):
        assert post(client, {"design": smoking_survey["hash"], "answers": GOOD, "submission": submission}).status_code == 201
    assert stored_count(db_path, SLUG) == 2


def test_a_new_id_to_a_closed_survey_stores_neither_the_response_nor_the_id(db_path, smoking_survey):
    """The browser's submission is one statement (admission.submit): a refusal undoes all of it; a retry still answers alike."""
    store = Store(db_path)
    try:
        assert store.add_submission(SLUG, smoking_survey["hash"], GOOD, submission=ID) is True
        store.close_survey(SLUG)
        with pytest.raises(SurveyClosed):
            store.add_submission(SLUG, smoking_survey["hash"], GOOD, submission="f" * 32)
        assert store.add_submission(SLUG, smoking_survey["hash"], GOOD, submission=ID) is False
        with pytest.raises(SubmissionConflict):
            store.add_submission(SLUG, smoking_survey["hash"], OTHER, submission=ID)
        store.reopen_survey(SLUG)
        assert store.add_submission(SLUG, smoking_survey["hash"], GOOD, submission="f" * 32) is True
        assert store.received_count(SLUG) == 2
    finally:
        store.close()


@pytest.mark.parametrize("bad", ["0123", ID.upper(), ID + "0", 12345, None, "g" * 32])
def test_a_malformed_submission_id_is_400_naming_the_field(client, db_path, smoking_survey, bad):
    body = {"design": smoking_survey["hash"], "answers": GOOD, "submission": bad}
    if bad is None:
        body = {"design": smoking_survey["hash"], "answers": GOOD}
        assert post(client, body).status_code == 201
        return
    response = post(client, body)
    assert response.status_code == 400 and response.get_json()["field"] == "submission"
    assert stored_count(db_path, SLUG) == 0


def test_the_submission_id_is_kept_apart_from_the_response(client, db_path, smoking_survey):
    post(client, {"design": smoking_survey["hash"], "answers": GOOD, "submission": ID})
    store = Store(db_path)
    try:
        stored = store.conn.execute("SELECT * FROM submissions").fetchall()
        table = store.conn.execute("SELECT reports_table FROM surveys WHERE slug = ?", [SLUG]).fetchone()[0]
        report_values = {value for row in store.conn.execute(f'SELECT * FROM "{table}"') for value in row}
    finally:
        store.close()
    assert len(stored) == 1
    assert ID not in json.dumps(stored), "only hashes of the id are stored"
    assert not {value for row in stored for value in row} & report_values


# Invitations


def test_an_invitation_admits_one_response_then_409(client, db_path, panel):
    [token_text] = invitations(db_path, 1)
    page = client.get(f"/s/panel?invite={token_text}").get_data(as_text=True)
    assert f'data-invite="{token_text}"' in page and 'id="invite-needed"' not in page
    body = {"design": panel["hash"], "answers": {"remote": 1}, "invite": token_text, "submission": ID}
    assert post(client, body, "panel").status_code == 201
    again = post(client, {**body, "submission": "e" * 32}, "panel")
    assert again.status_code == 409 and again.get_json()["field"] == "invite"
    assert stored_count(db_path, "panel") == 1


def test_a_lost_201_of_an_invited_send_is_retried_safely(client, db_path, panel):
    [token_text] = invitations(db_path, 1)
    body = {"design": panel["hash"], "answers": {"remote": 0}, "invite": token_text, "submission": ID}
    assert [post(client, body, "panel").status_code for _ in range(2)] == [201, 201]
    assert stored_count(db_path, "panel") == 1


@pytest.mark.parametrize("invite", [None, "A" * 22, "not a token", 7])
def test_a_missing_or_unknown_invitation_is_403_and_stores_nothing(client, db_path, panel, invite):
    invitations(db_path, 3)
    body = {"design": panel["hash"], "answers": {"remote": 1}}
    if invite is not None:
        body["invite"] = invite
    response = post(client, body, "panel")
    assert response.status_code == 403 and response.get_json()["field"] == "invite"
    assert stored_count(db_path, "panel") == 0


def test_an_invitation_of_another_survey_is_403(client, db_path, panel):
    other = PANEL_TOML.replace('slug = "panel"', 'slug = "panel-b"')
    store = Store(db_path)
    store.create_survey(other, build_design(parse_definition_toml(other)))
    store.close()
    [token_text] = invitations(db_path, 1, "panel-b")
    body = {"design": panel["hash"], "answers": {"remote": 1}, "invite": token_text}
    assert post(client, body, "panel").status_code == 403
    assert stored_count(db_path, "panel") == 0


def test_an_open_survey_takes_no_invitation(client, db_path, smoking_survey):
    body = {"design": smoking_survey["hash"], "answers": GOOD, "invite": "A" * 22}
    response = post(client, body)
    assert response.status_code == 400 and response.get_json()["field"] == "invite"
    assert stored_count(db_path, SLUG) == 0


def invitation_notice(client, query: str) -> str | None:
    """Return the id of the invitation notice the panel's page shows for ``query``, checking it has no form then."""
    page = client.get(f"/s/panel{query}").get_data(as_text=True)
    found = re.findall(r'<p id="(invite-[a-z]+)"', page)
    assert len(found) <= 1
    if found:
        assert "<form" not in page and "respond.js" not in page, "no form and no script to answer with"
    else:
        assert '<form id="survey-form"' in page and "respond.js" in page
    return found[0] if found else None


def test_the_page_says_on_load_when_an_invitation_is_missing_unknown_or_used(client, db_path, panel):
    [used, fresh] = invitations(db_path, 2)
    body = {"design": panel["hash"], "answers": {"remote": 1}, "invite": used}
    assert post(client, body, "panel").status_code == 201
    assert invitation_notice(client, "") == "invite-needed"
    for bad in ("?invite=", "?invite=" + "A" * 22, "?invite=not%20a%20token", "?invite=%C3%A9" * 11,
                "?invite=" + "A" * 200):
        assert invitation_notice(client, bad) == ("invite-needed" if bad == "?invite=" else "invite-unknown"), bad
    assert invitation_notice(client, f"?invite={used}") == "invite-used"
    assert invitation_notice(client, f"?invite={fresh}") is None


def test_looking_at_the_page_does_not_use_the_invitation(client, db_path, panel):
    [token_text] = invitations(db_path, 1)
    for _ in range(3):
        assert invitation_notice(client, f"?invite={token_text}") is None
    store = Store(db_path)
    assert store.invitation_counts("panel") == (1, 0) and store.invitation_status("panel", token_text) == "unused"
    store.close()
    body = {"design": panel["hash"], "answers": {"remote": 1}, "invite": token_text}
    assert post(client, body, "panel").status_code == 201


def test_a_token_of_another_survey_is_unknown_on_the_page(client, db_path, panel):
    other = PANEL_TOML.replace('slug = "panel"', 'slug = "panel-b"')
    store = Store(db_path)
    store.create_survey(other, build_design(parse_definition_toml(other)))
    store.close()
    [token_text] = invitations(db_path, 1, "panel-b")
    assert invitation_notice(client, f"?invite={token_text}") == "invite-unknown"


def test_a_closed_invitation_only_survey_says_it_is_closed_whatever_the_token(client, db_path, panel):
    [token_text] = invitations(db_path, 1)
    store = Store(db_path)
    store.close_survey("panel")
    store.close()
    for query in ("", f"?invite={token_text}", "?invite=" + "A" * 22):
        page = client.get(f"/s/panel{query}").get_data(as_text=True)
        assert 'id="survey-closed"' in page and "invite-" not in page and "<form" not in page


def test_a_survey_open_to_anyone_refuses_invitations_in_the_store(db_path, smoking_survey):
    store = Store(db_path)
    try:
        with pytest.raises(Exception, match="access = \"invite\""):
            store.create_invitations(SLUG, 3)
    finally:
        store.close()


def test_cli_create_says_how_to_make_invitations(cli_runner, db_path, tmp_path):
    path = tmp_path / "panel.toml"
    path.write_text(PANEL_TOML.replace('access = "invite"', 'access = "invite"\nseries = "staff"'), encoding="utf-8")
    result = cli_runner.invoke(main, ["--db", str(db_path), "create", str(path)])
    assert result.exit_code == 0, result.output
    assert "ldp-survey invite panel --count N" in result.stdout and "Series staff" in result.stdout


def test_cli_invite_prints_one_link_per_line(cli_runner, db_path, panel):
    result = cli_runner.invoke(main, ["--db", str(db_path), "invite", "panel", "--count", "5",
                                      "--base", "https://surveys.example.org/"])
    assert result.exit_code == 0, result.output
    links = result.stdout.splitlines()
    assert len(links) == 5 and len(set(links)) == 5
    assert all(re.fullmatch(r"https://surveys\.example\.org/s/panel\?invite=[A-Za-z0-9_-]{22}", link) for link in links)
    store = Store(db_path)
    assert store.invitation_counts("panel") == (5, 0)
    stored = {row[0] for row in store.conn.execute("SELECT token_hash FROM invitations")}
    store.close()
    assert not any(link.rsplit("=", 1)[1] in stored for link in links), "only hashes are stored"


@pytest.mark.parametrize("args, message", [
    (["invite", "smoking-2026", "--count", "2"], 'access = "invite"'),
    (["invite", "panel", "--count", "2", "--base", "ftp://x"], "http:// or https://"),
    (["invite", "nope", "--count", "2"], "no survey"),
    (["invite", "panel", "--count", "0"], "0"),
])
def test_cli_invite_errors_are_one_clear_line(cli_runner, db_path, panel, args, message):
    result = cli_runner.invoke(main, ["--db", str(db_path), *args])
    assert result.exit_code != 0 and message in result.output
    assert "Traceback" not in result.output


def login(client, email, password):
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    return client.post("/login", data={"csrf_token": token, "email": email, "password": password})


def dashboard_token(client, slug):
    page = client.get(f"/surveys/{slug}/results").get_data(as_text=True)
    return re.search(r'id="invitations-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def test_the_dashboard_makes_invitation_links_as_csv_for_the_owner_only(app, db_path, panel):
    store = Store(db_path)
    for email in ("owner@example.org", "other@example.org"):
        store.add_user(email, generate_password_hash("a password"))
    store.share("panel", "owner@example.org")
    store.close()
    owner, other = app.test_client(), app.test_client()
    login(owner, "owner@example.org", "a password")
    login(other, "other@example.org", "a password")
    token = dashboard_token(owner, "panel")

    response = owner.post("/surveys/panel/invitations.csv", data={"csrf_token": token, "count": "4"})
    assert response.status_code == 200 and response.mimetype == "text/csv"
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    assert rows[0] == ["link"] and len(rows) == 5
    assert all(re.fullmatch(r"http://localhost/s/panel\?invite=[A-Za-z0-9_-]{22}", row[0]) for row in rows[1:])
    assert "4 made, 0 used" in owner.get("/surveys/panel/results").get_data(as_text=True)

    assert owner.post("/surveys/panel/invitations.csv", data={"count": "4"}).status_code == 400
    assert other.post("/surveys/panel/invitations.csv", data={"csrf_token": token, "count": "4"}).status_code == 404
    store = Store(db_path)
    assert store.invitation_counts("panel") == (4, 0)
    store.close()


# Definitions


def test_access_and_series_are_validated_and_enter_the_design_only_when_set(smoking_toml):
    text = smoking_toml.read_text(encoding="utf-8")
    plain = build_design(parse_definition_toml(text))
    assert "access" not in plain and "series" not in plain
    head = 'access = "invite"\nseries = "smoking-waves"\n'
    design = build_design(parse_definition_toml(head + text))
    assert design["access"] == "invite" and design["series"] == "smoking-waves"
    assert design["hash"] != plain["hash"]
    with pytest.raises(DefinitionError, match="access"):
        parse_definition_toml('access = "closed"\n' + text)
    with pytest.raises(DefinitionError, match="series"):
        parse_definition_toml('series = "two words"\n' + text)


# Errors of the submission endpoint are JSON


def test_a_get_of_the_submission_endpoint_is_a_405_json_error(client, smoking_survey):
    response = client.get(f"/s/{SLUG}/responses")
    assert response.status_code == 405 and response.is_json and response.get_json()["error"]


# Flooding


def test_the_limiter_refills_at_the_rate_and_keeps_clients_apart():
    now = [0.0]
    limiter = SubmissionLimiter(3, clock=lambda: now[0])
    assert [limiter.take("10.0.0.1") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("10.0.0.1") == pytest.approx(20.0)
    assert limiter.take("10.0.0.2") == 0.0
    now[0] = 20.0
    assert limiter.take("10.0.0.1") == 0.0
    assert limiter.take("10.0.0.1") > 0
    assert limiter.holds("10.0.0.1") and limiter.holds("10.0.0.2") and not limiter.holds("10.0.0.3")
    assert limiter._table.find(b"10.0.0.1") == -1, "addresses are kept only as keyed hashes"


def test_a_full_table_shares_buckets_so_the_limit_only_gets_stricter():
    now = [0.0]
    limiter = SubmissionLimiter(2, clock=lambda: now[0], slots=8)
    clients = [f"10.0.1.{i}" for i in range(40)]
    allowed = sum(limiter.take(client) == 0.0 for client in clients for _ in range(3))
    assert allowed == 8 * 2, "40 clients in 8 slots: each slot gives out its 2, shared or not, never more"
    now[0] = 60.0
    assert limiter.take("10.0.9.9") == 0.0, "an idle bucket is reused for a new client"


@pytest.mark.parametrize("per_minute, slots", [(0, 8), (True, 8), (1.5, 8), (3, 4)])
def test_the_limiter_names_a_bad_setting(per_minute, slots):
    with pytest.raises(ValueError, match="must be"):
        SubmissionLimiter(per_minute, slots=slots)


@pytest.fixture
def limited_app(db_path, smoking_survey):
    """The app with a flood limit of 5 submissions a minute per client."""
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test",
                      "MAX_SUBMISSIONS_PER_MINUTE": 5})
    yield app
    app.extensions["ldp_stores"].close_all()


def test_a_flood_from_one_client_gets_429_beyond_the_limit_and_stores_nothing_of_it(limited_app, db_path,
                                                                                    smoking_survey, backend):
    client = limited_app.test_client()
    statuses = [post(client, {"design": smoking_survey["hash"], "answers": GOOD}) for _ in range(9)]
    assert [r.status_code for r in statuses] == [201] * 5 + [429] * 4
    refused = statuses[-1]
    assert refused.is_json and "Nothing was stored" in refused.get_json()["error"]
    # The memory limit (SQLite's default) refills a token bucket within a minute; the database limit
    # (PostgreSQL's) weighs the previous minute's count in too, so a full minute waits at most two.
    assert 1 <= int(refused.headers["Retry-After"]) <= (60 if backend == "sqlite" else 120)
    assert stored_count(db_path, SLUG) == 5
    other = limited_app.test_client()
    response = other.post(f"/s/{SLUG}/responses", data=json.dumps({"design": smoking_survey["hash"], "answers": GOOD}),
                          content_type="application/json",
                          environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert response.status_code == 201, "another client address is not limited"


@pytest.mark.parametrize("proxies", [0, 1])
def test_the_flood_limit_trusts_x_forwarded_for_only_behind_configured_proxies(db_path, smoking_survey, proxies):
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test",
                      "MAX_SUBMISSIONS_PER_MINUTE": 2, "PROXIES": proxies})
    try:
        client = app.test_client()
        body = json.dumps({"design": smoking_survey["hash"], "answers": GOOD})

        def send(forwarded_for):
            return client.post(f"/s/{SLUG}/responses", data=body, content_type="application/json",
                               headers={"X-Forwarded-For": forwarded_for},
                               environ_base={"REMOTE_ADDR": "10.0.0.1"}).status_code

        # Three clients behind one proxy (10.0.0.1), two submissions each.
        statuses = [send(client_address) for client_address in ["198.51.100.1", "198.51.100.2", "198.51.100.3"] * 2]
        if proxies:
            assert statuses == [201] * 6, "each client behind the proxy has its own limit"
        else:
            assert statuses == [201, 201] + [429] * 4, "a forged X-Forwarded-For does not escape the limit"
        assert stored_count(db_path, SLUG) == statuses.count(201)
    finally:
        app.extensions["ldp_stores"].close_all()
