"""Sign-in locks per (account, device) shared across processes, `user unlock`, and collaborators' join links."""

from __future__ import annotations

import datetime as dt
import http.cookiejar
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest
from survey.store import Store

from conftest import OTHER, OWNER, REPO, create_from_toml, definition, start_server

pytestmark = pytest.mark.both_backends

SLUG = "smoking-2026"
ATTACKER = "203.0.113.9"
HOME = "198.51.100.20"
NEWCOMER = ("new@example.org", "a fresh password")
SECOND_TOML = '\nslug = "second"\ntitle = "Second survey"\nepsilon = 1\n\n' + definition("one_yes_no")


def client_from(app, address: str):
    """Return a test client whose requests come from ``address``."""
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def csrf_token(page: str) -> str:
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def post_login(client, email, password):
    token = csrf_token(client.get("/login").get_data(as_text=True))
    return client.post("/login", data={"csrf_token": token, "email": email, "password": password})


def run_cli(db_path, *args, input=None):
    """Run `python -m survey --db DB ...` in its own process, as an administrator would."""
    return subprocess.run([sys.executable, "-m", "survey", "--db", str(db_path), *args], input=input, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)


def lock_out(app, address=ATTACKER, email=OWNER[0]):
    """Send five wrong passwords from ``address``; return a client from there that is now locked out."""
    client = client_from(app, address)
    for _ in range(5):
        assert post_login(client, email, "wrong guess").status_code == 200
    assert post_login(client, email, OWNER[1]).status_code == 429
    return client


def test_twenty_wrong_passwords_from_one_address_do_not_stop_the_owner_elsewhere(app, db_path, accounts):
    attacker = client_from(app, ATTACKER)
    statuses = [post_login(attacker, OWNER[0], f"guess {n}").status_code for n in range(20)]
    assert statuses == [200] * 5 + [429] * 15
    assert post_login(attacker, OWNER[0], OWNER[1]).status_code == 429, "the right password from there waits too"
    owner = client_from(app, HOME)
    response = post_login(owner, OWNER[0], OWNER[1])
    assert response.status_code == 302 and owner.get("/surveys").status_code == 200
    # Another account is not locked from the attacker's address either.
    assert post_login(attacker, OTHER[0], OTHER[1]).status_code == 302
    store = Store(db_path)
    try:
        rows = store.conn.execute("SELECT * FROM sign_in_failures").fetchall()
    finally:
        store.close()
    stored = " ".join(str(value) for row in rows for value in row)
    assert rows and ATTACKER not in stored and OWNER[0] not in stored, "neither an address nor an email is stored"


def test_the_lock_message_says_when_it_ends_and_how_to_unlock(app, accounts):
    throttle = app.extensions["ldp_signin_throttle"]
    start = 1_900_000_000.0
    throttle.clock = lambda: start
    client = lock_out(app)
    throttle.clock = lambda: start + 3 * 60 + 10
    response = post_login(client, OWNER[0], OWNER[1])
    body = response.get_data(as_text=True)
    assert response.status_code == 429 and response.headers["Retry-After"] == str(15 * 60 - 190)
    assert "Too many wrong passwords from this device" in body
    assert "try again in 12 minutes" in body
    assert "<code>ldp-survey user unlock owner@example.org</code>" in body
    throttle.clock = lambda: start + 15 * 60
    assert post_login(client, OWNER[0], OWNER[1]).status_code == 302, "the lock ends when it said"


@pytest.mark.slow
@pytest.mark.parametrize("command", [["user", "unlock", OWNER[0]], ["user", "passwd", OWNER[0]]])
def test_the_cli_clears_a_lock_held_by_the_running_app(app, db_path, accounts, command):
    client = lock_out(app)
    result = run_cli(db_path, *command, input="a brand new password\n")
    assert result.returncode == 0, result.stderr
    password = "a brand new password" if command[1] == "passwd" else OWNER[1]
    if command[1] == "unlock":
        assert "Unlocked owner@example.org" in result.stdout and "1 place" in result.stdout
    else:
        assert "sign-in locks are cleared" in result.stdout
    assert post_login(client, OWNER[0], password).status_code == 302


@pytest.mark.slow
def test_unlock_of_an_account_that_is_not_locked_or_does_not_exist(db_path, accounts):
    quiet = run_cli(db_path, "user", "unlock", OTHER[0])
    assert quiet.returncode == 0 and "was not locked" in quiet.stdout
    missing = run_cli(db_path, "user", "unlock", "ghost@example.org")
    assert missing.returncode == 1 and "no researcher account 'ghost@example.org'" in missing.stderr


