"""No join link, invitation or API token reaches a log line: the app's, the 503 handler's or gunicorn's."""

from __future__ import annotations

import logging

import pytest

from survey.store import Store, StoreUnavailable
from survey.web.log_privacy import scrub

JOIN_TOKEN = "Zq3v9xW2bA7kLmN0pQrStUvWxYz123456789-_abcde"
INVITE = "inv4Xy9secret"
API_TOKEN = "ldps_" + "A1b2C3d4" * 5


def test_scrub_hides_every_kind_of_secret_and_keeps_the_rest():
    line = (f"GET /join/{JOIN_TOKEN} then /login?next=%2Fjoin%2F{JOIN_TOKEN} and /s/poll?invite={INVITE}&lang=de "
            f"with Authorization: Bearer {API_TOKEN} or {API_TOKEN}")
    clean = scrub(line)
    for secret in (JOIN_TOKEN, INVITE, API_TOKEN, API_TOKEN[5:]):
        assert secret not in clean
    assert clean.startswith("GET /join/(hidden) then /login?next=%2Fjoin%2F(hidden)")
    assert "/s/poll?invite=(hidden)&lang=de" in clean and "Bearer (hidden)" in clean
    assert scrub("GET /surveys/smoking-2026/results 503") == "GET /surveys/smoking-2026/results 503"


def test_the_503_of_a_join_link_logs_its_cause_but_not_its_token(app, monkeypatch, caplog):
    def fails(self, token):
        raise StoreUnavailable("the database cannot take requests now (disk full)", cause="disk full")

    monkeypatch.setattr(Store, "join_invitation", fails)
    with caplog.at_level(logging.INFO):
        response = app.test_client().get(f"/join/{JOIN_TOKEN}?invite={INVITE}")
    assert response.status_code == 503
    assert "store unavailable (disk full): GET /join/(hidden)" in caplog.text
    assert JOIN_TOKEN not in caplog.text and INVITE not in caplog.text


def broken_page(app, monkeypatch, caplog, method: str, breaks, path: str):
    """GET ``path`` with the store's ``method`` replaced by ``breaks`` (which raises); assert a 500 and return it."""
    monkeypatch.setattr(Store, method, breaks)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    with caplog.at_level(logging.INFO):
        response = app.test_client().get(path)
    assert response.status_code == 500
    return response


def test_an_unexpected_error_on_a_join_link_logs_no_token(app, monkeypatch, caplog):
    def breaks(self, token):
        raise RuntimeError(f"unexpected while reading {token}")

    broken_page(app, monkeypatch, caplog, "join_invitation", breaks, f"/join/{JOIN_TOKEN}")
    assert "Exception on /join/(hidden) [GET]" in caplog.text and "RuntimeError" in caplog.text
    assert JOIN_TOKEN not in caplog.text


def gunicorn_error_log(write) -> list[str]:
    """Return the lines gunicorn's error log (the server's PrivateLogger) writes while ``write(logger)`` runs."""
    from gunicorn.config import Config

    from survey.web.server import PrivateLogger

    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(self.format(record))

    logger = PrivateLogger(Config())
    handler = Collect()
    logger.error_log.addHandler(handler)
    try:
        write(logger)
    finally:
        logger.error_log.removeHandler(handler)
    return records


def test_gunicorns_error_log_holds_no_token():
    def fail(logger):
        try:
            raise ValueError(f"bad request line /join/{JOIN_TOKEN}")
        except ValueError:
            logger.exception("Error handling request /join/%s?invite=%s", JOIN_TOKEN, INVITE)

    text = "\n".join(gunicorn_error_log(fail))
    assert "Error handling request /join/(hidden)?invite=(hidden)" in text and "ValueError" in text
    assert JOIN_TOKEN not in text and INVITE not in text


PANEL_QUERY = "PROLIFIC_PID=planted123&STUDY_ID=study456&SESSION_ID=sess789&lang=de"


def test_a_respondent_pages_query_values_are_hidden_but_its_language_and_other_pages_kept():
    access = f'127.0.0.1 - - [26/Nov/2026 13:00:00] "GET /s/panel-study?{PANEL_QUERY} HTTP/1.1" 200 -'
    clean = scrub(access)
    assert "planted123" not in clean and "study456" not in clean and "sess789" not in clean
    assert "/s/panel-study?PROLIFIC_PID=(hidden)&STUDY_ID=(hidden)&SESSION_ID=(hidden)&lang=de HTTP/1.1" in clean
    assert scrub("/s/p/design.json?rid=abc;x&y=1") == "/s/p/design.json?rid=(hidden);x&y=(hidden)"
    assert scrub("GET /surveys/p/test?PROLIFIC_PID=planted123") == "GET /surveys/p/test?PROLIFIC_PID=(hidden)"
    assert scrub("GET /surveys/p/results?level=0.9") == "GET /surveys/p/results?level=0.9"


def test_an_unexpected_error_on_a_panel_link_logs_no_participant_id(app, monkeypatch, caplog):
    from flask import request

    def breaks(self, slug):
        raise RuntimeError(f"unexpected while reading {request.full_path} for {request.args['PROLIFIC_PID']}")

    response = broken_page(app, monkeypatch, caplog, "get_design", breaks, f"/s/panel-study?{PANEL_QUERY}")
    assert "Exception on /s/panel-study [GET]" in caplog.text and "RuntimeError" in caplog.text
    for value in ("planted123", "study456", "sess789"):
        assert value not in caplog.text and value not in response.get_data(as_text=True)


def test_gunicorns_error_log_holds_no_participant_id():
    records = gunicorn_error_log(lambda logger: logger.error("Error handling request /s/panel-study?%s", PANEL_QUERY))
    assert records and "planted123" not in records[0] and "/s/panel-study?PROLIFIC_PID=(hidden)" in records[0]
