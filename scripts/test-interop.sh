#!/usr/bin/env bash
# Interop run: Hubbub (ws and wss) against Python's `websockets` client, via pytest.
#
#   scripts/test-interop.sh [PYTEST ARGS...]
#
# Makes the dev certificate, ensures .venv has websockets and pytest, starts hubbub with a
# plain and a TLS listener on free loopback ports, runs scripts/test-interop-python.py and
# exits with pytest's status. Extra arguments go to pytest (e.g. -k echo, -x).
#
# Environment: HB_BIN (default .build/release/hubbub), INTEROP_TIMEOUT (seconds for the
# pytest run, default 600).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

INTEROP_TIMEOUT="${INTEROP_TIMEOUT:-600}"

bash "$REPO_ROOT/config/make-dev-cert.sh" >/dev/null
CERT="$REPO_ROOT/config/dev-cert/cert.pem"
KEY="$REPO_ROOT/config/dev-cert/key.pem"

ensure_venv 'websockets>=13' 'pytest>=8'

make_tmpdir WORK
PORT="$(free_port)"
TLS_PORT="$(free_port)"
while [[ "$TLS_PORT" == "$PORT" ]]; do TLS_PORT="$(free_port)"; done

# The operator key /metrics needs (a fresh random one per run).
INTEROP_API_KEY="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export INTEROP_API_KEY
start_hubbub --host 127.0.0.1 --port "$PORT" --tls-port "$TLS_PORT" --tls-cert "$CERT" --tls-key "$KEY" \
    --data-dir "$WORK/data" --api-key "$INTEROP_API_KEY"

export HB_WS="ws://127.0.0.1:$PORT"
export HB_WSS="wss://127.0.0.1:$TLS_PORT"
export HB_CA="$CERT"

log "running pytest scripts/test-interop-python.py against $HB_WS and $HB_WSS"
set +e
timeout --kill-after=15 "$INTEROP_TIMEOUT" "$VENV_PY" -m pytest \
    -p no:cacheprovider -p no:asyncio --import-mode=importlib --rootdir "$REPO_ROOT/scripts" \
    -o console_output_style=classic -rfE \
    "$REPO_ROOT/scripts/test-interop-python.py" "$@" </dev/null 2>&1 | tee "$WORK/pytest.out"
rc="${PIPESTATUS[0]}"
set -e

notes=0
if ((rc == 124 || rc == 137)); then
    echo "error: pytest did not finish within ${INTEROP_TIMEOUT} s" >&2
    notes=1
elif ! kill -0 "$HB_PID" 2>/dev/null; then
    dump_hubbub_log
    echo "error: hubbub was no longer running at the end of the tests" >&2
    ((rc != 0)) || rc=1
    notes=1
fi
stop_hubbub
if ((rc != 0)); then
    note_hubbub_log "$rc"
    notes=1
fi
# Keep pytest's summary line ("N passed, M failed in Xs") the last line printed.
if ((notes == 1)); then
    last="$(grep -v '^[[:space:]]*$' "$WORK/pytest.out" | tail -n 1 || true)"
    [[ -n "$last" ]] && printf '%s\n' "$last"
fi
exit "$rc"