def test_the_account_wide_count_stops_spread_guessing_but_not_a_known_device(app, accounts):
    throttle = app.extensions["ldp_signin_throttle"]
    laptop = client_from(app, HOME)
    assert post_login(laptop, OWNER[0], OWNER[1]).status_code == 302  # the owner's own browser, signed in before
    throttle.account_limit = 6
    for n in range(6):
        assert post_login(client_from(app, f"203.0.113.{n}"), OWNER[0], "guess").status_code == 200
    fresh = post_login(client_from(app, "203.0.113.200"), OWNER[0], OWNER[1])
    body = fresh.get_data(as_text=True)
    assert fresh.status_code == 429 and "for this account from many devices" in body
    assert "or from a device you have signed in on before" in body
    # The laptop keeps its cookie after signing out; the lock on strangers does not touch it.
    assert laptop.get_cookie("ldp_known_device") is not None
    assert post_login(laptop, OWNER[0], OWNER[1]).status_code == 302
    forged = client_from(app, "203.0.113.201")
    forged.set_cookie("ldp_known_device", "not-signed")
    assert post_login(forged, OWNER[0], OWNER[1]).status_code == 429


def post_proxied(opener, origin, path, forwarded_for, data=None):
    request = urllib.request.Request(origin + path, headers={"X-Forwarded-For": forwarded_for},
                                     data=urllib.parse.urlencode(data).encode() if data else None)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.mark.slow
def test_behind_a_trusted_proxy_the_forwarded_address_is_the_client(tmp_path, db_path, accounts):
    server = start_server(db_path, tmp_path / "server.log", "--proxies", "1", "--workers", "2")
    try:
        def browser():
            return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()),
                                               NoRedirect())

        def sign_in(opener, forwarded_for, password):
            _, page = post_proxied(opener, server.origin, "/login", forwarded_for)
            return post_proxied(opener, server.origin, "/login", forwarded_for,
                                {"csrf_token": csrf_token(page), "email": OWNER[0], "password": password})[0]

        attacker = browser()
        assert [sign_in(attacker, ATTACKER, "guess") for _ in range(7)] == [200] * 5 + [429] * 2
        assert sign_in(browser(), HOME, OWNER[1]) == 302, "the owner, behind the same proxy, is not locked"
        assert sign_in(browser(), ATTACKER, OWNER[1]) == 429, "a new cookie jar on the locked address is"
    finally:
        assert server.stop() == 0, server.log_text()[-3000:]


# Join links


def owner_page(app, address=HOME):
    client = client_from(app, address)
    assert post_login(client, *OWNER).status_code == 302
    return client


