#!/usr/bin/env bash
# Hostile input cannot stall the server, faults are reported, settings are never ignored:
#   1. four connections that never log in send, in a loop, the most expensive messages every limit
#      allows (999 keys, nesting at the depth limit, numbers, escapes, new connections whenever
#      they are closed): a logged-in bystander's op p99 stays under 50 ms;
#   2. 200 connections log in over and over at once, at the default 600,000 PBKDF2 iterations:
#      the bystander's p99 stays under 50 ms (hashing runs on a bounded pool, the rest wait);
#   3. a misspelt setting (config file key, HUBBUB_ variable, flag) stops the start with exit code
#      2 and names the nearest known setting;
#   4. a full disk while patrons vote (scripts/test-full-disk.py: a tmpfs data dir, needs root).
# Environment: HB_BIN, HB_LOAD_BIN (default .build/release/{hubbub,hubbub-load}).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOAD="${HB_LOAD_BIN:-$REPO_ROOT/.build/release/hubbub-load}"
[[ -x "$LOAD" ]] || die "$LOAD not found (swift build -c release)"
make_tmpdir WORK
PORT="$(free_port)"
# Password hashing at its default strength. The log-in storm comes from one address, as 200 users
# would from 200: sign-ups and in-flight log-ins per address are not what is measured here.
start_hubbub --host 127.0.0.1 --port "$PORT" --data-dir "$WORK/data" --log-level warning \
    --auth-signups-per-address-per-hour 1000000 --auth-address-failures-per-hour 100000000

log "four attackers without an account, the most expensive messages the limits allow"
"$LOAD" hostile --url "ws://127.0.0.1:$PORT" --attackers 4 --duration 12 --max-p99-ms 50 || { dump_hubbub_log; die "a bystander waited behind hostile messages"; }

log "200 connections signing up, then logging in over and over, at once"
"$LOAD" hostile --url "ws://127.0.0.1:$PORT" --logins 200 --duration 12 --max-p99-ms 50 || { dump_hubbub_log; die "a bystander waited behind log-ins"; }
stop_hubbub

log "misspelt settings stop the start (exit 2), naming the nearest setting"
expect_refused() { # what-it-must-say command...
    local want="$1" rc=0 out
    shift
    out="$("$@" 2>&1 </dev/null)" || rc=$?
    [[ $rc == 2 ]] || die "expected exit 2 from $*, got $rc: $out"
    [[ "$out" == *"$want"* ]] || die "expected '$want' from $*, got: $out"
}
printf '{"limits": {"maxConnectionsPerIpp": 5}}' > "$WORK/typo.json"
expect_refused "did you mean limits.maxConnectionsPerIp?" "$HB_BIN" --port 0 --data-dir "$WORK/x" --config "$WORK/typo.json"
expect_refused "did you mean HUBBUB_LIMITS_MAX_CONNECTIONS_PER_IP?" env HUBBUB_LIMITS_MAX_CONECTIONS_PER_IP=5 "$HB_BIN" --port 0 --data-dir "$WORK/x"
expect_refused "did you mean --limits-max-connections-per-ip?" "$HB_BIN" --port 0 --data-dir "$WORK/x" --limits-max-conections-per-ip 5

log "a full disk while patrons vote"
ensure_venv websockets
"$VENV_PY" "$REPO_ROOT/scripts/test-full-disk.py" "$HB_BIN"
log "hostile input: all passed"
