"""E-mailed links whose tokens are derived from the secret key, never stored: the token's form, a changed key (the
reminder is refused, says why and sends nothing), and address rows made before migration m020 (they keep their
token and still get reminders until the addresses are deleted)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import sqlite3

import pytest
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.core.reports import INVITE_RE
from survey.store import Store, StoreError
from survey.store.admission import invite_hash
from survey.store.schema import migrations
from survey.store.sqlite_utils_import import sqlite_utils
from survey.web import create_app
from survey.web.mail import mail_config
from survey.web.mailing import send_mail
from survey.web.secret import LINK_KEY_LABEL, LINK_TOKEN_LABEL, SecretKeyError, link_key, link_tokens

from conftest import PANEL_TOML, create_from_toml
from smtp_server import mail_settings, smtp_server
from test_delivery import OWNER, PEOPLE, assert_stored_nowhere, csrf, every_text, signed_in, submit, token_of

pytestmark = pytest.mark.both_backends
KEY_A = "a" * 40  # the key the addresses were added with
KEY_B = "b" * 40  # the key after a rotation
BASE = "https://surveys.example.org"
REFUSED = "the secret key (LDP_SURVEY_SECRET_KEY, or the key file beside the database) has changed since"


@pytest.fixture
def inbox():
    with smtp_server() as server:
        yield server


def panel(db_path) -> Store:
    """Create the invitation-only panel, owned by OWNER; return an open Store."""
    create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
    store.share("panel", OWNER[0])
    return store


def add_old_row(store, email: str) -> str:
    """Add an address as the code before m020 did (its token stored in the row); return the token."""
    (token,) = store.create_invitations("panel", 1)
    store.conn.execute("INSERT INTO invitation_addresses (survey, email, invite_token, token_hash) VALUES (?, ?, ?, ?)",
                       ["panel", email, token, invite_hash(token)])
    return token


def test_a_link_token_is_an_hmac_of_label_slug_and_nonce_under_a_key_derived_from_the_secret():
    token_for, nonce = link_tokens(KEY_A), "0f" * 16
    token = token_for("panel", nonce)
    assert INVITE_RE.fullmatch(token), "the same form as admission.new_token(): 22 URL-safe characters"
    key = hmac.new(KEY_A.encode(), LINK_KEY_LABEL, hashlib.sha256).digest()
    digest = hmac.new(key, LINK_TOKEN_LABEL + b"panel\0" + nonce.encode(), hashlib.sha256).digest()
    assert token == base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()
    assert link_key(KEY_A) == key and key != KEY_A.encode(), "the links' key is an HMAC of the secret, not the secret"
    unkeyed = hmac.new(KEY_A.encode(), LINK_TOKEN_LABEL + b"panel\0" + nonce.encode(), hashlib.sha256).digest()
    assert base64.urlsafe_b64encode(unkeyed[:16]).rstrip(b"=").decode() != token
    others = {token_for("panel", nonce), token_for("panel2", nonce), token_for("panel", "1f" * 16),
              link_tokens(KEY_B)("panel", nonce)}
    assert len(others) == 4 and token in others, "the slug, the nonce and the key each change the token"
    with pytest.raises(SecretKeyError):
        link_tokens("")


def test_a_token_for_that_does_not_make_a_token_adds_nothing(db_path):
    store = panel(db_path)
    try:
        with pytest.raises(StoreError, match="22 URL-safe characters"):
            store.add_addresses("panel", PEOPLE[:2], lambda slug, nonce: nonce)
        assert store.address_counts("panel")["addresses"] == 0 and store.invitation_counts("panel") == (0, 0)
    finally:
        store.close()


def test_a_changed_secret_key_refuses_the_reminder_says_why_and_sends_nothing(db_path, inbox, cli_runner,
                                                                              monkeypatch):
    store = panel(db_path)
    store.add_addresses("panel", PEOPLE[:3], link_tokens(KEY_A))
    assert send_mail(store, mail_config(mail_settings(inbox.port)), "panel", BASE, "invitation",
                     link_tokens(KEY_A)).sent == 3
    links = {address: inbox.links(address)[0] for address in PEOPLE[:3]}
    store.close()
    inbox.clear()

    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": KEY_B, "MAX_SUBMISSIONS_PER_MINUTE": 0,
                      **mail_settings(inbox.port)})
    try:
        owner = signed_in(app, *OWNER)
        response = owner.post("/surveys/panel/mail/reminder", data={"csrf_token": csrf(owner)}, follow_redirects=True)
        page = " ".join(response.get_data(as_text=True).split())
        assert "Sent 0 reminders. 3 addresses were sent no reminder: " + REFUSED in page
        assert "the invitations themselves still work for anyone who kept the first e-mail" in page
        assert "still to send" not in page
        assert submit(app.test_client(), links[PEOPLE[0]].replace(BASE, "http://localhost")).status_code == 201, \
            "the invitation itself still works"
    finally:
        app.extensions["ldp_stores"].close_all()
    assert inbox.messages == []

    for name, value in mail_settings(inbox.port).items():
        monkeypatch.setenv(f"LDP_SURVEY_{name}", value)
    monkeypatch.setenv("LDP_SURVEY_SECRET_KEY", KEY_B)
    result = cli_runner.invoke(main, ["--db", str(db_path), "mail", "remind", "panel", "--base", BASE])
    assert result.exit_code == 1 and "Sent 0 reminders." in result.stdout
    assert "2 addresses were sent no reminder: " + REFUSED in " ".join(result.stderr.split())
    assert inbox.messages == []
    store = Store(db_path)
    try:
        assert [(r["kind"], r["status"]) for r in store.mail_log("panel")] == [("invitation", "sent")] * 3
        assert store.address_counts("panel") == {"addresses": 3, "invited": 3, "unused": 2, "failed": 0}
    finally:
        store.close()

    monkeypatch.setenv("LDP_SURVEY_SECRET_KEY", KEY_A)  # the old key back: the same links go out
    result = cli_runner.invoke(main, ["--db", str(db_path), "mail", "remind", "panel", "--base", BASE])
    assert result.exit_code == 0 and "Sent 2 reminders." in result.stdout
    assert {a: inbox.links(a) for a in PEOPLE[1:3]} == {a: [links[a]] for a in PEOPLE[1:3]}


def test_an_invitation_whose_link_cannot_be_rebuilt_is_not_sent(db_path, inbox):
    store = panel(db_path)
    try:
        store.add_addresses("panel", PEOPLE[:2], link_tokens(KEY_A))
        run = send_mail(store, mail_config(mail_settings(inbox.port)), "panel", BASE, "invitation", link_tokens(KEY_B))
        assert (run.sent, run.stale, inbox.messages) == (0, 2, [])
        assert store.address_counts("panel")["invited"] == 0 and store.mail_log("panel") == []
    finally:
        store.close()


def test_rows_made_before_keep_their_token_get_reminders_and_are_scrubbed_with_the_addresses(db_path, inbox):
    store = panel(db_path)
    try:
        old = add_old_row(store, "early@example.org")
        store.add_addresses("panel", PEOPLE[:2], link_tokens(KEY_A))
        config = mail_config(mail_settings(inbox.port))
        assert send_mail(store, config, "panel", BASE, "invitation", link_tokens(KEY_A)).sent == 3
        assert inbox.links("early@example.org") == [f"{BASE}/s/panel?invite={old}"]
        sent = {token_of(inbox.links(a)[0]) for a in PEOPLE[:2]}
        inbox.clear()
        run = send_mail(store, config, "panel", BASE, "reminder", link_tokens(KEY_B))
        assert (run.sent, run.stale) == (1, 2), "the stored token needs no key; the derived ones need the old key"
        assert inbox.links("early@example.org") == [f"{BASE}/s/panel?invite={old}"]
        assert old in every_text(store)
    finally:
        store.close()
    assert_stored_nowhere(db_path, sent)
    store = Store(db_path)
    try:
        assert store.delete_addresses("panel") == 3
        assert store.invitation_counts("panel") == (3, 0)
    finally:
        store.close()
    assert_stored_nowhere(db_path, sent | {old})


@pytest.mark.sqlite_only
def test_migration_m020_keeps_the_rows_made_before_with_their_ids_and_tokens(db_path):
    db = sqlite_utils.Database(db_path)
    migrations.apply(db, stop_before="m020_address_nonces")
    db.close()
    store = Store(db_path, migrate=False)
    store.create_survey(PANEL_TOML, build_design(parse_definition_toml(PANEL_TOML)))
    tokens = [add_old_row(store, address) for address in PEOPLE[:2]]
    store.conn.execute("UPDATE invitation_addresses SET invited_day = '2026-11-01'")
    store.close()

    store = Store(db_path)
    try:
        rows = store.conn.execute("SELECT id, email, invite_token, nonce FROM invitation_addresses ORDER BY id")
        assert [tuple(r) for r in rows] == [(1, PEOPLE[0], tokens[0], None), (2, PEOPLE[1], tokens[1], None)]
        due = store.addresses_to_mail("panel", "reminder", link_tokens(KEY_B))
        assert [a["token"] for a in due] == tokens
        for token, nonce in ((None, None), ("x" * 22, "0" * 32)):
            with pytest.raises(sqlite3.IntegrityError):
                store.conn.execute("INSERT INTO invitation_addresses (survey, email, invite_token, nonce, token_hash) "
                                   "VALUES ('panel', 'z@example.org', ?, ?, 'h')", [token, nonce])
    finally:
        store.close()