def make_link(owner, email, slug=SLUG) -> str:
    page = owner.get(f"/surveys/{slug}/results").get_data(as_text=True)
    token = re.search(r'id="invite-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    response = owner.post(f"/surveys/{slug}/collaborators/invite", data={"csrf_token": token, "email": email})
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_data(as_text=True)
    assert "shown only this once" in body and 'action="/logout"' in body and csrf_token(body)
    return urllib.parse.urlsplit(re.search(r'<textarea id="join-link"[^>]*>([^<]+)</textarea>', body).group(1)).path


def accept_new(app, path, password=NEWCOMER[1], address="192.0.2.50"):
    client = client_from(app, address)
    page = client.get(path)
    token = csrf_token(page.get_data(as_text=True))
    return client, client.post(path, data={"csrf_token": token, "password": password, "confirm": password})


GENERIC = "This join link does not work"


def test_a_join_link_makes_a_new_account_a_collaborator_of_that_survey_only_once(app, db_path, accounts):
    create_from_toml(db_path, SECOND_TOML)
    store = Store(db_path)
    try:
        store.share("second", OWNER[0])
    finally:
        store.close()
    owner = owner_page(app)
    path = make_link(owner, NEWCOMER[0])
    assert re.fullmatch(r"/join/[A-Za-z0-9_-]{43}", path)
    page = client_from(app, "192.0.2.50").get(path).get_data(as_text=True)
    assert "Smoking" in page and NEWCOMER[0] in page and "Create my account and join" in page
    colleague, done = accept_new(app, path)
    assert done.status_code == 302 and done.headers["Location"] == f"/surveys/{SLUG}/results"
    assert "you now see this survey as a collaborator" in colleague.get(done.headers["Location"]).get_data(as_text=True)
    assert colleague.get("/surveys/second/results").status_code == 404, "access to that survey only"
    assert "Second survey" not in colleague.get("/surveys").get_data(as_text=True)
    again = client_from(app, "192.0.2.51").get(path)
    assert again.status_code == 404 and GENERIC in again.get_data(as_text=True)
    assert "Smoking" not in again.get_data(as_text=True)
    # The colleague's new password works on the sign-in page too; the link is gone from the database.
    assert post_login(client_from(app, "192.0.2.52"), *NEWCOMER).status_code == 302
    store = Store(db_path)
    try:
        assert store.collaborators(SLUG) == [NEWCOMER[0]]
        assert store.conn.execute("SELECT count(*) FROM collaborator_invitations").fetchone()[0] == 0
    finally:
        store.close()


def test_an_existing_account_accepts_by_signing_in(app, accounts):
    owner = owner_page(app)
    path = make_link(owner, OTHER[0].upper())
    other = client_from(app, "192.0.2.60")
    page = other.get(path).get_data(as_text=True)
    assert "Sign in and join" in page and "Type it again" not in page
    wrong = other.post(path, data={"csrf_token": csrf_token(page), "password": "not it"})
    assert wrong.status_code == 200 and "Wrong password for this account" in wrong.get_data(as_text=True)
    done = other.post(path, data={"csrf_token": csrf_token(page), "password": OTHER[1]})
    assert done.status_code == 302 and other.get(f"/surveys/{SLUG}/results").status_code == 200


def test_a_signed_in_invitee_accepts_with_one_button(app, accounts):
    path = make_link(owner_page(app), OTHER[0])
    other = client_from(app, "192.0.2.61")
    assert post_login(other, *OTHER).status_code == 302
    page = other.get(path).get_data(as_text=True)
    assert "Join this survey" in page and 'type="password"' not in page
    assert other.post(path, data={"csrf_token": csrf_token(page)}).status_code == 302
    assert other.get(f"/surveys/{SLUG}/results").status_code == 200


def test_join_links_expire_and_can_be_revoked(app, db_path, accounts, monkeypatch):
    import survey.store.accounts

    owner = owner_page(app)
    first = make_link(owner, NEWCOMER[0])
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert NEWCOMER[0] in page and "works until" in page
    invitation = re.search(r'name="invitation" value="(\d+)"', page).group(1)
    revoke_token = re.search(r'id="revoke-csrf-\d+" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    revoked = owner.post(f"/surveys/{SLUG}/collaborators/revoke",
                         data={"csrf_token": revoke_token, "invitation": invitation}, follow_redirects=True)
    assert f"Revoked the join link for {NEWCOMER[0]}" in revoked.get_data(as_text=True)
    assert client_from(app, "192.0.2.70").get(first).status_code == 404
    second = make_link(owner, NEWCOMER[0])
    replaced_by = make_link(owner, NEWCOMER[0])
    assert client_from(app, "192.0.2.70").get(second).status_code == 404, "a new link replaces the old one"
    real_today = survey.store.today()
    later = (dt.date.fromisoformat(real_today) + dt.timedelta(days=7)).isoformat()
    monkeypatch.setattr(survey.store.accounts, "today", lambda: later)
    assert client_from(app, "192.0.2.70").get(replaced_by).status_code == 200, "it works on its last day"
    monkeypatch.setattr(survey.store.accounts, "today", lambda: (dt.date.fromisoformat(later) + dt.timedelta(days=1)).isoformat())
    expired = client_from(app, "192.0.2.70").get(replaced_by)
    assert expired.status_code == 404 and GENERIC in expired.get_data(as_text=True)


def test_an_unknown_link_names_no_survey(app, accounts):
    for token in ("x", "A" * 43, "A" * 500):
        response = client_from(app, "192.0.2.80").get(f"/join/{token}")
        body = response.get_data(as_text=True)
        assert response.status_code == 404 and GENERIC in body and "Smoking" not in body
        assert response.headers["Cache-Control"] == "no-store"


def test_only_the_owner_makes_or_revokes_join_links(app, db_path, accounts):
    store = Store(db_path)
    try:
        store.share(SLUG, OTHER[0])
    finally:
        store.close()
    collaborator = client_from(app, "192.0.2.90")
    assert post_login(collaborator, *OTHER).status_code == 302
    page = collaborator.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Only the survey's owner can invite collaborators" in page and 'id="invite-csrf"' not in page
    token = csrf_token(page)
    made = collaborator.post(f"/surveys/{SLUG}/collaborators/invite", data={"csrf_token": token, "email": "x@example.org"})
    assert made.status_code == 403 and "owner can invite collaborators" in made.get_data(as_text=True)
    revoked = collaborator.post(f"/surveys/{SLUG}/collaborators/revoke", data={"csrf_token": token, "invitation": "1"})
    assert revoked.status_code == 403
    store = Store(db_path)
    try:
        assert store.conn.execute("SELECT count(*) FROM collaborator_invitations").fetchone()[0] == 0
    finally:
        store.close()


def test_join_links_are_stored_hashed_and_refuse_bad_input(app, db_path, accounts):
    owner = owner_page(app)
    path = make_link(owner, NEWCOMER[0])
    token = path.rsplit("/", 1)[1]
    store = Store(db_path)
    try:
        dump = " ".join(str(value) for row in store.conn.execute("SELECT * FROM collaborator_invitations")
                        for value in row)
    finally:
        store.close()
    assert token not in dump
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    invite_token = re.search(r'id="invite-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    for email, message in ((OWNER[0], "already sees this survey"), ("not an email", "does not look like an email")):
        response = owner.post(f"/surveys/{SLUG}/collaborators/invite", data={"csrf_token": invite_token, "email": email},
                              follow_redirects=True)
        assert message in response.get_data(as_text=True)
    assert owner.post(f"/surveys/{SLUG}/collaborators/invite", data={"email": "x@example.org"}).status_code == 400
    colleague = client_from(app, "192.0.2.95")
    page = colleague.get(path).get_data(as_text=True)
    short = colleague.post(path, data={"csrf_token": csrf_token(page), "password": "short", "confirm": "short"})
    assert short.status_code == 400 and "at least 8" in short.get_data(as_text=True)
    differ = colleague.post(path, data={"csrf_token": csrf_token(page), "password": "long enough 1",
                                        "confirm": "long enough 2"})
    assert differ.status_code == 400 and "The passwords differ" in differ.get_data(as_text=True)
    assert colleague.post(path, data={"password": NEWCOMER[1], "confirm": NEWCOMER[1]}).status_code == 400
    assert client_from(app, "192.0.2.96").get(path).status_code == 200, "refused attempts leave the link working"


def test_a_lock_survives_a_restart_of_the_server(app, db_path, accounts):
    """The counts live in the database under a key derived from SECRET_KEY: a restarted server keeps the lock."""
    from survey.web import create_app

    lock_out(app)
    restarted = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test",
                            "MAX_SUBMISSIONS_PER_MINUTE": 0})
    try:
        response = post_login(client_from(restarted, ATTACKER), *OWNER)
        assert response.status_code == 429 and "Too many wrong passwords from this device" in response.get_data(as_text=True)
        assert post_login(client_from(restarted, HOME), *OWNER).status_code == 302, "only that device is locked"
    finally:
        restarted.extensions["ldp_stores"].close_all()


