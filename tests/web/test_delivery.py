"""The link, delivered: e-mailed invitations and reminders through a real SMTP server, the send log, deleting the
addresses, QR codes that decode to the link (web and CLI)."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
import zipfile

import pytest
import zxingcpp
from PIL import Image
from werkzeug.security import generate_password_hash

from survey.cli import main
from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store
from survey.web import create_app
from survey.web.secret import link_tokens

from conftest import PANEL_TOML, create_from_toml, is_postgres, table_names
from test_ownership import signed_in
from smtp_server import mail_settings, smtp_server

pytestmark = pytest.mark.both_backends
OWNER = ("owner@example.org", "a password")
PEOPLE = [f"person{n:02d}@example.org" for n in range(20)]
HOST = "http://localhost"
PANEL_HASH = build_design(parse_definition_toml(PANEL_TOML))["hash"]
TOKEN_FOR = link_tokens("test")  # the links' tokens of the app's SECRET_KEY "test"


def decode_png(data: bytes) -> list[str]:
    """Return the texts of the QR codes a reader finds in a PNG image."""
    return [result.text for result in zxingcpp.read_barcodes(Image.open(io.BytesIO(data)))]


def addresses_csv(addresses) -> bytes:
    return ("Name,Email\r\n" + "".join(f"Someone {n},{a}\r\n" for n, a in enumerate(addresses))).encode()


@pytest.fixture
def inbox():
    with smtp_server() as server:
        yield server


@pytest.fixture
def mail_app(db_path, inbox):
    """The app with the suite's SMTP server configured and the invitation-only panel owned by OWNER."""
    create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
    store.share("panel", OWNER[0])
    store.close()
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test", "MAX_SUBMISSIONS_PER_MINUTE": 0,
                      **mail_settings(inbox.port)})
    yield app
    app.extensions["ldp_stores"].close_all()


