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
# shellcheck source=scripts/install-package.sh
. "$(dirname "$0")/install-package.sh"
install_package ensure-chromium chromium chromium chromium ""
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
