"""Shared fixtures (flaskr style): a temporary database, the app, its client, a CLI runner, the example survey.

The browser tests also share a live server (`ldp-survey serve`, gunicorn, on 127.0.0.1) and headless Chromium;
`start_server` starts one more (tests/web/test_server.py). Shared steps: the command line on a test database
(`command_line`), a researcher's page signed in (`signed_in_page`), a respondent's page keeping what it sends
(`survey_page`, `watch_page`) and its first send lost (`lose_first_send`).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import werkzeug.security
from click.testing import CliRunner

from survey.core.definition import parse_definition_toml
from survey.core.design import build_design
from survey.store import Store

REPO = Path(__file__).resolve().parent.parent
# Passwords hashed in this process (fixtures, in-process commands and pages) use a cheap pbkdf2: werkzeug's
# default, scrypt, costs about 70 ms a hash and as much a sign-in, and the suite makes thousands. The product
# keeps werkzeug's default (test_passwords.py checks that its accounts are stored with scrypt); servers the
# tests start as processes of their own are not affected. Stored hashes name their method, so either checks.
PRODUCT_PASSWORD_HASH_DEFAULTS = werkzeug.security.generate_password_hash.__defaults__
werkzeug.security.generate_password_hash.__defaults__ = ("pbkdf2:sha256:1000", 16)
CHROMIUM = os.environ.get("LDP_SURVEY_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
# Survey definitions (or their [[questions]] blocks) that several test modules share.
DEFINITIONS = Path(__file__).resolve().parent / "definitions"


def definition(name: str) -> str:
    """Return the text of tests/definitions/``name``.toml."""
    return (DEFINITIONS / f"{name}.toml").read_text(encoding="utf-8")


def pytest_generate_tests(metafunc):
    """Run each test marked ``both_backends`` that uses a database on SQLite and on PostgreSQL.

    Every such test that uses ``db_path`` runs once on a SQLite file and once on a new database of
    the suite's own PostgreSQL cluster (``postgres_cluster``), unless it is marked ``sqlite_only``
    (it reads the SQLite file itself). A module opts in with ``pytestmark = pytest.mark.both_backends``.
    """
    if ("db_path" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_backends") is not None
            and metafunc.definition.get_closest_marker("sqlite_only") is None):
        metafunc.parametrize("backend", ["sqlite", "postgresql"], indirect=True)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Mark the PostgreSQL runs ``postgresql``; keep ``serial`` tests and each browser module on one xdist worker.

    Under ``-n`` (pytest-xdist, ``--dist loadgroup``) the tests marked ``serial`` (time-sensitive
    ones: load, floods, slow clients, killed servers, held locks) run one after another on one
    worker, and the tests of a module sharing a module-scoped live server or Chromium run on one
    worker, so each module starts them once.
    """
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "postgresql":
            item.add_marker(pytest.mark.postgresql)
        group = None
        if item.get_closest_marker("serial") is not None:
            group = "serial"
        elif {"live_server", "browser"} & set(getattr(item, "fixturenames", ())):
            group = item.module.__name__
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        if os.environ.get("PYTEST_XDIST_WORKER"):
            _give_unique_node_id(item, group)


def _give_unique_node_id(item, group: str | None):
    """Give the item the node id pytest-xdist schedules by: unique, with "@group" for --dist loadgroup.

    schemathesis names each operation's item "test[GET /path]" but gives them all one node id, so
    pytest-xdist ran only the first; and xdist's own "@group" suffix sets an attribute that this pytest
    no longer reads (``_nodeid``; the id is ``_id``), so its groups were ignored. Both are set here.
    """
    name = item.name if type(item).__name__ == "SchemathesisFunction" else item.nodeid.rsplit("::", 1)[-1]
    if group is None and name == item.nodeid.rsplit("::", 1)[-1]:
        return
    if "@" in name:
        return
    item._id = item.parent.id.child(name if group is None else f"{name}@{group}")