def csrf(client, slug="panel", form="addresses-csrf") -> str:
    page = client.get(f"/surveys/{slug}/results").get_data(as_text=True)
    return re.search(rf'id="{form}" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def token_of(link: str) -> str:
    """Return the invitation token of a link."""
    return re.search(r"invite=([\w-]+)", link).group(1)


def submit(client, link: str):
    """Answer the panel survey through ``link`` as the respondent page does; return the response."""
    invite = token_of(link)
    assert client.get(link.removeprefix(HOST)).status_code == 200
    body = {"design": PANEL_HASH, "answers": {"remote": 1}, "invite": invite}
    return client.post("/s/panel/responses", data=json.dumps(body), content_type="application/json")


def address_rows(db_path) -> list:
    """Return every row of the addresses and the send log, with PostgreSQL's xmin (the transaction that wrote it)."""
    store = Store(db_path)
    try:
        xmin = ", xmin::text" if is_postgres(store) else ""
        return [[tuple(row) for row in store.conn.execute(f"SELECT *{xmin} FROM {table} ORDER BY id").fetchall()]
                for table in ("invitation_addresses", "mail_log")]
    finally:
        store.close()


def every_text(store) -> str:
    """Return every value of every table of the database, as text."""
    values = []
    for table in table_names(store):
        values += [str(v) for row in store.conn.execute(f'SELECT * FROM "{table}"').fetchall() for v in row]
    return "\n".join(values)


def assert_stored_nowhere(db_path, secrets: set[str]):
    """Fail if any of ``secrets`` is in a cell of any table, or (SQLite) in the bytes of the file or its WAL."""
    store = Store(db_path)
    try:
        text = every_text(store)
        assert not [secret for secret in secrets if secret in text], "a link's token is stored in a table"
        if not is_postgres(store):
            raw = b"".join(path.read_bytes() for path in (db_path, db_path.with_name(db_path.name + "-wal"))
                           if path.exists())
            assert not [secret for secret in secrets if secret.encode() in raw], "a token is in the database's files"
    finally:
        store.close()


def test_invitations_to_20_addresses_arrive_each_link_works_once_and_a_reminder_reaches_only_the_unused(
        mail_app, inbox, db_path):
    owner = signed_in(mail_app, *OWNER)
    token = csrf(owner)
    upload = {"csrf_token": token, "addresses": (io.BytesIO(addresses_csv(PEOPLE + [PEOPLE[0].upper()])), "people.csv")}
    response = owner.post("/surveys/panel/addresses", data=upload, content_type="multipart/form-data",
                          follow_redirects=True)
    assert "Added 20 addresses" in response.get_data(as_text=True)
    assert not inbox.messages, "adding addresses sends nothing"

    response = owner.post("/surveys/panel/mail/invitation", data={"csrf_token": token}, follow_redirects=True)
    assert "Sent 20 invitations." in response.get_data(as_text=True)
    links = {address: inbox.links(address) for address in PEOPLE}
    assert all(len(found) == 1 for found in links.values()), links
    assert len({found[0] for found in links.values()}) == 20, "each address has its own link"
    message = inbox.to(PEOPLE[3])[0]
    assert message["Subject"] == "Invitation: Staff panel" and "Staff panel" in message.get_body(("plain",)).get_content()
    assert message["From"] == "Survey team <surveys@example.org>"
    # A second click sends nothing more: every address has had its invitation.
    owner.post("/surveys/panel/mail/invitation", data={"csrf_token": token})
    assert len(inbox.messages) == 20

    respondent = mail_app.test_client()
    before = address_rows(db_path)
    answered = PEOPLE[:7]
    for address in answered:
        assert submit(respondent, links[address][0]).status_code == 201
        assert submit(respondent, links[address][0]).status_code == 409, "a link works once"
    assert address_rows(db_path) == before, "a submission writes nothing of the addresses or the log"
    inbox.clear()
    response = owner.post("/surveys/panel/mail/reminder", data={"csrf_token": token}, follow_redirects=True)
    assert "Sent 13 reminders." in response.get_data(as_text=True)
    assert sorted(m["To"] for m in inbox.messages) == sorted(PEOPLE[7:])
    assert all(inbox.links(a) == links[a] for a in PEOPLE[7:]), "a reminder carries the same link"
    assert inbox.to(PEOPLE[9])[0]["Subject"] == "Reminder: Staff panel"
    sent = {token_of(link) for address in PEOPLE for link in inbox.links(address) + links[address]}
    assert len(sent) == 20
    assert_stored_nowhere(db_path, sent)
    # Again the same day: no one is reminded twice.
    owner.post("/surveys/panel/mail/reminder", data={"csrf_token": token})
    assert len(inbox.messages) == 13

    log = list(csv.DictReader(io.StringIO(owner.get("/surveys/panel/mail-log.csv").get_data(as_text=True))))
    assert len(log) == 33 and set(log[0]) == {"email", "kind", "status", "error", "day"}
    assert {(r["kind"], r["status"]) for r in log} == {("invitation", "sent"), ("reminder", "sent")}
    page = " ".join(owner.get("/surveys/panel/results").get_data(as_text=True).split())
    assert "20 addresses, 20 invited, 13 of them with an unused link" in page


def test_deleted_addresses_leave_no_trace_in_any_table(mail_app, inbox, db_path):
    owner = signed_in(mail_app, *OWNER)
    token = csrf(owner)
    owner.post("/surveys/panel/addresses", content_type="multipart/form-data",
               data={"csrf_token": token, "addresses": (io.BytesIO(addresses_csv(PEOPLE[:5] + ["refuse@example.org"])),
                                                        "p.csv")})
    response = owner.post("/surveys/panel/mail/invitation", data={"csrf_token": token}, follow_redirects=True)
    assert "Sent 5 invitations; 1 failed" in response.get_data(as_text=True)
    assert submit(mail_app.test_client(), inbox.links(PEOPLE[1])[0]).status_code == 201
    store = Store(db_path)
    tokens = [token_of(inbox.links(a)[0]) for a in PEOPLE[:5]] + \
        [a["token"] for a in store.addresses_to_mail("panel", "invitation", TOKEN_FOR)]
    nonces = [row[0] for row in store.conn.execute("SELECT nonce FROM invitation_addresses").fetchall()]
    assert len(set(tokens)) == 6 and len(set(nonces)) == 6 and "no such mailbox here" in every_text(store)
    assert all(nonce in every_text(store) for nonce in nonces) and not any(t in every_text(store) for t in tokens)
    store.close()

    asked = owner.post("/surveys/panel/addresses/delete", data={"csrf_token": token})
    assert asked.status_code == 302 and "confirm_addresses=delete" in asked.headers["Location"]
    assert "Yes, delete the addresses" in owner.get(asked.headers["Location"]).get_data(as_text=True)
    response = owner.post("/surveys/panel/addresses/delete", data={"csrf_token": token, "confirm": "yes"},
                          follow_redirects=True)
    assert "Deleted 6 addresses" in response.get_data(as_text=True)
    store = Store(db_path)
    try:
        text = every_text(store)
        for secret in PEOPLE[:5] + ["refuse@example.org", "no such mailbox here"] + tokens + nonces:
            assert secret not in text
        assert store.invitation_counts("panel") == (6, 1), "the invitations (hashes) stay"
        if not is_postgres(store):
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            raw = b"".join(path.read_bytes() for path in db_path.parent.glob(db_path.name + "*"))
            for secret in PEOPLE[:5] + tokens + nonces:
                assert secret.encode() not in raw, f"{secret} is still in the database's files"
    finally:
        store.close()
    assert submit(mail_app.test_client(), inbox.links(PEOPLE[2])[0]).status_code == 201, "sent links keep working"


def test_sending_without_smtp_settings_is_a_clear_error_and_stores_nothing(db_path, monkeypatch):
    for name in ("SMTP_HOST", "MAIL_FROM"):
        monkeypatch.delenv(f"LDP_SURVEY_{name}", raising=False)
    create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
    store.share("panel", OWNER[0])
    store.add_addresses("panel", PEOPLE[:2], TOKEN_FOR)
    store.close()
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test"})
    owner = signed_in(app, *OWNER)
    page = " ".join(owner.get("/surveys/panel/results").get_data(as_text=True).split())
    assert "E-mail cannot be sent from this server yet: e-mail is not configured: set SMTP_HOST and MAIL_FROM" in page
    token = re.search(r'id="invitation-mail-csrf" name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    response = owner.post("/surveys/panel/mail/invitation", data={"csrf_token": token}, follow_redirects=True)
    assert "Cannot send: e-mail is not configured" in response.get_data(as_text=True)
    store = Store(db_path)
    assert store.mail_log("panel") == [] and store.address_counts("panel")["invited"] == 0
    store.close()
    app.extensions["ldp_stores"].close_all()


def test_a_run_cut_short_goes_on_where_it_stopped(db_path, inbox):
    """The SMTP server goes away after 8 messages: the run stops with a clear error, those 8 are logged as sent,
    and the next run (another server) sends only the other 12."""
    from survey.web.mail import MailError, mail_config
    from survey.web.mailing import send_mail

    create_from_toml(db_path, PANEL_TOML)
    store = Store(db_path)
    store.add_addresses("panel", PEOPLE, TOKEN_FOR)

    spent = send_mail(store, mail_config(mail_settings(inbox.port)), "panel", "https://s.example.org", "invitation",
                      TOKEN_FOR, seconds=-1)
    assert spent.sent == 0 and len(store.addresses_to_mail("panel", "invitation", TOKEN_FOR)) == 20, \
        "time is up: none started"

    def stop_after_eight(done, total):
        if done == 8:
            inbox.stop()

    with pytest.raises(MailError, match="cannot reach the SMTP server"):
        send_mail(store, mail_config(mail_settings(inbox.port)), "panel", "https://s.example.org", "invitation",
                  TOKEN_FOR, progress=stop_after_eight)
    first = sorted(m["To"] for m in inbox.messages)
    assert len(first) == 8 and [r["email"] for r in store.mail_log("panel")] == PEOPLE[:8]
    with smtp_server() as again:
        run = send_mail(store, mail_config(mail_settings(again.port)), "panel", "https://s.example.org", "invitation",
                        TOKEN_FOR)
        assert run.sent == 12 and sorted(m["To"] for m in again.messages) == PEOPLE[8:]
    assert store.address_counts("panel")["invited"] == 20
    store.close()


def test_the_qr_code_of_the_survey_link_decodes_to_it_and_the_zip_holds_one_per_invitation(mail_app, db_path):
    owner = signed_in(mail_app, *OWNER)
    png = owner.get("/surveys/panel/link-qr.png")
    assert png.mimetype == "image/png" and decode_png(png.data) == [f"{HOST}/s/panel"]
    svg = owner.get("/surveys/panel/link-qr.svg?download=1")
    assert svg.mimetype == "image/svg+xml" and "attachment" in svg.headers["Content-Disposition"]
    root = ET.fromstring(svg.data)
    assert root.tag == "{http://www.w3.org/2000/svg}root".replace("root", "svg")
    size = int(root.get("viewBox").split()[2])
    assert root.get("viewBox") == f"0 0 {size} {size}" and size >= 21 + 8
    assert root.find("{http://www.w3.org/2000/svg}title").text == f"{HOST}/s/panel"

    token = csrf(owner, form="invitations-csrf")
    response = owner.post("/surveys/panel/invitations.csv", data={"csrf_token": token, "count": "3", "format": "zip"})
    assert response.mimetype == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.data))
    links = [row[0] for row in csv.reader(io.StringIO(archive.read("invitations.csv").decode()))][1:]
    assert len(links) == 3
    for number, link in enumerate(links, 1):
        assert decode_png(archive.read(f"invitation-{number:04d}.png")) == [link]
        assert ET.fromstring(archive.read(f"invitation-{number:04d}.svg")).find(
            "{http://www.w3.org/2000/svg}title").text == link


