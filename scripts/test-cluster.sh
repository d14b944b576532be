#!/usr/bin/env bash
# Three hubbub processes on one fresh PostgreSQL: kill -9 of a room's owner during a vote storm,
# then PostgreSQL restarted under load (scripts/test-cluster.py says what is checked); kill -9 of
# the intel shards' owner during a provider burst (scripts/test-cluster-routes.py).
# Needs the release build (scripts/test.sh makes one).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_venv websockets
start_postgres POSTGRES_URL
"$VENV_PY" scripts/test-cluster.py "$HB_BIN" "$POSTGRES_URL" "$POSTGRES_STOP_CMD" "$POSTGRES_START_CMD"
"$VENV_PY" scripts/test-cluster-routes.py "$HB_BIN" "$POSTGRES_URL"
