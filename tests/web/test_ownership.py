"""A survey belongs to its owner and collaborators; sessions end on sign-out and password change."""

from __future__ import annotations

import re
import stat
import threading

import pytest
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.store import Store, StoreError

from conftest import OTHER, OWNER

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"


def signed_in(app, email, password):
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    response = client.post("/login", data={"csrf_token": token, "email": email, "password": password})
    assert response.status_code == 302, response.get_data(as_text=True)
    return client


# A value for every argument a survey's rule can take (a new argument fails with a KeyError here); an
# argument that takes one of a list (``<any(svg, png):fmt>``) takes the first.
ROUTE_VALUES = {"slug": SLUG, "question": "smoker", "session_id": "1"}


def _route_value(match) -> str:
    choices, name = match.group(1), match.group(2)
    return choices.split(",")[0].strip() if choices else ROUTE_VALUES[name]


def survey_routes(app):
    """Yield (rule, method, path) for every rule of the URL map that names a survey, outside the respondent pages."""
    for rule in app.url_map.iter_rules():
        if "slug" not in rule.arguments or rule.rule.startswith("/s/"):
            continue
        path = re.sub(r"<(?:any\(([^)]*)\):|[^<>:]+:)?(\w+)>", _route_value, rule.rule)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            yield rule.rule, method, path


def api_headers(db_path, email) -> dict:
    """Return the Authorization header of a new API token of the researcher."""
    store = Store(db_path)
    try:
        return {"Authorization": f"Bearer {store.create_token(email)[1]}"}
    finally:
        store.close()


def test_every_survey_route_is_404_for_another_researcher_and_sign_in_for_nobody(app, db_path, accounts):
    routes = list(survey_routes(app))
    assert {rule for rule, _, _ in routes} >= {"/api/surveys/<slug>/results", "/api/surveys/<slug>/crosstab",
                                               "/api/surveys/<slug>/codebook", "/api/surveys/<slug>/responses",
                                               "/api/surveys/<slug>/responses.csv", "/api/surveys/<slug>/results.xlsx"}
    # The API (/api/...) takes a token, never the session: 401 without one, 404 with another researcher's.
    mine, theirs = api_headers(db_path, OWNER[0]), api_headers(db_path, OTHER[0])
    assert {rule for rule, _, _ in routes} >= {"/surveys/<slug>/results", "/surveys/<slug>/results.csv",
                                               "/surveys/<slug>/responses.csv", "/surveys/<slug>/chart.svg",
                                               "/surveys/<slug>/charts/<question>.<any(svg, png):fmt>",
                                               "/surveys/<slug>/codebook.json", "/surveys/<slug>/results.xlsx",
                                               "/surveys/<slug>/responses.<any(sav, dta):fmt>",
                                               "/surveys/<slug>/results.<any(sav, dta):fmt>",
                                               "/surveys/<slug>/package.zip"}
    owner, other, nobody = signed_in(app, *OWNER), signed_in(app, *OTHER), app.test_client()
    for rule, method, path in routes:
        if rule.startswith("/api/"):
            assert owner.open(path, method=method, headers=mine).status_code != 404, (rule, method)
            response = other.open(path, method=method, headers=theirs)
            assert response.status_code == 404 and response.json == {"error": "not found"}, (rule, method)
            for client in (nobody, owner):  # the owner's session cookie is no API credential
                anonymous = client.open(path, method=method)
                assert anonymous.status_code == 401 and anonymous.is_json, (rule, method)
                assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
            continue
        assert owner.open(path, method=method).status_code != 404, (rule, method)
        response = other.open(path, method=method)
        assert response.status_code == 404, (rule, method, response.status_code)
        assert "Smoking" not in response.get_data(as_text=True)
        anonymous = nobody.open(path, method=method)
        assert anonymous.status_code == 302 and anonymous.headers["Location"].startswith("/login"), (rule, method)
    # A survey that does not exist answers exactly like one the researcher may not see.
    assert other.get("/surveys/nope/results").status_code == 404
    assert "Smoking" in owner.get("/surveys").get_data(as_text=True)
    assert "Smoking" not in other.get("/surveys").get_data(as_text=True)


