"""Accounts a researcher manages: their own password, reset links, collaborators and cancelled invitation links."""

from __future__ import annotations

import re
import time
import urllib.parse

import pytest
from survey.store import Store
from survey.web.log_privacy import scrub

import werkzeug.security

from conftest import OTHER, OWNER, PANEL_TOML, PRODUCT_PASSWORD_HASH_DEFAULTS, create_from_toml
from smtp_server import mail_settings, smtp_server
from test_accounts import client_from, csrf_token, lock_out, post_login


def run_cli(db_path, *args, input=None):
    """Run `ldp-survey --db DB ...` in this process (faster than a new one); return the click Result."""
    from click.testing import CliRunner
    from survey.cli import main

    return CliRunner().invoke(main, ["--db", str(db_path), *args], input=input)

# The tests of what the store keeps run on both backends; the pages' own checks on SQLite only.
both_backends = pytest.mark.both_backends

SLUG = "smoking-2026"
NEW = "a brand new password"


def signed_in(app, account=OWNER, address="198.51.100.20"):
    """Return a test client signed in as ``account`` from ``address``."""
    client = client_from(app, address)
    assert post_login(client, *account).status_code == 302
    return client


def change_password(client, current, new, again=None):
    token = csrf_token(client.get("/account/password").get_data(as_text=True))
    return client.post("/account/password", data={"csrf_token": token, "current": current, "password": new,
                                                  "confirm": new if again is None else again})


def sees_surveys(client) -> bool:
    """Return whether the client is signed in (the survey list answers, not a redirect to sign in)."""
    return client.get("/surveys").status_code == 200


@both_backends
def test_changing_the_password_signs_out_other_sessions_and_clears_the_lock(app, accounts):
    laptop, phone = signed_in(app), signed_in(app, address="198.51.100.21")
    locked = lock_out(app)
    page = laptop.get("/surveys").get_data(as_text=True)
    assert 'href="/account/password"' in page
    assert change_password(laptop, "wrong current", NEW).status_code == 400
    assert change_password(laptop, OWNER[1], NEW, again="something else").status_code == 400
    assert change_password(laptop, OWNER[1], "short").status_code == 400
    assert sees_surveys(phone)
    response = change_password(laptop, OWNER[1], NEW)
    assert response.status_code == 302, response.get_data(as_text=True)
    assert sees_surveys(laptop) and not sees_surveys(phone)
    # The lock on the attacker's address is gone, and only the new password works.
    assert post_login(locked, OWNER[0], OWNER[1]).status_code == 200
    assert post_login(locked, OWNER[0], NEW).status_code == 302


def test_the_product_stores_passwords_with_werkzeugs_scrypt(app, db_path, accounts, monkeypatch):
    """The suite hashes with a cheap pbkdf2 (conftest); the product's own hashes use werkzeug's default, scrypt."""
    monkeypatch.setattr(werkzeug.security.generate_password_hash, "__defaults__", PRODUCT_PASSWORD_HASH_DEFAULTS)
    assert PRODUCT_PASSWORD_HASH_DEFAULTS[0] == "scrypt"
    laptop = signed_in(app)
    assert change_password(laptop, OWNER[1], NEW).status_code == 302
    from click.testing import CliRunner

    from survey.cli import main

    added = CliRunner().invoke(main, ["--db", str(db_path), "user", "add", "new@example.org"], input="a long password\n")
    assert added.exit_code == 0, added.output
    store = Store(db_path)
    try:
        stored = [store.get_user(email)["password_hash"] for email in (OWNER[0], "new@example.org")]
    finally:
        store.close()
    assert all(hashed.startswith("scrypt:") for hashed in stored), [hashed.split("$")[0] for hashed in stored]


def test_a_change_needs_the_form_token(app, accounts):
    client = signed_in(app)
    response = client.post("/account/password", data={"current": OWNER[1], "password": NEW, "confirm": NEW})
    assert response.status_code == 400
    assert post_login(client_from(app, "192.0.2.7"), OWNER[0], OWNER[1]).status_code == 302


