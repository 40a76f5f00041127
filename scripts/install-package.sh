# Sourced by the ensure-*.sh scripts: install a system package when that is permitted.
#
# install_package WHO APT DNF APK BREW: installs the package of that name with the first
# package manager found, as root, with sudo when it needs no password, or with Homebrew;
# does nothing where none of that is possible (the caller then says how and fails).
install_package() {
    local who=$1 apt=$2 dnf=$3 apk=$4 brew=$5 as_root=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            as_root="sudo -n"
        fi
    fi
    if [ "$(id -u)" -eq 0 ] || [ -n "$as_root" ]; then
        if command -v apt-get >/dev/null 2>&1; then
            echo "$who: installing $apt with apt-get" >&2
            $as_root apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
            DEBIAN_FRONTEND=noninteractive $as_root apt-get -o DPkg::Lock::Timeout=600 \
                install -y -qq "$apt" >/dev/null
        elif command -v dnf >/dev/null 2>&1; then
            $as_root dnf install -y -q "$dnf"
        elif command -v apk >/dev/null 2>&1; then
            $as_root apk add --quiet "$apk"
        fi
    elif [ -n "$brew" ] && command -v brew >/dev/null 2>&1; then
        brew install "$brew"
    fi
}