def test_the_cli_adds_sends_reminds_logs_deletes_and_writes_qr_codes(db_path, inbox, cli_runner, tmp_path,
                                                                         monkeypatch):
    create_from_toml(db_path, PANEL_TOML)
    for name, value in mail_settings(inbox.port).items():
        monkeypatch.setenv(f"LDP_SURVEY_{name}", value)
    people = tmp_path / "people.csv"
    people.write_bytes(addresses_csv(PEOPLE[:4] + ["refuse@example.org"]))
    run = lambda *args: cli_runner.invoke(main, ["--db", str(db_path), *args])  # noqa: E731
    result = run("mail", "add", "panel", str(people))
    assert result.exit_code == 0 and "Added 5 addresses" in result.output
    result = run("mail", "send", "panel", "--base", "https://surveys.example.org")
    assert result.exit_code == 1 and "Sent 4 invitations; 1 failed" in result.stdout
    assert "refuse@example.org: 550" in result.stdout and "run the command again to retry" in result.stderr
    assert len(inbox.messages) == 4 and inbox.links(PEOPLE[0])[0].startswith("https://surveys.example.org/s/panel?invite=")
    template = tmp_path / "reminder.txt"
    template.write_text("Subject: Please answer {title}\n\nStill time: {link}\n", encoding="utf-8")
    inbox.clear()
    result = run("mail", "remind", "panel", "--base", "https://surveys.example.org", "--template", str(template))
    assert result.exit_code == 0 and "Sent 4 reminders." in result.stdout
    assert inbox.to(PEOPLE[1])[0]["Subject"] == "Please answer Staff panel"
    assert inbox.to(PEOPLE[1])[0].get_body(("plain",)).get_content().startswith("Still time: https://")
    log = run("mail", "log", "panel", "--format", "csv").stdout
    assert len(log.splitlines()) == 1 + 5 + 4 and "refuse@example.org,invitation,failed,550" in log

    invite = re.search(r"invite=([\w-]+)", inbox.links(PEOPLE[2])[0]).group(1)
    out = tmp_path / "card.png"
    result = run("qr", "panel", "--invite", invite, "--base", "https://surveys.example.org", "--out", str(out))
    assert result.exit_code == 0 and decode_png(out.read_bytes()) == [inbox.links(PEOPLE[2])[0]]
    result = run("qr", "panel", "--base", "https://surveys.example.org", "--out", "-")
    assert ET.fromstring(result.stdout.encode()).find("{http://www.w3.org/2000/svg}title").text == \
        "https://surveys.example.org/s/panel"
    assert "not an invitation" in run("qr", "panel", "--invite", "nope", "--out", str(out)).stderr
    assert "an .svg or a .png" in run("qr", "panel", "--out", str(tmp_path / "x.gif")).stderr

    result = run("mail", "delete", "panel", "--yes")
    assert result.exit_code == 0 and "Deleted 5 addresses" in result.stdout
    store = Store(db_path)
    assert not any(a in every_text(store) for a in PEOPLE[:4])
    store.close()
    assert run("close", "panel").exit_code == 0
    result = run("mail", "remind", "panel", "--base", "https://surveys.example.org")
    assert result.exit_code == 1 and "the survey is closed: its links do not work now, so nothing was sent" in \
        result.stderr
    monkeypatch.delenv("LDP_SURVEY_SMTP_HOST")
    result = run("mail", "send", "panel", "--base", "https://surveys.example.org")
    assert result.exit_code == 1 and "e-mail is not configured: set SMTP_HOST" in result.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("name\nx\n", encoding="utf-8")
    assert "needs a column named 'email'" in run("mail", "add", "panel", str(bad)).stderr