@pytest.fixture
def backend(request) -> str:
    """Return the database backend of the test: "sqlite" (the default) or "postgresql"."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgres_cluster():
    """Start a throwaway PostgreSQL cluster for the whole run (``tests/pg_cluster.py``); fail with the reason if it cannot."""
    from pg_cluster import ClusterError, start_cluster

    directory = Path(tempfile.mkdtemp(prefix="ldp-survey-pg-"))
    directory.chmod(0o755)
    try:
        cluster = start_cluster(directory / "cluster")
    except (ClusterError, OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.fail(f"could not start the tests' PostgreSQL: {exc}", pytrace=False)
    yield cluster
    from survey.store.postgres import close_pools

    close_pools()
    try:
        cluster.stop("immediate")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def new_postgres_database(cluster):
    """Yield the URL of a new database of the suite's cluster; close this process's pools of it and drop it after."""
    from survey.store.postgres import close_pools

    url = cluster.new_database()
    try:
        yield url
    finally:
        close_pools(url)
        cluster.drop_database(url)


@pytest.fixture
def pg_url(postgres_cluster):
    """Return the URL of a new database of the suite's cluster, dropped after the test."""
    with new_postgres_database(postgres_cluster) as url:
        yield url


@pytest.fixture
def db_path(request, tmp_path, backend):
    """Return a fresh, not yet created, database: a SQLite file's path, or on PostgreSQL a new database's URL."""
    if backend == "postgresql":
        with new_postgres_database(request.getfixturevalue("postgres_cluster")) as url:
            yield url
        return
    yield tmp_path / "test.db"


@pytest.fixture
def app(db_path):
    """Return the web app on the temporary database (CSRF protection on, no flood limit)."""
    from survey.web import create_app

    # No flood limit: some tests send hundreds of submissions (test_flood.py tests the limit).
    app = create_app({"TESTING": True, "DATABASE": str(db_path), "SECRET_KEY": "test", "MAX_SUBMISSIONS_PER_MINUTE": 0})
    yield app
    app.extensions["ldp_stores"].close_all()


@pytest.fixture
def client(app):
    """Return a Flask test client of the app."""
    return app.test_client()


@pytest.fixture
def cli_runner() -> CliRunner:
    """Return a click CliRunner (result.stdout and result.stderr are kept apart)."""
    return CliRunner()


def command_line(db, runner: CliRunner | None = None):
    """Return run(*args, code=0): ``ldp-survey --db DB ARGS…`` (each argument made a str) through ``runner``, asserted
    to exit with ``code``; it returns the command's stdout, or its stderr when ``code`` is not 0."""
    from survey.cli import main

    runner = runner or CliRunner()

    def run(*args, code: int = 0) -> str:
        result = runner.invoke(main, ["--db", str(db), *map(str, args)])
        assert result.exit_code == code, (result.output, result.exception)
        return result.stdout if code == 0 else result.stderr

    return run


def released_at_once(text: str) -> str:
    """Return a definition with ``release_every = 1`` after its slug line: every response counts at once.

    Most tests count each response as it arrives; tests/web/test_releases.py tests batches.
    """
    if re.search(r"^release_every\s*=", text, re.M):
        return text
    return re.sub(r'^(slug = "[^"]*")$', r"\1\nrelease_every = 1", text, count=1, flags=re.M)


def smoking_text() -> str:
    """Return examples/smoking.toml released after every response (``released_at_once``)."""
    return released_at_once((REPO / "examples" / "smoking.toml").read_text(encoding="utf-8"))


@pytest.fixture
def smoking_toml(tmp_path) -> Path:
    """Return the path of a copy of examples/smoking.toml released after every response (``released_at_once``)."""
    path = tmp_path / "smoking.toml"
    path.write_text(smoking_text(), encoding="utf-8")
    return path


def is_postgres(store) -> bool:
    """Return whether a Store is PostgreSQL's."""
    return getattr(store.conn, "dialect", "sqlite") == "postgresql"