def reset_link(db_path, email=OWNER[0]) -> str:
    result = run_cli(db_path, "user", "reset", email, "--base", "https://surveys.example.org")
    assert result.exit_code == 0, result.stderr
    link = result.stdout.strip()
    assert link.startswith("https://surveys.example.org/reset/") and "works once" in result.stderr
    return urllib.parse.urlsplit(link).path


def use_reset(client, path, password=NEW):
    token = csrf_token(client.get(path).get_data(as_text=True))
    return client.post(path, data={"csrf_token": token, "password": password, "confirm": password})


@both_backends
def test_an_operators_reset_link_works_once_and_signs_out_other_sessions(app, db_path, accounts):
    other_session = signed_in(app)
    path = reset_link(db_path)
    stranger = client_from(app, "192.0.2.8")
    assert stranger.get(path).status_code == 200
    response = use_reset(stranger, path)
    assert response.status_code == 302 and sees_surveys(stranger)
    assert not sees_surveys(other_session)
    used = client_from(app, "192.0.2.9").get(path)
    assert used.status_code == 404 and used.headers["Cache-Control"] == "no-store"
    assert path.rsplit("/", 1)[1] not in scrub(f'"GET {path} HTTP/1.1" 404 -')
    assert post_login(client_from(app, "192.0.2.10"), OWNER[0], NEW).status_code == 302
    store = Store(db_path)
    try:
        stored = store._execute("SELECT token_hash FROM password_resets").fetchall()
        assert stored == []
    finally:
        store.close()
    result = run_cli(db_path, "user", "reset", "nobody@example.org")
    assert result.exit_code == 1 and "no researcher account" in result.stderr


@both_backends
def test_a_reset_link_expires_is_replaced_by_a_newer_one_and_is_stored_hashed(db_path, accounts):
    store = Store(db_path)
    try:
        start = time.time()
        token, account = store.issue_password_reset(OWNER[0], now=start)
        assert account["email"] == OWNER[0]
        assert store._execute("SELECT count(*) FROM password_resets WHERE token_hash = ?", [token]).fetchone()[0] == 0
        assert store.password_reset_account(token, now=start + 3599)["email"] == OWNER[0]
        assert store.password_reset_account(token, now=start + 3600) is None
        assert store.use_password_reset(token, "hash", now=start + 3601) is None
        newer, _ = store.issue_password_reset(OWNER[0], now=start)
        assert store.password_reset_account(token, now=start) is None
        assert store.use_password_reset(newer, "hash", now=start + 10)["email"] == OWNER[0]
        assert store.use_password_reset(newer, "hash", now=start + 11) is None
        assert store.issue_password_reset("nobody@example.org") is None
        last, _ = store.issue_password_reset(OWNER[0])
        store.set_password(OWNER[0], "operator's hash")
        assert store.password_reset_account(last) is None
    finally:
        store.close()


def forgot(client, email):
    token = csrf_token(client.get("/forgot").get_data(as_text=True))
    return client.post("/forgot", data={"csrf_token": token, "email": email})