def test_addresses_and_the_send_log_move_with_the_database(tmp_path, pg_url, cli_runner, inbox):
    """``migrate --to`` copies both tables; on PostgreSQL new rows get ids past the copied ones."""
    from survey.web.mail import mail_config
    from survey.web.mailing import send_mail

    sqlite_file = tmp_path / "study.db"
    create_from_toml(sqlite_file, PANEL_TOML)
    store = Store(sqlite_file)
    store.add_addresses("panel", PEOPLE[:3], TOKEN_FOR)
    send_mail(store, mail_config(mail_settings(inbox.port)), "panel", "https://s.example.org", "invitation", TOKEN_FOR)
    due_before, log_before = store.addresses_to_mail("panel", "reminder", TOKEN_FOR), store.mail_log("panel")
    store.close()
    result = cli_runner.invoke(main, ["--db", str(sqlite_file), "migrate", "--to", pg_url])
    assert result.exit_code == 0, result.output
    moved = Store(pg_url)
    try:
        assert moved.addresses_to_mail("panel", "reminder", TOKEN_FOR) == due_before
        assert moved.mail_log("panel") == log_before and all(a["token"] for a in due_before)
        assert moved.add_addresses("panel", [PEOPLE[5]], TOKEN_FOR) == (1, 0)
        assert [a["email"] for a in moved.addresses_to_mail("panel", "invitation", TOKEN_FOR)] == [PEOPLE[5]]
        moved.record_mail("panel", moved.addresses_to_mail("panel", "invitation", TOKEN_FOR)[0]["id"], "invitation")
        assert len(moved.mail_log("panel")) == 4
    finally:
        moved.close()
