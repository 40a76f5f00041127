"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` and ``pg_ctl`` in a temp dir.

`TemporaryPostgres` initialises a cluster in a fresh temporary directory, starts it listening
only on a Unix socket in that directory (no TCP port at all), hands out fresh databases by
URL, and stops it and removes the directory at the end::

    with TemporaryPostgres() as server:
        url = server.new_database()  # postgresql://agentfsm@/db_1?host=/tmp/...
        with PostgresStore(url) as store:
            ...

``initdb`` and ``pg_ctl`` refuse to run as root: as root they run as the ``postgres`` system
user (which Debian's package creates) on a directory it owns. The binaries are looked up on
``PATH``, then in ``pg_config --bindir``, then in Debian's ``/usr/lib/postgresql/N/bin``.
Creating databases needs psycopg (the ``postgres`` extra); starting the server does not.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

SUPERUSER = "agentfsm"
"""The cluster's superuser role (trust authentication on the socket: it is the tests')."""

_DEBIAN = Path("/usr/lib/postgresql")


class PostgresUnavailableError(RuntimeError):
    """The PostgreSQL server binaries are not installed, or cannot be run here."""


def find_binaries() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``.

    Raises:
        PostgresUnavailableError: Neither is found; the message says how to install them.
    """
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("pg_ctl") is not None:
        return Path(on_path).resolve().parent
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if done.returncode == 0:
            candidates.append(Path(done.stdout.strip()))
    if _DEBIAN.is_dir():
        versions = [p for p in _DEBIAN.iterdir() if p.name.isdigit()]
        candidates += [p / "bin" for p in sorted(versions, key=lambda p: -int(p.name))]
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    raise PostgresUnavailableError(
        "the PostgreSQL server (initdb, pg_ctl) is not installed: run scripts/ensure-postgres.sh "
        "or install it (Debian/Ubuntu: apt-get install postgresql; macOS: brew install "
        "postgresql)"
    )


class TemporaryPostgres:
    """A PostgreSQL server of its own, in a temporary directory, for one test session.

    Args:
        durable: Keep PostgreSQL's defaults (``fsync`` on), as a benchmark should; by default
            ``fsync`` is off, which only matters if the machine itself crashes and makes
            tests faster. Committed transactions survive the death of a client either way.

    Raises:
        PostgresUnavailableError: The server binaries are missing, or as root there is no
            ``postgres`` user to run them as.
    """

    def __init__(self, *, durable: bool = False) -> None:
        self.bin = find_binaries()
        self.durable = durable
        self._as: list[str] = []
        self._owner: tuple[int, int] | None = None
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PostgresUnavailableError(
                    "running as root, and there is no 'postgres' user to run initdb and "
                    "pg_ctl as (they refuse root)"
                ) from exc
            self._as = ["runuser", "-u", "postgres", "--"]
            self._owner = (user.pw_uid, user.pw_gid)
        self.directory = Path(tempfile.mkdtemp(prefix="agentfsm-pg-"))
        """Holds the cluster (``data``), its Unix socket and its log."""
        self.data = self.directory / "data"
        self.socket_dir = self.directory
        self._names = itertools.count(1)
        self._started = False

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self._as, *command], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise PostgresUnavailableError(
                f"{Path(command[0]).name} failed ({done.returncode}): "
                f"{done.stderr.strip() or done.stdout.strip()}"
            )

    def start(self) -> TemporaryPostgres:
        """Initialise the cluster and start the server; returns self."""
        if self._owner is not None:
            os.chown(self.directory, *self._owner)
        self.directory.chmod(0o755)
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER,
            "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions",
        )  # fmt: skip
        self._start_server()
        return self

    def _start_server(self) -> None:
        settings = f"-k {self.socket_dir} -c listen_addresses='' -c max_connections=200"
        if not self.durable:
            settings += " -c fsync=off -c full_page_writes=off"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.directory / "log"),
            "-o", settings, "-w", "-t", "60", "start",
        )  # fmt: skip
        self._started = True

    def crash(self) -> None:
        """Stop the server as a crash would (``pg_ctl stop -m immediate``); its data stays.

        Every connection is cut at once and the socket is gone until `restart`.
        """
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self._started = False

    def restart(self) -> None:
        """Start the server again after `crash`, on the same socket (it recovers its data)."""
        self._start_server()

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on this server (over its Unix socket)."""
        return f"postgresql://{SUPERUSER}@/{database}?host={quote(str(self.socket_dir))}"

    def new_database(self, owner: str = SUPERUSER) -> str:
        """Create a new, empty database owned by ``owner`` and return its URL."""
        import psycopg  # the postgres extra; only needed from here on

        name = f"db_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            # FILE_COPY (PostgreSQL 15+) makes a small database several times faster
            fast = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
            conn.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"{fast}')
        return self.url(name)

    def password_role(self, name: str, password: str) -> str:
        """Create a login role that must give ``password``, and a database it owns.

        Returns the database's URL for the role, without the password (add it as
        ``user:password@`` to connect). The role's socket connections need the password
        (``scram-sha-256``); the superuser's stay trusted.
        """
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE \"{name}\" LOGIN PASSWORD '{password}'")
            hba = self.data / "pg_hba.conf"
            hba.write_text(f"local all {name} scram-sha-256\n" + hba.read_text())
            conn.execute("SELECT pg_reload_conf()")
        return self.new_database(owner=name).replace(f"{SUPERUSER}@", f"{name}@", 1)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory; harmless twice."""
        if self._started:
            self._started = False
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> TemporaryPostgres:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
