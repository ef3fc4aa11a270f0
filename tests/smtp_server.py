"""A real SMTP server on localhost for the tests (aiosmtpd), and what it received.

``smtp_server()`` starts one on a free port in a thread and yields its Inbox: the messages
it accepted, parsed. A recipient whose address contains "refuse" is refused with 550, as a
real server refuses an unknown mailbox.
"""

from __future__ import annotations

import email
import email.policy
import gc
import re
import threading
import warnings
from contextlib import contextmanager

from aiosmtpd.controller import Controller

from conftest import free_port

LINK = re.compile(r"https?://\S+")


class Inbox:
    """The aiosmtpd handler: keeps every accepted message; refuses recipients containing "refuse"."""

    def __init__(self):
        self.messages: list[email.message.EmailMessage] = []
        self._lock = threading.Lock()
        self.port = 0
        self.stop = None

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if "refuse" in address:
            return "550 5.1.1 no such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._lock:
            for _ in envelope.rcpt_tos:
                self.messages.append(message)
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list:
        """Return the messages addressed to ``address``."""
        with self._lock:
            return [m for m in self.messages if m["To"] == address]

    def links(self, address: str) -> list[str]:
        """Return the links in the plain-text bodies of the messages to ``address``."""
        return [link for m in self.to(address) for link in LINK.findall(m.get_body(("plain",)).get_content())]

    def clear(self):
        with self._lock:
            self.messages.clear()


@contextmanager
def smtp_server():
    """Run an SMTP server on 127.0.0.1 on a free port; yield its Inbox (``inbox.port``)."""
    inbox = Inbox()
    inbox.port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port, ready_timeout=10)
    controller.start()
    inbox.stop = controller.stop
    try:
        yield inbox
    finally:
        # aiosmtpd leaves the transport of a connection still open when it stops (a client a test cut off)
        # to the garbage collector: collected here, its ResourceWarning is not raised in a later test.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            if controller._thread is not None:
                controller.stop()
            gc.collect()


def mail_settings(port: int) -> dict:
    """Return the app settings of the test server: plain SMTP on localhost, no account."""
    return {"SMTP_HOST": "127.0.0.1", "SMTP_PORT": str(port), "SMTP_SECURITY": "none",
            "MAIL_FROM": "Survey team <surveys@example.org>"}
