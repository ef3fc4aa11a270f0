"""Send e-mail through an SMTP server: its settings from the app's configuration or the environment, never the database.

``mail_config(config)`` reads SMTP_HOST, SMTP_PORT, SMTP_SECURITY (``starttls``, ``ssl`` or
``none``), SMTP_USER, SMTP_PASSWORD, MAIL_FROM and SMTP_TIMEOUT from a mapping (the app's
config), else from ``LDP_SURVEY_`` + the same name in the environment; it raises
MailNotConfigured naming what is missing. ``send_message(config, to, subject, body)`` sends
one plain-text message; ``Mailer`` keeps one connection open for many.
"""

from __future__ import annotations

import os
import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

ENV_PREFIX = "LDP_SURVEY_"
SECURITIES = ("starttls", "ssl", "none")
DEFAULT_TIMEOUT = 30.0


class MailError(Exception):
    """A message could not be sent (the SMTP server's answer, or why it could not be reached)."""


class MailNotConfigured(MailError):
    """No SMTP server is configured, or its settings are invalid."""


@dataclass(frozen=True)
class MailConfig:
    """Where and how to send: the SMTP server, its security, the account and the sender address."""

    host: str
    port: int
    security: str
    sender: str
    username: str | None = None
    password: str | None = None
    timeout: float = DEFAULT_TIMEOUT

    def __repr__(self) -> str:
        """Name the server and sender, never the password."""
        return (f"MailConfig(host={self.host!r}, port={self.port}, security={self.security!r}, "
                f"sender={self.sender!r}, username={self.username!r})")


def _setting(config, name: str) -> str | None:
    """Return a setting from the mapping, else from the environment, stripped; None when unset or empty."""
    value = (config or {}).get(name)
    if value in (None, ""):
        value = os.environ.get(ENV_PREFIX + name)
    value = None if value is None else str(value).strip()
    return value or None


def mail_config(config=None) -> MailConfig:
    """Return the SMTP settings of ``config`` (the app's) or the environment; raise MailNotConfigured if unusable."""
    host, sender = _setting(config, "SMTP_HOST"), _setting(config, "MAIL_FROM")
    if not host or not sender:
        missing = " and ".join(name for name, value in (("SMTP_HOST", host), ("MAIL_FROM", sender)) if not value)
        raise MailNotConfigured(f"e-mail is not configured: set {missing} (environment variables "
                                f"{' and '.join(ENV_PREFIX + n for n in missing.split(' and '))}); "
                                "see the configuration reference in docs/how-to/deploy.md")
    security = (_setting(config, "SMTP_SECURITY") or "").lower()
    port_text = _setting(config, "SMTP_PORT")
    if not security:
        security = "ssl" if port_text == "465" else "starttls"
    if security not in SECURITIES:
        raise MailNotConfigured(f"SMTP_SECURITY is one of {', '.join(SECURITIES)}, not {security!r}")
    default_port = {"ssl": 465, "starttls": 587, "none": 25}[security]
    try:
        port = int(port_text) if port_text else default_port
        timeout = float(_setting(config, "SMTP_TIMEOUT") or DEFAULT_TIMEOUT)
    except ValueError:
        raise MailNotConfigured("SMTP_PORT is a whole number and SMTP_TIMEOUT a number of seconds") from None
    if not 0 < port < 65536 or not timeout > 0:
        raise MailNotConfigured(f"SMTP_PORT is from 1 to 65535 and SMTP_TIMEOUT above 0, got {port} and {timeout}")
    username, password = _setting(config, "SMTP_USER"), (config or {}).get("SMTP_PASSWORD") or os.environ.get(
        ENV_PREFIX + "SMTP_PASSWORD")
    if bool(username) != bool(password):
        raise MailNotConfigured("set both SMTP_USER and SMTP_PASSWORD, or neither")
    if "@" not in sender or any(ch in sender for ch in "\r\n"):
        raise MailNotConfigured(f"MAIL_FROM is an e-mail address (optionally 'Name <address>'), got {sender!r}")
    return MailConfig(host, port, security, sender, username, password, timeout)


def build_message(config: MailConfig, to: str, subject: str, body: str, html: str | None = None) -> EmailMessage:
    """Return the message: plain text (UTF-8), with an HTML alternative when ``html`` is given."""
    if any(ch in to + subject for ch in "\r\n"):
        raise MailError("an address or subject cannot span lines")
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = config.sender, to, subject
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=config.sender.rpartition("@")[2].strip(" >") or None)
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    return message


class Mailer:
    """One SMTP connection for many messages: ``with Mailer(config) as mailer: mailer.send(to, subject, body)``."""

    def __init__(self, config: MailConfig):
        self.config = config
        self._smtp: smtplib.SMTP | None = None

    def __enter__(self) -> "Mailer":
        self.connect()
        return self

    def __exit__(self, *exc_info):
        self.close()

    @property
    def connected(self) -> bool:
        """Whether the connection is open (False after the server closed it or it failed)."""
        return self._smtp is not None

    def connect(self):
        """Open the connection: TLS from the start (ssl) or upgraded (starttls), then sign in if configured."""
        config = self.config
        try:
            if config.security == "ssl":
                smtp = smtplib.SMTP_SSL(config.host, config.port, timeout=config.timeout,
                                        context=ssl.create_default_context())
            else:
                smtp = smtplib.SMTP(config.host, config.port, timeout=config.timeout)
            try:
                if config.security == "starttls":
                    smtp.starttls(context=ssl.create_default_context())
                if config.username:
                    smtp.login(config.username, config.password)
            except BaseException:
                smtp.close()
                raise
        except (OSError, smtplib.SMTPException) as exc:
            raise MailError(f"cannot reach the SMTP server {config.host}:{config.port} "
                            f"({config.security}): {_reason(exc)}") from None
        self._smtp = smtp

    def send(self, to: str, subject: str, body: str, html: str | None = None):
        """Send one message; raise MailError if the server refuses it (the connection stays usable if it can)."""
        if self._smtp is None:
            self.connect()
        try:
            refused = self._smtp.send_message(build_message(self.config, to, subject, body, html))
        except smtplib.SMTPServerDisconnected as exc:
            self._smtp = None
            raise MailError(f"the SMTP server closed the connection: {_reason(exc)}") from None
        except (OSError, smtplib.SMTPException) as exc:
            if isinstance(exc, OSError):
                self.close()
            raise MailError(_reason(exc)) from None
        if refused:
            raise MailError(f"refused: {_reason(next(iter(refused.values())))}")

    def close(self):
        """Say QUIT and close the connection (quietly if it is already gone)."""
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            try:
                smtp.quit()
            except (OSError, smtplib.SMTPException):
                smtp.close()


def send_message(config: MailConfig, to: str, subject: str, body: str, html: str | None = None):
    """Send one message on a connection of its own; raise MailError if it is not sent."""
    with Mailer(config) as mailer:
        mailer.send(to, subject, body, html)


def _reason(exc) -> str:
    """Return the SMTP server's answer or the error, in one line."""
    if isinstance(exc, tuple) and len(exc) == 2:
        code, text = exc
        return f"{code} {text.decode('utf-8', 'replace') if isinstance(text, bytes) else text}"
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "; ".join(_reason(answer) for answer in exc.recipients.values())
    if isinstance(exc, smtplib.SMTPResponseException):
        return _reason((exc.smtp_code, exc.smtp_error))
    return " ".join(str(exc).split()) or type(exc).__name__
