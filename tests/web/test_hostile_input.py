"""Hostile and malformed input to every route: a 4xx with a plain message, never a 500 or a traceback, nothing stored."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from werkzeug.security import generate_password_hash

from survey.store import Store

from conftest import OWNER, create_from_toml, definition, released_at_once
from test_ownership import ROUTE_VALUES, SLUG, signed_in

JSON_BODIES = [
    {"data": "not json", "content_type": "application/json"},
    {"data": "5", "content_type": "application/json"},
    {"data": "[1, 2]", "content_type": "application/json"},
    {"data": '{"email": {"a": 1}, "label": [1], "days": NaN}', "content_type": "application/json"},
]


def _fill(rule: str) -> str:
    """Return a path of ``rule`` with the survey's slug and a plain value for every other argument."""
    def value(match):
        choices, name = match.group(1), match.group(2)
        return choices.split(",")[0].strip() if choices else ROUTE_VALUES.get(name, "x")
    return re.sub(r"<(?:any\(([^)]*)\):|[^<>:]+:)?(\w+)>", value, rule)


def form_posts(app):
    """Yield the path of every POST route that takes a form (not the respondent's, interviewer's or sandbox JSON)."""
    for rule in app.url_map.iter_rules():
        if "POST" in rule.methods and not rule.rule.startswith("/s/") and not rule.rule.endswith("/test/responses"):
            yield _fill(rule.rule)


def csrf_token(client) -> str:
    """Return the CSRF token of the signed-in client's session (from its survey list)."""
    page = client.get("/surveys").get_data(as_text=True)
    return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)


def survey_state(db_path) -> tuple:
    """Return what a form post could change: the survey's status, its people and the owner's tokens."""
    store = Store(db_path)
    try:
        return (store.survey_status(SLUG), store.collaborators(SLUG),
                len(store.list_tokens(store.get_user(OWNER[0])["id"])))
    finally:
        store.close()


def test_a_json_body_to_a_form_route_is_a_4xx_with_or_without_a_token(app, db_path, accounts):
    """Flask-WTF reads a JSON body as the form: a non-object was a TypeError, bad JSON a 500 from the error page."""
    owner = signed_in(app, *OWNER)
    token = csrf_token(owner)
    before = survey_state(db_path)
    paths = list(form_posts(app))
    assert {"/logout", "/surveys/smoking-2026/publish", "/account/tokens", "/surveys/build/preview.json"} <= set(paths)
    for path in paths:
        for body in JSON_BODIES:
            for headers in ({}, {"X-CSRFToken": token}):
                response = owner.post(path, headers=headers, **body)
                assert 400 <= response.status_code < 500, (path, body, headers, response.status_code)
                assert "Traceback" not in response.get_data(as_text=True)
    assert survey_state(db_path) == before


HUGE = "9" * 30


@pytest.mark.both_backends
def test_an_id_too_large_for_the_database_names_nothing(app, db_path, accounts):
    """A row id past 2**63 overflowed SQLite's INTEGER: a 500 instead of "no such" for tokens, join links, sessions."""
    owner = signed_in(app, *OWNER)
    token = csrf_token(owner)
    before = survey_state(db_path)
    for path, form in ((f"/surveys/{SLUG}/interviews/{HUGE}/end", {}),
                       (f"/surveys/{SLUG}/interviews/{2**63}/end", {}),
                       ("/account/tokens/revoke", {"token_id": HUGE}),
                       ("/account/tokens/revoke", {"token_id": "²"}),
                       (f"/surveys/{SLUG}/collaborators/revoke", {"invitation": HUGE})):
        response = owner.post(path, data={"csrf_token": token, **form}, follow_redirects=True)
        assert response.status_code in (200, 404), (path, form, response.status_code)
        assert "Traceback" not in response.get_data(as_text=True)
    assert survey_state(db_path) == before


def test_an_error_page_never_reads_the_requests_json_body(app, accounts):
    """The sandbox takes JSON; its 404 page for an unknown survey built the sign-out form from that body (a 500)."""
    owner = signed_in(app, *OWNER)
    token = csrf_token(owner)
    for body in JSON_BODIES:
        response = owner.post("/surveys/nope/test/responses", headers={"X-CSRFToken": token}, **body)
        assert response.status_code == 404, (body, response.status_code)
        assert 'action="/logout"' in response.get_data(as_text=True)


