"""The process layer: serve the web app with gunicorn, embedded (no gunicorn command line, no config file).

* The caller binds the listening socket itself (:func:`listen`), so a busy port is one
  clear error before anything starts; gunicorn gets the socket as ``fd://N``.
* The app is created once in the master, before the workers fork (``preload_app``): the
  database migrations run once, and ``create_app`` closes every SQLite connection it
  opens, so the workers inherit none and open their own.
* ``gthread`` workers: ``workers`` processes of ``threads`` threads each, which read every
  request whole, under a deadline, before a thread takes it (``survey.web.buffering``):
  clients sending slowly hold no thread, and one not done within 10 s gets 408.
* Before each fork the master's objects (the app, numpy, scipy: about 110,000) are moved out
  of the garbage collector's generations (``gc.freeze``): a worker's full collection would
  otherwise walk them all, about 0.1 s with every request of that worker waiting, and the
  pages they live on stay shared with the master instead of being copied by the walk.
* Privacy: no access log, and the error log (stderr) never names a client address or holds a
  join link, invitation or API token (``log_privacy``).
* SIGTERM stops gracefully: the master closes its listening socket, requests in flight
  get up to :data:`GRACEFUL_TIMEOUT` seconds to finish, then the process exits 0.
  SIGINT (Ctrl+C) stops at once.
* A request whose declared Content-Length is over the app's ``MAX_CONTENT_LENGTH`` is
  answered 413 by the app without reading the body (see ``survey.web.limits``); here
  gunicorn is told not to invite the body (no ``100 Continue``) and to close the
  connection after the answer instead of draining the body for the next request.
"""

from __future__ import annotations

import gc
import logging
import os
import re
import socket
from collections.abc import Callable

from gunicorn import glogging
from gunicorn.app.base import BaseApplication

from . import log_privacy

DEFAULT_THREADS = 8
# More processes than this mostly add memory and SQLite write contention.
MAX_DEFAULT_WORKERS = 8
GRACEFUL_TIMEOUT = 30
KEEPALIVE = 5
# Close a kept-alive connection after this many requests, so that connections spread over the workers
# (survey.web.buffering.KEEPALIVE_REQUESTS; chosen by measurement, bench/README.md "Keep-alive").
KEEPALIVE_REQUESTS = 50
BACKLOG = 2048

_CLIENT_ADDRESS = re.compile(r"\bip=\S*?(?=:?(?:\s|$))")


def default_workers() -> int:
    """Return the default number of worker processes: the CPUs this process may use, 1 to 8."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        cpus = os.process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:  # pragma: no cover - platforms without affinity
        cpus = os.cpu_count()
    return max(1, min(cpus or 1, MAX_DEFAULT_WORKERS))


def listen(host: str, port: int, *, backlog: int = BACKLOG) -> socket.socket:
    """Return a TCP socket bound to host:port and listening; raise OSError if that is impossible.

    ``host`` is an IPv4 or IPv6 address (``::1`` or ``[::1]``) or a name; a name is
    bound to its first address. Nothing is left open when it fails.
    """
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    family, kind, proto, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as every server does on POSIX
        sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


def origin(host: str, port: int) -> str:
    """Return ``http://HOST:PORT`` (an IPv6 address in brackets)."""
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _redact(record: logging.LogRecord) -> bool:
    """Drop client addresses (gunicorn's ``ip=...``) from an error-log record; keep the record."""
    message = record.getMessage()
    if "ip=" in message:
        record.msg, record.args = _CLIENT_ADDRESS.sub("ip=(not logged)", message), ()
    return True


class PrivateLogger(glogging.Logger):
    """gunicorn's logger with no access log, and no client address or secret in the error log."""

    def setup(self, cfg):
        super().setup(cfg)
        self.error_log.addFilter(_redact)
        log_privacy.install(self.error_log)

    def access(self, resp, req, environ, request_time):
        """Log nothing: an access log would record who asked for what, and when."""


def _declared_length(req) -> int | None:
    for name, value in req.headers:
        if name == "CONTENT-LENGTH":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _oversized_request_hook(limit: int | None):
    """Return gunicorn's pre_request hook for requests declaring a body over ``limit`` bytes.

    The app answers them 413 without reading the body; this hook keeps gunicorn from
    reading it either: no ``100 Continue`` (the client is not invited to send it) and the
    connection closes after the answer rather than draining the body to reuse it.
    """

    def pre_request(worker, req):
        length = _declared_length(req)
        if limit is None or length is None or length <= limit:
            return
        if hasattr(req, "_expected_100_continue"):
            req._expected_100_continue = False
        req.must_close = True  # what req.force_close() does, in every gunicorn since 19

    return pre_request


def gunicorn_options(*, fd: int, workers: int, threads: int, max_body: int | None,
                     on_ready: Callable[[], None] | None = None,
                     on_worker: Callable[[object], None] | None = None) -> dict:
    """Return the gunicorn settings for serving on the listening socket ``fd``.

    ``on_worker(worker)`` runs in each worker process once it is initialised (after the fork).
    """

    def post_worker_init(worker):
        if on_worker is not None:
            on_worker(worker)

    def when_ready(server):
        if on_ready is not None:
            on_ready()

    def pre_fork(server, worker):
        gc.freeze()

    return {
        "bind": [f"fd://{fd}"],
        "worker_class": "survey.web.buffering.BufferingWorker",
        "workers": workers,
        "threads": threads,
        "preload_app": True,
        "graceful_timeout": GRACEFUL_TIMEOUT,
        "keepalive": KEEPALIVE,
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "info",
        "logger_class": PrivateLogger,
        "proc_name": "ldp-survey",
        "when_ready": when_ready,
        "pre_fork": pre_fork,
        "post_worker_init": post_worker_init,
        "pre_request": _oversized_request_hook(max_body),
        # gunicorn 25.1+ opens a control socket in $HOME by default; this server needs none.
        "control_socket_disable": True,
    }


class EmbeddedGunicorn(BaseApplication):
    """gunicorn running one already created WSGI app with the given settings only.

    It reads no configuration file, no command line and no GUNICORN_CMD_ARGS; settings
    the installed gunicorn does not know (newer ones) are left out.
    """

    def __init__(self, app, options: dict):
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self):
        return self.application


def serve(app, listener: socket.socket, *, workers: int | None = None, threads: int = DEFAULT_THREADS,
          on_ready: Callable[[], None] | None = None) -> None:
    """Serve ``app`` on the listening socket until SIGTERM or SIGINT; gunicorn takes the socket over.

    ``on_ready`` is called once in the master when it listens and starts its workers. Each
    worker leaves the WAL checkpoints to a thread of its own (``survey.web.db``), so that no
    request waits for one. Returns (or exits with status 0) after a graceful stop.
    """
    from . import buffering

    fd = listener.detach()  # gunicorn duplicates it and closes this descriptor
    if app.config.get("MAX_CONTENT_LENGTH"):
        buffering.MAX_BODY = app.config["MAX_CONTENT_LENGTH"]
    buffering.KEEPALIVE_REQUESTS = KEEPALIVE_REQUESTS
    stores = app.extensions.get("ldp_stores")
    options = gunicorn_options(fd=fd, workers=workers or default_workers(), threads=threads,
                               max_body=app.config.get("MAX_CONTENT_LENGTH"), on_ready=on_ready,
                               on_worker=stores.checkpoint_in_background if stores is not None else None)
    EmbeddedGunicorn(app, options).run()
