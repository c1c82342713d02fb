#!/usr/bin/env bash
# The browser test of the threshold explorer (make test-browser): JupyterLab + Debian's
# chromium driven by Playwright. Installs chromium with apt when it is missing; never
# downloads a browser build (no `playwright install`). Screenshots: browser_artifacts/
# (override with TRUSS_BROWSER_ARTIFACTS). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-.venv/bin/python}"
bash scripts/install_browser.sh
exec "$PYTHON" -m pytest -q -p no:cacheprovider -m browser tests/browser "$@"
