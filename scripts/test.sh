#!/usr/bin/env bash
# The whole test suite, exactly what CI runs (.ci/run calls this):
#   1. installs what the build and tests need (Debian packages, a Python venv),
#   2. one release build of everything (server, load generator, test targets),
#   3. swift test (codec unit tests, transport and server integration tests),
#   4. the server's use-case tests again on PostgreSQL (a fresh cluster, scripts/test-postgres.sh),
#      with three nodes in the test process (ClusterTests), then three node processes with
#      kill -9 and a PostgreSQL restart, and kill -9 of the intel shards' owner during a provider
#      burst (scripts/test-cluster.sh),
#      interop with Python's websockets library (ws/wss, with and without compression),
#      kill -9 during a vote storm, during a burst of intel posts, likes, comments and links
#      (nothing acknowledged lost, nothing counted twice) and during an event-feed ingest (the
#      store consistent, users' tonight state kept), GTFS and GTFS-Realtime ingest end to end
#      (alerts as intel in each reader's language, updates and ends, hostile zips and messages,
#      the poller's conditional GETs, failures and recovery), hostile input (a bystander's p99 while
#      four clients without an account send the costliest messages the limits allow, and while 200
#      connections log in at once; misspelt settings stopping the start; a full tmpfs data dir while
#      patrons vote: /healthz 503 and back, nothing acknowledged lost), and the load harness end to end
#      (the smoke scenario's thresholds, comparison mode, exit status),
#   5. the whole Autobahn|Testsuite (kosoku) against /echo,
#   6. headless Chromium against /echo over ws:// and wss://, and the web client's pages in
#      Chromium through Selenium (scripts/test-web.sh: each page's flows at phone width, two
#      browsers at one venue, a server restart, hostile titles; hubbub.js's unit tests under Node),
#   7. a short libFuzzer run over the parsers.
# Set SKIP_SLOW=1 to stop after step 4 while iterating locally (CI never sets it).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_apt libssl-dev zlib1g-dev libxml2-dev libsqlite3-dev pkg-config openssl python3-venv curl

log "building (release, with tests)"
swift build -c release --build-tests

log "swift test"
swift test -c release --skip-build --skip ClusterTests --skip PostgresLiteralTests 2>&1 | tee /tmp/hubbub-swift-test.log
export HB_BIN="$REPO_ROOT/.build/release/hubbub"

log "interop: Python websockets"
scripts/test-interop.sh

log "crash: kill -9 during a vote storm"
ensure_venv websockets
"$VENV_PY" scripts/test-crash.py "$HB_BIN"

log "crash: kill -9 during a burst of intel posts, likes, comments and links"
"$VENV_PY" scripts/test-crash-routes.py "$HB_BIN"

log "crash: kill -9 during an event-feed ingest"
"$VENV_PY" scripts/test-crash-tonight.py "$HB_BIN"

log "transit: GTFS and GTFS-Realtime ingest, poller"
ensure_venv websockets gtfs-realtime-bindings
"$VENV_PY" scripts/test-transit.py "$HB_BIN"

log "hostile input: attackers without an account, a log-in storm, misspelt settings, a full disk"
scripts/test-hostile.sh

log "PostgreSQL: the use-case tests and three nodes in this process, on a fresh cluster"
scripts/test-postgres.sh

log "cluster: three processes on PostgreSQL, kill -9 of an owner during a vote storm, PostgreSQL restarted under load, kill -9 of the intel shards' owner during a provider burst"
scripts/test-cluster.sh

log "load harness: smoke scenario and comparison mode"
scripts/test-load.sh

if [[ "${SKIP_SLOW:-0}" == 1 && "${CI:-}" != true ]]; then
    log "SKIP_SLOW=1: Autobahn, browser and fuzz runs skipped (never in CI)"
    exit 0
fi

log "Autobahn|Testsuite"
scripts/test-autobahn.sh

log "browser: headless Chromium"
scripts/test-browser.sh

log "web client: pages in Chromium (Selenium), hubbub.js under Node"
scripts/test-web.sh

log "fuzz: every parser of outside bytes under libFuzzer (fuzz/README.md)"
scripts/fuzz.sh --ci

log "all test stages passed"
