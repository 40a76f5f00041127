#!/usr/bin/env bash
# Make sure a Chromium browser is installed: the live view's tests drive it headless with
# Playwright (through executable_path; Playwright never downloads a browser here). Installs
# the distribution's package when that is permitted (root, or sudo without a password);
# otherwise says how and fails, so no test is skipped for want of it.
set -euo pipefail
found() { command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; }
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
        echo "ensure-chromium: installing chromium with apt-get" >&2
        $as_root apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive $as_root apt-get -o DPkg::Lock::Timeout=600 \
            install -y -qq chromium >/dev/null
    elif command -v dnf >/dev/null 2>&1; then
        $as_root dnf install -y -q chromium
    elif command -v apk >/dev/null 2>&1; then
        $as_root apk add --quiet chromium
    fi
fi
if ! found; then
    cat >&2 <<'MSG'
ensure-chromium: no `chromium` browser, and it could not be installed here.
The live view's tests need it. Install it with your system package manager, then run
the command again:
  Debian/Ubuntu: sudo apt-get install chromium
  Fedora:        sudo dnf install chromium
Or point AGENTFSM_CHROMIUM at a Chromium or Chrome binary.
MSG
    exit 1
fi
