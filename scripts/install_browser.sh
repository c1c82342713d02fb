#!/usr/bin/env bash
# Install Debian's chromium for the browser test (make test-browser) when it is missing.
# Only Debian's own package is used: no browser build is downloaded from anywhere else
# (never `playwright install`).
set -euo pipefail

CHROMIUM="${TRUSS_CHROMIUM:-/usr/bin/chromium}"

if [ -x "$CHROMIUM" ]; then
    echo "install_browser: $CHROMIUM already present: $("$CHROMIUM" --version 2>/dev/null || true)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "install_browser: $CHROMIUM is missing and we are not root (no sudo);" \
             "install Debian's chromium package by hand: apt-get install chromium" >&2
        exit 1
    fi
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core

if [ ! -x "$CHROMIUM" ]; then
    echo "install_browser: apt-get installed chromium but $CHROMIUM is still missing" >&2
    exit 1
fi
echo "install_browser: installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