def test_a_collaborator_sees_the_survey(app, db_path, accounts):
    store = Store(db_path)
    try:
        assert store.share(SLUG, OTHER[0]) == "collaborator"
        assert store.collaborators(SLUG) == [OTHER[0]]
    finally:
        store.close()
    other = signed_in(app, *OTHER)
    assert other.get(f"/surveys/{SLUG}/results").status_code == 200
    assert "Smoking" in other.get("/surveys").get_data(as_text=True)


def test_a_survey_without_an_owner_is_visible_to_no_one_until_shared(app, db_path, smoking_survey):
    store = Store(db_path)
    try:
        store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
    finally:
        store.close()
    client = signed_in(app, *OWNER)
    assert client.get(f"/surveys/{SLUG}/results").status_code == 404
    store = Store(db_path)
    try:
        assert store.share(SLUG, OWNER[0]) == "owner"
        with pytest.raises(StoreError, match="no researcher account"):
            store.share(SLUG, "ghost@example.org")
    finally:
        store.close()
    assert client.get(f"/surveys/{SLUG}/results").status_code == 200


def logout(client):
    page = client.get("/surveys").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302


def test_signing_out_ends_every_session_of_the_account_and_a_copied_cookie(app, accounts):
    laptop, phone = signed_in(app, *OWNER), signed_in(app, *OWNER)
    copied = app.test_client()
    cookie = laptop.get_cookie("session")
    copied.set_cookie("session", cookie.value)
    assert copied.get("/surveys").status_code == 200
    logout(laptop)
    for client in (laptop, phone, copied):
        response = client.get(f"/surveys/{SLUG}/results")
        assert response.status_code == 302 and response.headers["Location"].startswith("/login")
    assert signed_in(app, *OWNER).get("/surveys").status_code == 200


def test_a_new_password_ends_every_earlier_session(app, db_path, accounts, cli_runner):
    client = signed_in(app, *OWNER)
    result = cli_runner.invoke(main, ["--db", str(db_path), "user", "passwd", OWNER[0]], input="a new password\n")
    assert result.exit_code == 0, result.output
    assert client.get("/surveys").status_code == 302
    assert signed_in(app, OWNER[0], "a new password").get("/surveys").status_code == 200


