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
# shellcheck source=scripts/install-package.sh
. "$(dirname "$0")/install-package.sh"
install_package ensure-postgres postgresql postgresql-server postgresql postgresql
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
