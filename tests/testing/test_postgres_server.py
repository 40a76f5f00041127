"""TemporaryPostgres: finding the server binaries, and what it says when it cannot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentfsm.testing import postgres_server
from agentfsm.testing.postgres_server import (
    PostgresUnavailableError,
    TemporaryPostgres,
    find_binaries,
)


def fake_bin(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True)
    for name in names:
        (directory / name).write_text('#!/bin/sh\necho $0 "$@"\n')
        (directory / name).chmod(0o755)
    return directory


@pytest.fixture
def no_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty PATH and no Debian directory."""
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(postgres_server, "_DEBIAN", tmp_path / "no-debian")
    return empty


def test_the_binaries_on_path_come_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = fake_bin(tmp_path / "bin", "initdb", "pg_ctl")
    monkeypatch.setenv("PATH", str(found))
    assert find_binaries() == found


def test_then_pg_config_then_the_newest_debian_version(tmp_path: Path, no_path: Path) -> None:
    debian = tmp_path / "no-debian"
    fake_bin(debian / "9" / "bin", "initdb", "pg_ctl")
    newest = fake_bin(debian / "15" / "bin", "initdb", "pg_ctl")
    fake_bin(debian / "16" / "bin", "initdb")  # no pg_ctl: not a usable version
    (debian / "extension").mkdir()
    assert find_binaries() == newest
    elsewhere = fake_bin(tmp_path / "pg" / "bin", "initdb", "pg_ctl")
    (no_path / "pg_config").write_text(f"#!/bin/sh\necho {elsewhere}\n")
    (no_path / "pg_config").chmod(0o755)
    assert find_binaries() == elsewhere


def test_missing_binaries_say_how_to_install_them(no_path: Path) -> None:
    (no_path / "pg_config").write_text("#!/bin/sh\nexit 1\n")
    (no_path / "pg_config").chmod(0o755)
    with pytest.raises(PostgresUnavailableError, match="apt-get install postgresql"):
        find_binaries()


def test_as_root_without_a_postgres_user_it_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(fake_bin(tmp_path / "bin", "initdb", "pg_ctl")))
    monkeypatch.setattr(os, "geteuid", lambda: 0)

    def no_user(name: str) -> None:
        raise KeyError(name)

    monkeypatch.setattr(postgres_server.pwd, "getpwnam", no_user)
    with pytest.raises(PostgresUnavailableError, match="no 'postgres' user"):
        TemporaryPostgres()


def test_a_failing_command_is_reported_with_its_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    found = fake_bin(tmp_path / "bin", "pg_ctl")
    (found / "initdb").write_text("#!/bin/sh\necho 'initdb: cannot be run as root' >&2\nexit 1\n")
    (found / "initdb").chmod(0o755)
    monkeypatch.setenv("PATH", str(found))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # as an ordinary user: run directly
    server = TemporaryPostgres()
    try:
        with pytest.raises(PostgresUnavailableError, match=r"initdb failed \(1\): .*as root"):
            server.start()
    finally:
        server.stop()
    assert not server.directory.exists()
