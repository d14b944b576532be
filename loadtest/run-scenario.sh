#!/usr/bin/env bash
# Plays one scenario against a fresh local Hubbub, the way the README's figures were measured:
# server on CPU 1 with one event loop, harness on CPU 0, loopback, a new data directory each run
# (a reused server would still be working off the previous run's backlog).
#   loadtest/run-scenario.sh SCENARIO [hubbub-load run options...]
#   e.g. loadtest/run-scenario.sh friday-night --scale 2 --out /tmp/fn
#        loadtest/run-scenario.sh soak --duration 2h      (the server's RSS slope decides it)
# Environment: SERVER_ARGS (extra server flags), SERVER_CPUS / LOAD_CPUS (default 1 / 0), BIN (the
# server binary, default .build/release/hubbub: another build's, for a paired before/after run).
# The server hashes passwords with 1,000 PBKDF2 iterations so seeding thousands of accounts
# through the protocol takes seconds, not hours; nothing else differs from the defaults. A random
# operator key (--api-key) is given to both: a rush hour's provider posts with it (POST /api/intel).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 1 ]] || { sed -n 2,10p "$0"; exit 2; }
SCENARIO=$1; shift
BIN=${BIN:-.build/release/hubbub} LOAD=.build/release/hubbub-load
[[ -x $BIN && -x $LOAD ]] || { echo "build first: swift build -c release" >&2; exit 2; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DATA=$(mktemp -d /tmp/hubbub-load-data.XXXXXX)
API_KEY=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
# shellcheck disable=SC2086
taskset -c "${SERVER_CPUS:-1}" "$BIN" --host 127.0.0.1 --port "$PORT" --data-dir "$DATA" --event-loops 1 --bench \
    --auth-kdf-iterations 1000 --auth-kdf-max-queued 100000 --auth-signups-per-address-per-hour 100000000 --api-key="$API_KEY" --log-level warning ${SERVER_ARGS:-} > "$DATA.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
rc=0
taskset -c "${LOAD_CPUS:-0}" "$LOAD" run "$SCENARIO" --url "ws://127.0.0.1:$PORT" --server-pid "$PID" --api-key="$API_KEY" "$@" || rc=$?
exit $rc