def wait_for_links(inbox, address, seconds=10.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while not inbox.links(address) and time.monotonic() < deadline:
        time.sleep(0.05)
    return inbox.links(address)


@both_backends
def test_the_forgot_form_answers_alike_and_mails_a_working_link(app, accounts):
    with smtp_server() as inbox:
        app.config.update({**mail_settings(inbox.port), "PUBLIC_URL": "http://localhost"})
        assert "Forgot your password?" in client_from(app, "192.0.2.20").get("/login").get_data(as_text=True)
        known = forgot(client_from(app, "192.0.2.21"), OWNER[0])
        unknown = forgot(client_from(app, "192.0.2.22"), "nobody@example.org")
        assert known.status_code == unknown.status_code == 200
        strip = re.compile(r'value="[^"]*"|owner@example\.org|nobody@example\.org')
        assert strip.sub("", known.get_data(as_text=True)) == strip.sub("", unknown.get_data(as_text=True))
        assert "If owner@example.org has an account here" in known.get_data(as_text=True)
        links = wait_for_links(inbox, OWNER[0])
        assert len(links) == 1 and inbox.to("nobody@example.org") == []
        path = urllib.parse.urlsplit(links[0]).path
        client = client_from(app, "192.0.2.23")
        assert use_reset(client, path).status_code == 302 and sees_surveys(client)
        assert client_from(app, "192.0.2.24").get(path).status_code == 404


def test_a_mailed_link_starts_with_the_public_address_whatever_the_host_header(app, accounts):
    with smtp_server() as inbox:
        app.config.update({**mail_settings(inbox.port), "PUBLIC_URL": "https://surveys.example.org/"})
        client = client_from(app, "192.0.2.25")
        forged = "http://evil.example.net"
        token = csrf_token(client.get("/forgot", base_url=forged).get_data(as_text=True))
        response = client.post("/forgot", data={"csrf_token": token, "email": OWNER[0]}, base_url=forged)
        assert response.status_code == 200
        links = wait_for_links(inbox, OWNER[0])
        assert len(links) == 1 and links[0].startswith("https://surveys.example.org/reset/")


def test_without_a_public_address_no_link_is_mailed_to_the_host_a_request_names(app, accounts, monkeypatch):
    """Reset poisoning: without PUBLIC_URL a forged Host would choose the mailed link's host, so none is sent."""
    monkeypatch.delenv("LDP_SURVEY_PUBLIC_URL", raising=False)
    with smtp_server() as inbox:
        app.config.update(mail_settings(inbox.port))
        client = client_from(app, "192.0.2.26")
        forged = "http://evil.example.net"
        page = client.get("/forgot", base_url=forged).get_data(as_text=True)
        assert "ldp-survey user reset" in page
        token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page)
        if token:
            client.post("/forgot", data={"csrf_token": token.group(1), "email": OWNER[0]}, base_url=forged)
        assert wait_for_links(inbox, OWNER[0], seconds=1.0) == []


def test_the_forgot_form_is_flood_limited_alike_for_every_address(app, accounts):
    with smtp_server() as inbox:
        app.config.update({**mail_settings(inbox.port), "PUBLIC_URL": "http://localhost"})
        for email in (OWNER[0], "nobody@example.org"):
            client = client_from(app, "192.0.2.30")
            codes = [forgot(client, email).status_code for _ in range(6)]
            assert codes == [200] * 5 + [429], (email, codes)


def test_without_smtp_the_forgot_page_names_the_operators_command(app, accounts, monkeypatch):
    monkeypatch.delenv("LDP_SURVEY_SMTP_HOST", raising=False)
    page = client_from(app, "192.0.2.31").get("/forgot").get_data(as_text=True)
    assert "ldp-survey user reset" in page


@both_backends
def test_user_add_replace_clears_the_sign_in_lock(app, db_path, accounts):
    locked = lock_out(app)
    result = run_cli(db_path, "user", "add", OWNER[0], "--replace", input=NEW + "\n")
    assert result.exit_code == 0, result.stderr
    assert post_login(locked, OWNER[0], NEW).status_code == 302


# Collaborators


def share(db_path, email=OTHER[0]):
    store = Store(db_path)
    try:
        assert store.share(SLUG, email) == "collaborator"
    finally:
        store.close()


