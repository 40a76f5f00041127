#!/usr/bin/env bash
# Make sure the Graphviz `dot` binary is on PATH: diagrams render SVG/PNG with it.
# Installs it with the system package manager when that is permitted (root, or sudo
# without a password); otherwise says how and fails, so nothing half-works later.
set -euo pipefail
if command -v dot >/dev/null 2>&1; then
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
        echo "ensure-dot: installing Graphviz with apt-get" >&2
        $as_root apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -qq graphviz >/dev/null
    elif command -v dnf >/dev/null 2>&1; then
        $as_root dnf install -y -q graphviz
    elif command -v apk >/dev/null 2>&1; then
        $as_root apk add --quiet graphviz
    fi
elif command -v brew >/dev/null 2>&1; then
    brew install graphviz
fi
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