def test_cancelling_an_invitation_link_of_non_ascii_text_names_none(app, db_path, accounts):
    """invite_hash encodes a token as ASCII: a pasted link with "é" in it was a UnicodeEncodeError (a 500)."""
    owner = signed_in(app, *OWNER)
    token = csrf_token(owner)
    for link in ("²", f"https://example.org/s/{SLUG}?invite=é", "\u202e"):
        response = owner.post(f"/surveys/{SLUG}/invitations/cancel", data={"csrf_token": token, "link": link},
                              follow_redirects=True)
        assert response.status_code == 200, (link, response.status_code)
        assert "That is no unused invitation link of this survey" in response.get_data(as_text=True)


@pytest.mark.both_backends
def test_a_nul_character_in_a_form_is_refused_not_a_500(app, db_path, accounts):
    """PostgreSQL's text cannot hold NUL: a sign-in, a token label or an e-mail with one must not reach the database."""
    nobody = app.test_client()
    page = nobody.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    response = nobody.post("/login", data={"csrf_token": token, "email": "a\x00@example.org", "password": "x\x00"})
    assert response.status_code in (200, 400), response.status_code
    forgot = nobody.post("/forgot", data={"csrf_token": token, "email": "a\x00@example.org"})
    assert forgot.status_code in (200, 302, 400), forgot.status_code
    for path in ("/s/a%00b", f"/s/{SLUG}?invite=%00", "/join/%00", "/reset/%00", f"/s/{SLUG}?lang=x&lang=%00"):
        assert nobody.get(path).status_code in (400, 404), path
    owner = signed_in(app, *OWNER)
    token = csrf_token(owner)
    before = survey_state(db_path)
    for path, form in (("/account/tokens", {"label": "lap\x00top"}),
                       (f"/surveys/{SLUG}/share", {"email": "a\x00@example.org"}),
                       (f"/surveys/{SLUG}/collaborators/invite", {"email": "a\x00@example.org"}),
                       (f"/surveys/{SLUG}/interviews", {"label": "tab\x00", "hours": "8", "allowance": "5"}),
                       (f"/surveys/{SLUG}/invitations/cancel", {"link": "\x00"})):
        response = owner.post(path, data={"csrf_token": token, **form}, follow_redirects=True)
        assert response.status_code < 500, (path, response.status_code)
    assert survey_state(db_path) == before


def database_dump(db_path) -> list[str]:
    """Return the SQLite database's contents as SQL lines (every table, every row), but /readyz's write probe."""
    import sqlite3

    conn = sqlite3.connect(db_path)
    try:
        return [line for line in conn.iterdump() if not line.startswith('INSERT INTO "readiness"')]
    finally:
        conn.close()


def test_every_post_route_refuses_a_missing_token_and_no_get_changes_anything(app, db_path, accounts):
    """Each state-changing route is POST-only and checks the CSRF token, the respondent's and interviewer's JSON
    posts aside (they check Sec-Fetch-Site); a GET of any route stores nothing."""
    owner = signed_in(app, *OWNER)
    before = database_dump(db_path)
    posts = []
    for rule in app.url_map.iter_rules():
        path = _fill(rule.rule)
        if rule.methods - {"GET", "HEAD", "OPTIONS"} and "POST" not in rule.methods:
            pytest.fail(f"{rule.rule} changes state with {sorted(rule.methods)}, not POST")
        if "GET" in rule.methods:
            assert owner.get(path).status_code < 500, path
        if "POST" in rule.methods and not rule.rule.startswith("/s/"):
            posts.append(path)
            for form in ({}, {"csrf_token": "forged"}):
                response = owner.post(path, data=form)
                assert response.status_code == 400, (path, form, response.status_code)
                text = response.get_data(as_text=True)
                assert "security token is missing or invalid" in text or "form expired" in text, path
    assert {f"/surveys/{SLUG}/revise", f"/surveys/{SLUG}/release", f"/surveys/{SLUG}/archive", f"/surveys/{SLUG}/delete",
            f"/surveys/{SLUG}/interviews", f"/surveys/{SLUG}/interviews/1/end", f"/surveys/{SLUG}/collaborators/remove",
            f"/surveys/{SLUG}/mail/invitation", "/account/password", "/account/tokens", "/forgot", "/reset/x"} <= set(posts)
    assert database_dump(db_path) == before


