#!/usr/bin/env bash
# Make sure the PostgreSQL server binaries (initdb, pg_ctl) are installed: the tests start a
# throwaway server of their own with them (agentfsm.testing.postgres_server). Installs them
# with the system package manager when that is permitted (root, or sudo without a
# password); otherwise says how and fails, so no PostgreSQL test is ever skipped.
set -euo pipefail
found() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        return 0
    fi
    if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
        return 0
    fi
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}
if found; then
    exit 0
fi
as_root=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        as_root="sudo -n"
    fi
fi
if [ "$(id -u)" -eq 0 ] || [ -n "$as_root" ]; then
    if command -v apt-get >/dev/null 2>&1; then
        echo "ensure-postgres: installing the PostgreSQL server with apt-get" >&2
        $as_root apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive $as_root apt-get -o DPkg::Lock::Timeout=600 \
            install -y -qq postgresql >/dev/null
    elif command -v dnf >/dev/null 2>&1; then
        $as_root dnf install -y -q postgresql-server
    elif command -v apk >/dev/null 2>&1; then
        $as_root apk add --quiet postgresql
    fi
elif command -v brew >/dev/null 2>&1; then
    brew install postgresql
fi
if ! found; then
    cat >&2 <<'MSG'
ensure-postgres: the PostgreSQL server (initdb, pg_ctl) is missing and could not be
installed here. Install it with your system package manager, then run the command again:
  Debian/Ubuntu: sudo apt-get install postgresql
  Fedora:        sudo dnf install postgresql-server
  macOS:         brew install postgresql
MSG
    exit 1
fi
