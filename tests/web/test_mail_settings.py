"""The SMTP settings (from the app's configuration, else the environment), the message templates and the address
list: clear errors for what is missing or wrong, nothing secret in a repr, no header injection."""

from __future__ import annotations

import pytest

from survey.core.invitations import invitation_message, parse_template, read_addresses
from survey.web.mail import MailError, MailNotConfigured, build_message, mail_config, send_message

from smtp_server import mail_settings, smtp_server

BASE = {"SMTP_HOST": "smtp.example.org", "MAIL_FROM": "surveys@example.org"}


@pytest.fixture(autouse=True)
def no_environment(monkeypatch):
    for name in ("HOST", "PORT", "SECURITY", "USER", "PASSWORD", "TIMEOUT"):
        monkeypatch.delenv(f"LDP_SURVEY_SMTP_{name}", raising=False)
    monkeypatch.delenv("LDP_SURVEY_MAIL_FROM", raising=False)


def test_missing_settings_name_what_to_set():
    with pytest.raises(MailNotConfigured, match="set SMTP_HOST and MAIL_FROM .*LDP_SURVEY_SMTP_HOST and "
                                                "LDP_SURVEY_MAIL_FROM"):
        mail_config({})
    with pytest.raises(MailNotConfigured, match="set MAIL_FROM "):
        mail_config({"SMTP_HOST": "smtp.example.org"})


@pytest.mark.parametrize("settings, expected", [
    ({}, ("starttls", 587)),
    ({"SMTP_PORT": "465"}, ("ssl", 465)),
    ({"SMTP_SECURITY": "SSL"}, ("ssl", 465)),
    ({"SMTP_SECURITY": "none"}, ("none", 25)),
    ({"SMTP_SECURITY": "starttls", "SMTP_PORT": "2525"}, ("starttls", 2525)),
])
def test_security_and_port_defaults(settings, expected):
    config = mail_config({**BASE, **settings})
    assert (config.security, config.port) == expected


def test_the_environment_is_read_when_the_app_sets_nothing_and_the_password_is_never_shown(monkeypatch):
    monkeypatch.setenv("LDP_SURVEY_SMTP_HOST", "mail.example.net")
    monkeypatch.setenv("LDP_SURVEY_MAIL_FROM", "Team <team@example.net>")
    monkeypatch.setenv("LDP_SURVEY_SMTP_USER", "team")
    monkeypatch.setenv("LDP_SURVEY_SMTP_PASSWORD", "s3cret-pass")
    config = mail_config(None)
    assert (config.host, config.sender, config.username, config.password) == \
        ("mail.example.net", "Team <team@example.net>", "team", "s3cret-pass")
    assert "s3cret-pass" not in repr(config) and "s3cret-pass" not in str(config)
    assert mail_config({"SMTP_HOST": "app.example.org"}).host == "app.example.org", "the app's setting wins"


@pytest.mark.parametrize("settings, words", [
    ({"SMTP_SECURITY": "tls"}, "SMTP_SECURITY is one of starttls, ssl, none"),
    ({"SMTP_PORT": "smtp"}, "SMTP_PORT is a whole number"),
    ({"SMTP_PORT": "70000"}, "SMTP_PORT is from 1 to 65535"),
    ({"SMTP_USER": "me"}, "set both SMTP_USER and SMTP_PASSWORD, or neither"),
    ({"MAIL_FROM": "nobody"}, "MAIL_FROM is an e-mail address"),
])
def test_invalid_settings_are_refused_with_their_name(settings, words):
    with pytest.raises(MailNotConfigured, match=words):
        mail_config({**BASE, **settings})


def test_tls_asked_of_a_server_without_it_is_a_clear_error_and_nothing_is_sent():
    with smtp_server() as inbox:
        for security, words in (("starttls", "STARTTLS"), ("ssl", "SSL|ssl|record|handshake|EOF")):
            config = mail_config({**mail_settings(inbox.port), "SMTP_SECURITY": security, "SMTP_TIMEOUT": "5"})
            with pytest.raises(MailError, match=rf"cannot reach the SMTP server 127\.0\.0\.1:{inbox.port} "
                                                rf"\({security}\): .*({words})"):
                send_message(config, "someone@example.org", "Hello", "Body")
        send_message(mail_config(mail_settings(inbox.port)), "someone@example.org", "Hello", "Body\n")
        assert [m["Subject"] for m in inbox.messages] == ["Hello"]


def test_no_header_can_be_injected():
    config = mail_config(BASE)
    with pytest.raises(MailError, match="cannot span lines"):
        build_message(config, "a@example.org\r\nBcc: b@example.org", "Hi", "Body")
    subject, _ = invitation_message("invitation", "Title\r\nBcc: b@example.org", "https://s.example.org/s/x?invite=t")
    assert "\n" not in subject and "\r" not in subject
    assert build_message(config, "a@example.org", subject, "Body")["Bcc"] is None


def test_templates_take_title_and_link_and_nothing_else():
    assert invitation_message("reminder", "Staff panel", "https://s/x", parse_template(
        "Subject: {title} {{soon}}\n\nHi {link}")) == ("Staff panel {soon}", "Hi https://s/x")
    for text, words in (("Hello {link}", "starts with a line 'Subject: ...'"),
                        ("Subject: x\n\nno link here", "must contain {link}"),
                        ("Subject: {name}\n\n{link}", "unknown field {name}"),
                        ("Subject: x\n\n{link} {", "only {title} and {link}"),
                        ("Subject:\n\n{link}", "subject line of a message template is empty")):
        with pytest.raises(ValueError, match=words):
            parse_template(text)


def test_the_address_list_needs_an_email_column_and_names_the_lines_it_cannot_read():
    text = "\ufeffName,E-mail address,EMAIL\nA,x,a@example.org\nB,x, B@Example.org \nC,x,a@EXAMPLE.org\nD,x,\n" \
           "E,x,not an address\nF,x,f@localhost\n"
    addresses, problems = read_addresses(text)
    assert addresses == ["a@example.org", "B@Example.org"]
    assert problems == ["line 6: 'not an address' is not an e-mail address",
                        "line 7: 'f@localhost' is not an e-mail address"]
    with pytest.raises(ValueError, match="needs a column named 'email' \\(found: name, address\\)"):
        read_addresses("name,address\nA,a@example.org\n")
