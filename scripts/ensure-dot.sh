#!/usr/bin/env bash
# Make sure the Graphviz `dot` binary is on PATH: diagrams render SVG/PNG with it.
# Installs it with the system package manager when that is permitted (root, or sudo
# without a password); otherwise says how and fails, so nothing half-works later.
set -euo pipefail
if command -v dot >/dev/null 2>&1; then
    exit 0
fi
# shellcheck source=scripts/install-package.sh
. "$(dirname "$0")/install-package.sh"
install_package ensure-dot graphviz graphviz graphviz graphviz
if ! command -v dot >/dev/null 2>&1; then
    cat >&2 <<'MSG'
ensure-dot: the Graphviz `dot` binary is missing and could not be installed here.
Install it with your system package manager, then run the command again:
  Debian/Ubuntu: sudo apt-get install graphviz
  Fedora:        sudo dnf install graphviz
  macOS:         brew install graphviz
MSG
    exit 1
fi