SCRIPT = "</script><script>alert(1)</script>"
ATTRIBUTE = '" onmouseover="alert(2)'


def hostile_definition() -> str:
    """Return tests/definitions/languages.toml (four languages, one right to left) with both payloads after every text."""
    payload = (SCRIPT + ATTRIBUTE).replace('"', '\\"')
    text = released_at_once(definition("languages"))
    text = re.sub(r'^((?:translations\.\w+\.)?(?:title|description|text) = )"([^"]*)"',
                  lambda m: f'{m.group(1)}"{m.group(2)}{payload}"', text, flags=re.M)
    return re.sub(r"^(options = \[)(.*)\]$", lambda m: m.group(1) + re.sub(
        r'"([^"]*)"', lambda o: f'"{o.group(1)}{payload}"', m.group(2)) + "]", text, flags=re.M)


class Injected(HTMLParser):
    """Collect what the payloads became markup as: a script element of theirs, or an onmouseover attribute."""

    def __init__(self):
        super().__init__()
        self.found, self.in_script = [], False

    def handle_starttag(self, tag, attrs):
        self.in_script = tag == "script"
        if any(name == "onmouseover" for name, _ in attrs):
            self.found.append(f"attribute of <{tag}>")

    def handle_data(self, data):
        if self.in_script and data.strip() == "alert(1)":
            self.found.append("script")


def unescaped(text: str) -> list[str]:
    """Return the payloads a page (HTML or SVG) holds as markup rather than as text."""
    parser = Injected()
    parser.feed(text)
    parser.close()
    return parser.found


def test_no_page_puts_a_surveys_or_a_persons_text_into_markup_in_any_language(app, db_path):
    """Titles, questions, options, token and interviewer labels and a collaborator's e-mail are escaped everywhere."""
    design = create_from_toml(db_path, hostile_definition())
    slug = design["slug"]
    assert SCRIPT in design["title"] and all(SCRIPT in option for option in design["questions"][1]["options"][:4])
    store = Store(db_path)
    try:
        store.add_user(OWNER[0], generate_password_hash(OWNER[1]))
        store.share(slug, OWNER[0])
        store.create_token(OWNER[0], (SCRIPT + ATTRIBUTE)[:60])
        store.start_interview(slug, label=ATTRIBUTE)
        store.invite_collaborator(slug, store.get_user(OWNER[0])["id"], f'{SCRIPT}"onmouseover="x@example.org')
    finally:
        store.close()
    owner = signed_in(app, *OWNER)
    pages = [f"/s/{slug}", f"/surveys/{slug}/results", f"/surveys/{slug}/test", f"/surveys/{slug}/sandbox",
             f"/surveys/{slug}/crosstab?a=smoker&b=transport", f"/surveys/{slug}/chart.svg",
             f"/surveys/{slug}/charts/transport.svg", "/surveys", "/account/tokens", f"/surveys/build?edit={slug}",
             f"/surveys/{slug}/delete"]
    for language in ("en", "fr", "es", "ar"):
        for page in pages:
            response = owner.get(f"{page}{'&' if '?' in page else '?'}lang={language}")
            text = response.get_data(as_text=True)
            assert response.status_code == 200 and "alert(2)" in text, (page, language, response.status_code)
            assert unescaped(text) == [], (page, language, unescaped(text))


def browser_target(location: str) -> str:
    """Return the host a browser goes to for a Location header (WHATWG: "\\" is "/", tabs and newlines dropped)."""
    from urllib.parse import urljoin, urlsplit

    cleaned = re.sub(r"[\t\n\r]", "", location).replace("\\", "/")
    return urlsplit(urljoin("http://localhost/login", cleaned)).netloc


@pytest.mark.parametrize("target", ["//evil.example", "https:evil.example", "\\\\evil.example", "/\\evil.example",
                                    "/\t/evil.example", "https://evil.example/", "///evil.example", "/%2F/evil.example",
                                    " //evil.example", "javascript:alert(1)"])
def test_signing_in_never_goes_to_another_site(app, accounts, target):
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    response = client.post("/login", query_string={"next": target},
                           data={"csrf_token": token, "email": OWNER[0], "password": OWNER[1]})
    assert response.status_code == 302 and browser_target(response.headers["Location"]) == "localhost", (
        target, response.headers["Location"])