def test_an_unknown_email_is_refused_without_a_password_hash(app, accounts, monkeypatch):
    import survey.web.auth as auth

    checked = []
    real = auth.check_password_hash

    def counting(stored, password):
        checked.append(stored)
        return real(stored, password)

    monkeypatch.setattr(auth, "check_password_hash", counting)
    client = client_from(app, "192.0.2.30")
    response = post_login(client, "nobody@example.org", "any password")
    assert response.status_code == 200 and "Wrong email or password." in response.get_data(as_text=True)
    assert checked == [], "no hash is computed for an account that does not exist"
    assert post_login(client, OWNER[0], "wrong").status_code == 200 and len(checked) == 1
    assert post_login(client, OWNER[0], OWNER[1]).status_code == 302 and len(checked) == 2


def test_one_address_probes_at_most_twenty_emails_per_window(app, accounts):
    throttle = app.extensions["ldp_signin_throttle"]
    start = 1_900_000_000.0
    throttle.clock = lambda: start
    prober = client_from(app, ATTACKER)
    statuses = [post_login(prober, f"probe{n}@example.org", "x").status_code for n in range(throttle.client_limit)]
    assert statuses == [200] * throttle.client_limit
    refused = post_login(prober, "probe-last@example.org", "x")
    body = refused.get_data(as_text=True)
    assert refused.status_code == 429 and "Too many failed sign-ins from this device, whatever the email" in body
    assert post_login(prober, OWNER[0], OWNER[1]).status_code == 429, "a real account from there waits too"
    assert post_login(client_from(app, HOME), *OWNER).status_code == 302, "other addresses are not affected"
    throttle.clock = lambda: start + throttle.client_window
    assert post_login(prober, OWNER[0], OWNER[1]).status_code == 302, "the count ends with its window"