def table_columns(store, table: str) -> list[str]:
    """Return a table's column names in order, on either backend."""
    if is_postgres(store):
        return [row[0] for row in store.conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ? ORDER BY ordinal_position", [table])]
    return [row[1] for row in store.conn.execute(f'PRAGMA table_info("{table}")')]


def table_names(store) -> list[str]:
    """Return the names of the database's tables, on either backend."""
    if is_postgres(store):
        return [row[0] for row in store.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")]
    return [row[0] for row in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]


def stored_count(db_path, slug: str) -> int:
    """Return how many responses the survey ``slug`` has stored (released or held for the next release)."""
    store = Store(db_path)
    try:
        state = store.release_state(slug)
        return state["released"] + state["held"]
    finally:
        store.close()


def create_from_toml(db_path, text: str, *, source: str = "<definition>") -> dict:
    """Create the survey of a TOML definition in the database file; return its design."""
    design = build_design(parse_definition_toml(text, source=source))
    store = Store(db_path)
    try:
        store.create_survey(text, design)
    finally:
        store.close()
    return design


@pytest.fixture
def smoking_survey(db_path, smoking_toml) -> dict:
    """Create the smoking survey in the temporary database and return its design."""
    return create_from_toml(db_path, smoking_toml.read_text(encoding="utf-8"), source=str(smoking_toml))


OWNER = ("owner@example.org", "owner password")
OTHER = ("other@example.org", "other password")


@pytest.fixture
def accounts(db_path, smoking_survey):
    """Create two researchers, OWNER and OTHER; OWNER owns the smoking survey."""
    from werkzeug.security import generate_password_hash

    store = Store(db_path)
    try:
        for email, password in (OWNER, OTHER):
            store.add_user(email, generate_password_hash(password))
        assert store.share(smoking_survey["slug"], OWNER[0]) == "owner"
    finally:
        store.close()


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A running `python -m survey serve` (gunicorn): its process, origin, port and log file (stderr)."""

    def __init__(self, process: subprocess.Popen, port: int, log: Path):
        self.process = process
        self.port = port
        self.origin = f"http://127.0.0.1:{port}"
        self.log = log

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 45) -> int:
        """Send ``sig`` (default SIGTERM: a graceful stop), wait, and return the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        return self.process.returncode


def wait_for_line(process: subprocess.Popen, prefix: bytes, timeout: float) -> bytes:
    """Return the first line of the process's stdout starting with ``prefix``; raise if it exits or times out."""
    buffer = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while True:
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.startswith(prefix):
                    return line
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise TimeoutError(f"no line starting with {prefix!r} within {timeout} s")
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError(f"the process exited (status {process.wait()}) before printing {prefix!r}")
            buffer += chunk


def start_server(db_path: Path, log: Path, *args: str, timeout: float = 30) -> ServerProcess:
    """Start `ldp-survey serve` on a free port of 127.0.0.1 and return once it printed its Serving line.

    stdout is a pipe read up to that line (the server prints nothing else there); stderr,
    gunicorn's error log, goes to the file ``log``.
    """
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    port = free_port()
    with log.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "survey", "--db", str(db_path), "serve",
                                    "--host", "127.0.0.1", "--port", str(port), *args],
                                   env=env, stdout=subprocess.PIPE, stderr=stderr, bufsize=0)
    server = ServerProcess(process, port, log)
    try:
        line = wait_for_line(process, b"Serving ", timeout)
    except (TimeoutError, EOFError) as exc:
        server.stop(signal.SIGKILL)
        raise RuntimeError(f"the server did not start: {exc}\n{server.log_text()[-3000:]}") from exc
    assert line.decode() == f"Serving {db_path} on {server.origin}/ (press Ctrl+C to stop)"
    return server