def person_action(client, action, email, confirmed):
    page = client.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    token = re.search(rf'id="{action}-csrf-1" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    data = {"csrf_token": token, "email": email, **({"confirmed": "yes"} if confirmed else {})}
    return client.post(f"/surveys/{SLUG}/collaborators/{action}", data=data)


@both_backends
def test_the_owner_removes_a_collaborator_after_confirming(app, db_path, accounts):
    share(db_path)
    owner, other = signed_in(app), signed_in(app, OTHER, address="198.51.100.30")
    assert other.get(f"/surveys/{SLUG}/results").status_code == 200
    asked = person_action(owner, "remove", OTHER[0], confirmed=False)
    assert asked.status_code == 200 and "Remove other@example.org from this survey?" in asked.get_data(as_text=True)
    assert other.get(f"/surveys/{SLUG}/results").status_code == 200
    assert person_action(owner, "remove", OTHER[0], confirmed=True).status_code == 302
    assert other.get(f"/surveys/{SLUG}/results").status_code == 404


@both_backends
def test_ownership_is_handed_to_a_collaborator(app, db_path, accounts):
    share(db_path)
    owner, other = signed_in(app), signed_in(app, OTHER, address="198.51.100.31")
    assert person_action(owner, "transfer", OTHER[0], confirmed=False).status_code == 200
    assert person_action(owner, "transfer", OTHER[0], confirmed=True).status_code == 302
    store = Store(db_path)
    try:
        assert store.is_owner(SLUG, store.get_user(OTHER[0])["id"])
        assert store.collaborators(SLUG) == [OWNER[0]]
    finally:
        store.close()
    page = owner.get(f"/surveys/{SLUG}/results").get_data(as_text=True)
    assert "Only the survey's owner can invite collaborators." in page
    # Owner-only actions: the old owner is refused, the new one may (and may close the survey).
    invite = {"csrf_token": csrf_token(page), "email": "third@example.org"}
    assert owner.post(f"/surveys/{SLUG}/collaborators/invite", data=invite).status_code == 403
    token = csrf_token(other.get(f"/surveys/{SLUG}/results").get_data(as_text=True))
    invite["csrf_token"] = token
    assert other.post(f"/surveys/{SLUG}/collaborators/invite", data=invite).status_code == 200
    assert other.post(f"/surveys/{SLUG}/close", data={"csrf_token": token, "confirm": "yes"}).status_code == 302
    store = Store(db_path)
    try:
        assert store.survey_status(SLUG) == "closed"
    finally:
        store.close()


@both_backends
def test_only_the_owner_removes_or_transfers(app, db_path, accounts):
    share(db_path)
    other = signed_in(app, OTHER, address="198.51.100.32")
    token = csrf_token(other.get(f"/surveys/{SLUG}/results").get_data(as_text=True))
    for action in ("remove", "transfer"):
        response = other.post(f"/surveys/{SLUG}/collaborators/{action}",
                              data={"csrf_token": token, "email": OWNER[0], "confirmed": "yes"})
        assert response.status_code == 403
    stranger_store = Store(db_path)
    try:
        with pytest.raises(Exception, match="not a collaborator"):
            stranger_store.transfer_ownership(SLUG, stranger_store.get_user(OWNER[0])["id"], "nobody@example.org")
    finally:
        stranger_store.close()


# Cancelled invitation links


@pytest.fixture
def panel(db_path, accounts):
    design = create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    try:
        store.share(design["slug"], OWNER[0])
        return design["slug"], store.create_invitations(design["slug"], 3)
    finally:
        store.close()


@both_backends
def test_a_cancelled_invitation_link_is_refused_like_a_used_one(app, db_path, panel):
    slug, tokens = panel
    owner = signed_in(app)
    page = owner.get(f"/surveys/{slug}/results").get_data(as_text=True)
    token = re.search(r'id="cancel-invitation-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    link = f"http://localhost/s/{slug}?invite={tokens[0]}"
    response = owner.post(f"/surveys/{slug}/invitations/cancel", data={"csrf_token": token, "link": link})
    assert response.status_code == 302
    assert 'id="invite-used"' in client_from(app, "192.0.2.40").get(f"/s/{slug}?invite={tokens[0]}").get_data(as_text=True)
    again = owner.post(f"/surveys/{slug}/invitations/cancel", data={"csrf_token": token, "link": link}, follow_redirects=True)
    assert "no unused invitation link" in again.get_data(as_text=True)
    result = run_cli(db_path, "uninvite", slug, "--", tokens[1], tokens[0])  # a token may begin with "-"
    assert result.exit_code == 1 and f"Cancelled {tokens[1]}" in result.stdout and "some links" in result.stderr
    store = Store(db_path)
    try:
        assert [store.invitation_status(slug, t) for t in tokens] == ["used", "used", "unused"]
        assert store.invitation_counts(slug)[0] == 3
    finally:
        store.close()
    stranger = signed_in(app, OTHER, address="198.51.100.33")
    token = csrf_token(stranger.get("/surveys").get_data(as_text=True))
    assert stranger.post(f"/surveys/{slug}/invitations/cancel",
                         data={"csrf_token": token, "link": tokens[2]}).status_code == 404
