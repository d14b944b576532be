#!/usr/bin/env bash
# The web client in a real browser: Debian's chromium and chromedriver driven by Selenium (pytest,
# Tests/web/), against a server started by the tests, each page's main flows at phone width
# (412 px), screenshots saved to docs/screenshots/; then hubbub.js's unit tests under Node.
#
#   scripts/test-web.sh [pytest args...]
#
# Environment: HB_BIN (default .build/release/hubbub), HUBBUB_WEB_ROOT (serve the pages from
# this directory instead of those built in: edit and rerun without a rebuild).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_apt chromium chromium-driver nodejs
ensure_venv websockets selenium pytest gtfs-realtime-bindings
[[ -x "${HB_BIN}" ]] || die "build first: swift build -c release ($HB_BIN is missing)"

log "hubbub.js unit tests (node --test)"
node --test Tests/web/

log "pages in headless Chromium (pytest Tests/web)"
export SE_OFFLINE=true # Selenium Manager must not look for drivers on the internet: chromedriver is Debian's
"$VENV_PY" -m pytest -q -p no:cacheprovider Tests/web "$@"