def create_smoking_db(db_path: Path):
    """Create the database with examples/smoking.toml (released after every response) through the CLI, as a user would."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    folder = Path(tempfile.mkdtemp()) if isinstance(db_path, str) else db_path.parent
    definition = folder / "smoking.toml"
    definition.write_text(smoking_text(), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "survey", "--db", str(db_path), "create", str(definition)],
                   check=True, env=env, capture_output=True)


def domain_report(question: dict, pick: int = 0):
    """Return a report in a design question's output domain, chosen by ``pick``, for requests made by hand.

    Built from the design, so it stays valid when a question gets another mechanism: the
    integer ``pick`` (modulo the domain) for rr and duchi (a bit), grr (an option index),
    piecewise, hybrid and opm (an output level); for the list reports, d bits with bit ``pick`` mod d set
    (oue, multi rr; sampled multi, which has at most one 1) or, for ss, ``subset_size``
    consecutive ones from there (wrapping). Not a randomization of any answer.
    """
    mechanism = question["mechanism"]
    if question["kind"] == "multi" or mechanism in ("oue", "ss"):
        d = len(question["options"])
        ones = question["subset_size"] if mechanism == "ss" else 1
        report = [0] * d
        for offset in range(ones):
            report[(pick + offset) % d] = 1
        return report
    size = {"rr": 2, "duchi": 2, "grr": len(question.get("options", ())), "piecewise": question.get("bins"),
            "hybrid": question.get("levels"), "opm": question.get("levels")}[mechanism]
    return pick % size


def domain_answers(design: dict, **picks: int) -> dict:
    """Return ``{QID: domain_report(question, pick)}`` for every question of the design (pick 0 unless given)."""
    return {q["id"]: domain_report(q, picks.get(q["id"], 0)) for q in design["questions"]}


# An invitation-only survey of one question (tests of invitations and admission).
PANEL_TOML = definition("panel")


def smoking_design() -> dict:
    """Return the design of examples/smoking.toml released after every response."""
    return build_design(parse_definition_toml(smoking_text(), source="examples/smoking.toml"))


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    """Start `ldp-survey serve` (gunicorn, 2 workers) on 127.0.0.1 with the smoking survey; yield {"origin", "db"}.

    One server per test module; the survey is examples/smoking.toml, slug smoking-2026; no flood limit.
    At the end it gets SIGTERM and must stop gracefully (exit status 0).
    """
    directory = tmp_path_factory.mktemp("browser")
    db_path = directory / "browser.db"
    create_smoking_db(db_path)
    # No flood limit: the load test sends hundreds of submissions from 127.0.0.1 (test_flood.py tests it).
    server = start_server(db_path, directory / "server.log", "--workers", "2", "--max-submissions-per-minute", "0")
    yield {"origin": server.origin, "db": db_path}
    status = server.stop()
    assert status == 0, f"the server stopped with status {status}:\n{server.log_text()[-3000:]}"


@pytest.fixture(scope="module")
def browser():
    """Launch headless Chromium (Debian's, or $LDP_SURVEY_CHROMIUM) through Playwright; one per test module."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


# Every rendered piece of text inside the elements matching a selector, with its size in CSS px on screen: the
# computed font size, times the element's on-screen scale for SVG text (a scaled SVG scales its text).
RENDERED_TEXT_SIZES_JS = """selector => {
  const sizes = [];
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode, element = node.parentElement;
      if (!node.textContent.trim() || element.closest('.visually-hidden')) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      if (range.getBoundingClientRect().width === 0) continue;
      const scale = element instanceof SVGElement ? Math.abs(element.getScreenCTM().a) : 1;
      sizes.push([parseFloat(getComputedStyle(element).fontSize) * scale, node.textContent.trim()]);
    }
  }
  return sizes;
}"""


def signed_in_page(browser, origin: str, email: str, password: str, *, width: int = 1280):
    """Return (context, page, errors): a Chromium page signed in as the researcher, collecting console errors."""
    context = browser.new_context(viewport={"width": width, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{origin}/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile("/surveys$"))
    return context, page, errors


def watch_page(page) -> tuple[list, list[str]]:
    """Return (bodies, errors), filled as the page runs: the JSON body of each request it POSTs, each page error."""
    bodies: list = []
    errors: list[str] = []

    def keep_body(request):
        if request.method == "POST":
            bodies.append(json.loads(request.post_data))

    page.on("request", keep_body)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return bodies, errors


def survey_page(browser, url: str, *, width: int | None = None):
    """Return (context, page, bodies, errors): a new Chromium context's page on ``url``, watched (``watch_page``).

    ``width`` sets a viewport ``width`` x 800 px; without it the context keeps Playwright's default viewport.
    """
    context = browser.new_context(**({"viewport": {"width": width, "height": 800}} if width else {}))
    page = context.new_page()
    bodies, errors = watch_page(page)
    page.goto(url)
    return context, page, bodies, errors


def lose_first_send(page, url: str, *, delivered: bool = False) -> list:
    """Route the page's requests to ``url`` so that the first never gets its answer and the later ones go through.

    The first is aborted as refused or, with ``delivered``, passed on to the server (which stores it) and then
    aborted as reset, so the page never hears the reply. Return a list that then holds what became of the
    first: the server's status code if delivered, else "refused".
    """
    fates: list = []

    def route_it(route):
        if fates:
            route.continue_()
        elif delivered:
            fates.append(route.fetch().status)
            route.abort("connectionreset")
        else:
            fates.append("refused")
            route.abort("connectionrefused")

    page.route(url, route_it)
    return fates
