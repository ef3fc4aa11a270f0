"""A throwaway PostgreSQL cluster for the tests: initdb in a temporary directory, started on a free port.

Debian's server binaries (package ``postgresql``, installed by .ci/run) are found under
/usr/lib/postgresql/<version>/bin, or on PATH, or in $LDP_SURVEY_PG_BIN. The server refuses to
run as root, so as root the cluster belongs to the unprivileged user ``nobody``. Anything that
goes wrong raises ClusterError with the server's own log: the tests then fail with the reason,
they never skip.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

UNPRIVILEGED = "nobody"
START_TIMEOUT = 60


class ClusterError(RuntimeError):
    """The cluster could not be made, started or stopped (the message says why)."""


def server_binaries() -> Path:
    """Return the directory of initdb, pg_ctl and postgres."""
    configured = os.environ.get("LDP_SURVEY_PG_BIN")
    candidates = [configured] if configured else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name),
                         reverse=True)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise ClusterError("PostgreSQL's server binaries (initdb, pg_ctl) were not found: install Debian's "
                       "`postgresql` package (.ci/run does) or set LDP_SURVEY_PG_BIN")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """One PostgreSQL server on 127.0.0.1:``port`` with its data in ``directory`` (trust authentication, user postgres)."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.data = self.directory / "data"
        self.log = self.directory / "server.log"
        self.port = _free_port()
        self.bin = server_binaries()
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            self._as_user = ["runuser", "-u", UNPRIVILEGED, "--"]

    def _run(self, *command: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess:
        result = subprocess.run([*self._as_user, *command], capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise ClusterError(f"{' '.join(command[:2])} failed ({result.returncode}): "
                               f"{result.stderr.strip() or result.stdout.strip()}\n{log}")
        return result

    def create(self):
        """Make the cluster's files (initdb) in a directory the server's user owns."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.data.mkdir()
        self.log.touch()
        if self._as_user:
            for path in (self.directory, self.data, self.log):
                shutil.chown(path, UNPRIVILEGED)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-sync", "--no-instructions")
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.directory}'\nmax_connections = 300\n"
                       "shared_buffers = 64MB\nfsync = off\nfull_page_writes = off\n")

    def start(self):
        """Start the server and wait until it accepts connections."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t",
                  str(START_TIMEOUT), "start")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise ClusterError(f"PostgreSQL did not listen on port {self.port}:\n{self.log.read_text(errors='replace')}")

    def stop(self, mode: str = "fast"):
        """Stop the server (``fast``: end sessions, then shut down cleanly; ``immediate``: as a crash would)."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        """Return the URL of one of the cluster's databases."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """Create an empty database with a new name and return its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


    def drop_database(self, url: str):
        """Drop one of the cluster's databases, ending any session still connected to it."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def start_cluster(directory: Path) -> Cluster:
    """Make and start a cluster in ``directory``; raise ClusterError with the reason when it cannot."""
    cluster = Cluster(directory)
    cluster.create()
    cluster.start()
    return cluster