def test_parallel_guesses_are_counted_exactly(app, accounts):
    throttle = app.extensions["ldp_signin_throttle"]
    barrier = threading.Barrier(40)
    allowed = []

    def guess():
        barrier.wait()
        allowed.append(throttle.attempt(OWNER[0], "192.0.2.7") is None)

    threads = [threading.Thread(target=guess) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(allowed) == throttle.limit and len(allowed) == 40
    assert throttle.attempt(OWNER[0], "192.0.2.7").seconds > 0


@pytest.mark.sqlite_only
def test_the_database_and_the_signing_key_are_readable_only_by_their_owner(app, db_path, accounts):
    from survey.web.secret import key_path

    assert stat.S_IMODE(db_path.stat().st_mode) == 0o600
    key_file = key_path(str(db_path))
    assert key_file.exists() is False  # the test app is given its key
    from survey.web import create_app

    create_app({"TESTING": True, "DATABASE": str(db_path)}).extensions["ldp_stores"].close_all()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    store = Store(db_path)
    try:
        assert store.get_setting("secret_key") is None
        assert key not in "".join(str(row) for row in store.conn.execute("SELECT * FROM settings"))
    finally:
        store.close()
    again = create_app({"TESTING": True, "DATABASE": str(db_path)})
    assert again.config["SECRET_KEY"] == key
    again.extensions["ldp_stores"].close_all()


def test_cli_owner_share_and_accounts(cli_runner, tmp_path, smoking_toml):
    db = str(tmp_path / "cli.db")

    def run(*args, input=None):
        return cli_runner.invoke(main, ["--db", db, *args], input=input)

    assert run("user", "add", OWNER[0], input="password one\n").exit_code == 0
    assert run("user", "add", OTHER[0], input="password two\n").exit_code == 0
    missing = run("create", str(smoking_toml), "--owner", "ghost@example.org")
    assert missing.exit_code == 1 and "no researcher account 'ghost@example.org'" in missing.stderr
    created = run("create", str(smoking_toml), "--owner", OWNER[0])
    assert created.exit_code == 0 and "No owner" not in created.stdout
    shared = run("share", SLUG, OTHER[0])
    assert shared.exit_code == 0 and "collaborator" in shared.stdout
    listing = run("user", "list").stdout
    assert re.search(r"owner@example.org\s+since \S+\s+owns 1", listing)
    assert run("user", "remove", OWNER[0], "--yes").exit_code == 0
    store = Store(db)
    try:
        assert store.list_surveys()[0]["owner"] is None
        assert [s["slug"] for s in store.list_surveys(user_id=store.get_user(OTHER[0])["id"])] == [SLUG]
    finally:
        store.close()
    unknown = run("share", "nope", OTHER[0])
    assert unknown.exit_code == 1 and unknown.stderr.startswith("Error: no survey with slug 'nope'")


def test_the_dashboard_adds_a_collaborator(app, accounts):
    owner, other = signed_in(app, *OWNER), signed_in(app, *OTHER)
    assert other.get(f"/surveys/{SLUG}/results").status_code == 404
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    token = re.search(r'id="invite-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    missing = owner.post(f"/surveys/{SLUG}/share", data={"csrf_token": token, "email": "ghost@example.org"},
                         follow_redirects=True)
    assert "no researcher account" in missing.get_data(as_text=True)
    done = owner.post(f"/surveys/{SLUG}/share", data={"csrf_token": token, "email": OTHER[0]}, follow_redirects=True)
    assert "now sees this survey as a collaborator" in done.get_data(as_text=True)
    assert OTHER[0] in owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert other.get(f"/surveys/{SLUG}/results").status_code == 200
    assert owner.post(f"/surveys/{SLUG}/share", data={"email": OTHER[0]}).status_code == 400


def test_every_researcher_route_without_a_slug_requires_sign_in(app, accounts):
    """Routes such as /surveys/new and /surveys/build name no survey, yet still need a signed-in researcher."""
    nobody = app.test_client()
    rules = [rule for rule in app.url_map.iter_rules()
             if rule.rule.startswith(("/surveys", "/account")) and not rule.arguments]
    assert {rule.rule for rule in rules} >= {"/surveys", "/surveys/new", "/surveys/build",
                                            "/surveys/build/import", "/surveys/build/preview.json"}
    app.config["WTF_CSRF_ENABLED"] = False  # reach the view: the CSRF check would answer 400 first
    for rule in rules:
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            response = nobody.open(rule.rule, method=method)
            if rule.rule.endswith(".json"):
                assert response.status_code == 401 and response.is_json, (rule.rule, method)
            else:
                assert response.status_code == 302 and response.headers["Location"].startswith("/login"), (
                    rule.rule, method, response.status_code)


MALLORY = ("mallory@example.org", "mallory password")
VICTIM = ("victim@example.org", "victim password")


def remove_account(db_path, email: str) -> int:
    """Remove an account as `ldp-survey user remove` does; return the id it had."""
    store = Store(db_path)
    try:
        user_id = store.get_user(email)["id"]
        store.remove_user(email)
    finally:
        store.close()
    return user_id


def add_account(db_path, email: str, password: str) -> dict:
    store = Store(db_path)
    try:
        store.add_user(email, generate_password_hash(password, method="pbkdf2:sha256:1000"))
        return store.get_user(email)
    finally:
        store.close()


def signed_in_then_removed(app, db_path):
    """Sign mallory in and make her an API token; remove her; return (her old cookie's client, token header, id)."""
    add_account(db_path, *MALLORY)
    mallory = signed_in(app, *MALLORY)
    headers = api_headers(db_path, MALLORY[0])
    assert mallory.get("/surveys").status_code == 200
    assert app.test_client().get("/api/surveys", headers=headers).status_code == 200
    cookie = mallory.get_cookie("session").value
    old_id = remove_account(db_path, MALLORY[0])
    assert mallory.get("/surveys").status_code == 302
    stale = app.test_client()
    stale.set_cookie("session", cookie)
    return stale, headers, old_id


def test_a_removed_accounts_cookie_and_token_never_work_for_the_next_account(app, db_path, backend, accounts):
    stale, headers, old_id = signed_in_then_removed(app, db_path)
    victim = add_account(db_path, *VICTIM)
    if backend == "sqlite":
        assert victim["id"] == old_id, "SQLite gives the removed id to the next account: the case under test"
    for path in ("/surveys", "/account/tokens"):
        response = stale.get(path)
        assert response.status_code == 302 and response.headers["Location"].startswith("/login"), path
    assert app.test_client().get("/api/surveys", headers=headers).status_code == 401
    assert signed_in(app, *VICTIM).get("/surveys").status_code == 200


def test_a_removed_accounts_cookie_gets_nothing_of_a_collaborator_who_joined_after(app, db_path, backend, accounts):
    owner = signed_in(app, *OWNER)
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    csrf = re.search(r'id="invite-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    made = owner.post(f"/surveys/{SLUG}/collaborators/invite", data={"csrf_token": csrf, "email": VICTIM[0]})
    path = re.search(r'<textarea id="join-link"[^>]*>[^<]*?(/join/[A-Za-z0-9_-]+)</textarea>',
                     made.get_data(as_text=True)).group(1)
    stale, headers, old_id = signed_in_then_removed(app, db_path)
    colleague = app.test_client()
    join_csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', colleague.get(path).get_data(as_text=True)).group(1)
    assert colleague.post(path, data={"csrf_token": join_csrf, "password": VICTIM[1], "confirm": VICTIM[1]}).status_code == 302
    assert colleague.get(f"/surveys/{SLUG}/responses.csv").status_code == 200
    store = Store(db_path)
    try:
        joined = store.get_user(VICTIM[0])
    finally:
        store.close()
    if backend == "sqlite":
        assert joined["id"] == old_id
    assert stale.get(f"/surveys/{SLUG}/responses.csv").status_code == 302
    token_page = stale.get("/account/tokens")
    assert token_page.status_code == 302
    app.config["WTF_CSRF_ENABLED"] = False  # even past CSRF protection, the stale cookie makes no token
    assert stale.post("/account/tokens", data={"label": "kept"}).status_code == 302
    store = Store(db_path)
    try:
        assert store.list_tokens(joined["id"]) == []
    finally:
        store.close()
    assert app.test_client().get(f"/api/surveys/{SLUG}/results", headers=headers).status_code == 401


def test_session_keys_rotate_and_tokens_survive_only_what_they_should(db_path, accounts):
    store = Store(db_path)
    try:
        first = store.get_user(OWNER[0])
        _, token = store.create_token(OWNER[0])
        assert len(first["session_key"]) == 64 and first["session_key"] != first["token_key"]
        assert first["session_key"] != store.get_user(OTHER[0])["session_key"]
        store.end_sessions(first["id"])
        signed_out = store.get_user(OWNER[0])
        store.set_password(OWNER[0], generate_password_hash("another password", method="pbkdf2:sha256:1000"))
        changed = store.get_user(OWNER[0])
        store.add_user(OWNER[0], generate_password_hash("third password", method="pbkdf2:sha256:1000"), replace=True)
        replaced = store.get_user(OWNER[0])
        keys = [first["session_key"], signed_out["session_key"], changed["session_key"], replaced["session_key"]]
        assert len(set(keys)) == 4, "sign-out, a new password and `user add --replace` each end every session"
        assert replaced["token_key"] == first["token_key"]
        assert store.user_for_token(token)["id"] == first["id"], "a token lives until revoked or its account is removed"
        # A token row whose key is not its account's (an id given to another account) is refused.
        store.conn.execute("UPDATE api_tokens SET token_key = ?", ["0" * 64])
        assert store.user_for_token(token) is None
    finally:
        store.close()


@pytest.mark.sqlite_only
def test_an_existing_database_gets_a_fresh_random_key_per_account(db_path):
    import sqlite_utils
    from survey.store.schema import migrations

    db = sqlite_utils.Database(db_path)
    migrations.apply(db, stop_before="m013_account_keys")
    for email in (OWNER[0], OTHER[0]):
        db["users"].insert({"email": email, "password_hash": generate_password_hash("x", method="pbkdf2:sha256:1000"),
                            "created_day": "2026-11-01"})
    db.execute("INSERT INTO api_tokens (user_id, token_hash, label, created_day) VALUES (1, ?, 'old', '2026-11-01')",
               [__import__("survey.store", fromlist=["token_hash"]).token_hash("ldps_old-token")])
    db.conn.commit()
    db.close()
    store = Store(db_path)
    try:
        owner, other = store.get_user(OWNER[0]), store.get_user(OTHER[0])
        keys = {owner["session_key"], owner["token_key"], other["session_key"], other["token_key"]}
        assert len(keys) == 4 and all(re.fullmatch(r"[0-9a-f]{64}", key) for key in keys)
        assert store.user_for_token("ldps_old-token")["email"] == OWNER[0], "tokens made before keep working"
    finally:
        store.close()


def test_only_the_owner_adds_collaborators(app, db_path, accounts):
    add_account(db_path, *VICTIM)
    store = Store(db_path)
    try:
        store.share(SLUG, OTHER[0])
    finally:
        store.close()
    collaborator = signed_in(app, *OTHER)
    page = collaborator.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    refused = collaborator.post(f"/surveys/{SLUG}/share", data={"csrf_token": token, "email": VICTIM[0]})
    assert refused.status_code == 403 and "owner can add collaborators" in refused.get_data(as_text=True)
    stranger = signed_in(app, *VICTIM)
    assert stranger.post(f"/surveys/{SLUG}/share", data={"csrf_token": token, "email": VICTIM[0]}).status_code == 404
    store = Store(db_path)
    try:
        assert store.collaborators(SLUG) == [OTHER[0]]
    finally:
        store.close()


def test_a_removed_collaborator_gets_nothing_of_a_kept_version(app, db_path, accounts, smoking_toml):
    """SLUG.v1 answers a collaborator removed from SLUG as a stranger: its pages, its API routes and the API list."""
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design

    text = re.sub(r"^epsilon = .*$", "epsilon = 1", smoking_toml.read_text(encoding="utf-8"), count=1, flags=re.M)
    store = Store(db_path)
    try:
        store.share(SLUG, OTHER[0])
        store.new_version(SLUG, text, build_design(parse_definition_toml(text)))
        headers = {"Authorization": f"Bearer {store.create_token(OTHER[0])[1]}"}
        owner = store.get_user(OWNER[0])["id"]
        store.remove_collaborator(SLUG, owner, OTHER[0])
    finally:
        store.close()
    other = signed_in(app, *OTHER)
    assert other.get(f"/surveys/{SLUG}.v1/results").status_code == 404
    assert other.get(f"/api/surveys/{SLUG}.v1/responses.csv", headers=headers).status_code == 404
    assert other.get("/api/surveys", headers=headers).get_json()["surveys"] == []


def _versioned_with_people(db_path, smoking_toml) -> dict:
    """Make SLUG.v1, then give SLUG a collaborator and a pending join link; return every row on who sees what."""
    from survey.core.definition import parse_definition_toml
    from survey.core.design import build_design

    text = re.sub(r"^epsilon = .*$", "epsilon = 1", smoking_toml.read_text(encoding="utf-8"), count=1, flags=re.M)
    store = Store(db_path)
    try:
        store.new_version(SLUG, text, build_design(parse_definition_toml(text)))
        store.add_user(VICTIM[0], generate_password_hash(VICTIM[1], method="pbkdf2:sha256:1000"))
        store.share(SLUG, OTHER[0])  # after the version was made: SLUG's people now, never copied
        store.invite_collaborator(SLUG, store.get_user(OWNER[0])["id"], VICTIM[0])
        return _who_sees(store)
    finally:
        store.close()


def _who_sees(store) -> dict:
    return {"owners": store._execute("SELECT slug, owner_id FROM surveys ORDER BY slug").fetchall(),
            "collaborators": store._execute("SELECT survey, user_id FROM collaborators ORDER BY survey, user_id").fetchall(),
            "join_links": store._execute("SELECT id, survey, email FROM collaborator_invitations ORDER BY id").fetchall()}


def test_a_kept_versions_people_section_lists_its_surveys_people_read_only(app, db_path, accounts, smoking_toml):
    _versioned_with_people(db_path, smoking_toml)
    page = signed_in(app, *OWNER).get(f"/surveys/{SLUG}.v1/results").get_data(as_text=True)
    section = re.search(r'<section id="people".*?</section>', page, flags=re.S).group(0)
    assert "Who sees this version" in section and OWNER[0] in section and OTHER[0] in section
    assert re.search(r"Who sees this version follows\s+<a href=\"/surveys/" + SLUG + r"/results#people\">"
                     + SLUG + r"</a>:\s+manage people there\.", section), section
    assert "<form" not in section and "/collaborators/" not in page and f"/surveys/{SLUG}.v1/share" not in page
    # Deleting the version alone takes no one's access; deleting SLUG takes its collaborator's.
    owner = signed_in(app, *OWNER)
    assert "the access of" not in owner.get(f"/surveys/{SLUG}.v1/delete").get_data(as_text=True)
    assert "the access of 1 collaborator" in owner.get(f"/surveys/{SLUG}/delete").get_data(as_text=True)


def test_every_people_action_on_a_kept_version_is_refused_and_changes_nothing(app, db_path, accounts, smoking_toml):
    import html

    before = _versioned_with_people(db_path, smoking_toml)
    owner = signed_in(app, *OWNER)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"',
                      owner.get(f"/surveys/{SLUG}.v1/results").get_data(as_text=True)).group(1)
    posts = {"collaborators/invite": ({"email": VICTIM[0]}, "invite collaborators"),
             "collaborators/revoke": ({"invitation": before["join_links"][0][0]}, "revoke join links"),
             "collaborators/remove": ({"email": OTHER[0], "confirmed": "yes"}, "remove collaborators"),
             "collaborators/transfer": ({"email": OTHER[0], "confirmed": "yes"}, "hand ownership over"),
             "share": ({"email": VICTIM[0]}, "share it")}
    for action, (data, what) in posts.items():
        response = owner.post(f"/surveys/{SLUG}.v1/{action}", data={"csrf_token": token, **data})
        assert response.status_code == 302 and response.headers["Location"].endswith(f"/surveys/{SLUG}.v1/results#people")
        shown = html.unescape(owner.get(response.headers["Location"]).get_data(as_text=True))
        assert (f"'{SLUG}.v1' is an earlier version of '{SLUG}', and who sees it follows '{SLUG}': "
                f"{what} on '{SLUG}' instead") in shown, action
    # Unconfirmed, remove and transfer are refused before their confirmation page.
    unconfirmed = owner.post(f"/surveys/{SLUG}.v1/collaborators/remove", data={"csrf_token": token, "email": OTHER[0]})
    assert unconfirmed.status_code == 302
    store = Store(db_path)
    try:
        assert _who_sees(store) == before
    finally:
        store.close()


def test_the_command_line_refuses_to_share_a_kept_version(db_path, accounts, smoking_toml, cli_runner):
    before = _versioned_with_people(db_path, smoking_toml)
    result = cli_runner.invoke(main, ["--db", str(db_path), "share", f"{SLUG}.v1", VICTIM[0]])
    assert result.exit_code == 1 and result.exception is not None and "Traceback" not in result.output
    assert f"who sees it follows '{SLUG}': share it on '{SLUG}' instead" in result.output
    store = Store(db_path)
    try:
        assert _who_sees(store) == before
    finally:
        store.close()
