#!/usr/bin/env bash
# Transport figures for issue reports: echo throughput and latency at 100 and 1,000 connections,
# plain and TLS, and server memory per idle connection (10,000 idle, plain and TLS, compression
# on and off). Server on CPU 1 with one event loop, load generator on CPU 0, loopback only.
#   loadtest/bench-transport.sh [--duration S] [--idle N] [--out FILE]
# Needs a release build (swift build -c release). Results: one JSON line per step in FILE
# (default /tmp/hubbub-bench.jsonl) and a table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=10 IDLE=10000 OUT=/tmp/hubbub-bench.jsonl
while [[ $# -gt 0 ]]; do
  case $1 in
    --duration) DUR=$2; shift 2 ;;
    --idle) IDLE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=.build/release/hubbub LOAD=.build/release/hubbub-load
[[ -x $BIN && -x $LOAD ]] || { echo "build first: swift build -c release" >&2; exit 1; }
config/make-dev-cert.sh >/dev/null
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
: > "$OUT"
PORT=19300 TPORT=19301
PID=""
start() { # extra server args
  taskset -c 1 "$BIN" --host 127.0.0.1 --port $PORT --tls-port $TPORT --tls-cert config/dev-cert/cert.pem \
    --tls-key config/dev-cert/key.pem --event-loops 1 --data-dir /tmp/hubbub-bench-data \
    --limits-max-connections-per-ip 1000000 --log-level warning "$@" &
  PID=$!
  for _ in $(seq 1 100); do curl -s "http://127.0.0.1:$PORT/healthz" >/dev/null && return 0; sleep 0.1; done
  echo "server did not start" >&2; exit 1
}
stop() { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; PID=""; sleep 0.5; }
trap 'stop' EXIT

for scheme in ws wss; do
  port=$PORT; [[ $scheme == wss ]] && port=$TPORT
  for c in 100 1000; do
    start
    line=$(taskset -c 0 "$LOAD" echo --url "$scheme://127.0.0.1:$port/echo" -c $c -s 32 -d "$DUR" 2>/dev/null | tail -n 1)
    echo "{\"step\":\"echo-$scheme-$c\",${line#\{}" >> "$OUT"
    stop
  done
done

for scheme in ws wss; do
  port=$PORT; [[ $scheme == wss ]] && port=$TPORT
  for comp in off on; do
    start
    flag=(); [[ $comp == on ]] && flag=(--compression)
    # warm the allocator and the TLS context before the baseline
    taskset -c 0 "$LOAD" echo --url "$scheme://127.0.0.1:$port/echo" -c 10 -d 1 --warmup 0 "${flag[@]}" >/dev/null 2>&1
    sleep 1
    line=$(taskset -c 0 "$LOAD" idle --url "$scheme://127.0.0.1:$port/echo" -c "$IDLE" --hold 3 --server-pid "$PID" "${flag[@]}" 2>/dev/null | tail -n 1)
    echo "{\"step\":\"idle-$scheme-compression-$comp\",${line#\{}" >> "$OUT"
    stop
  done
done

python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'step':28} {'msgs/s':>9} {'p50 µs':>8} {'p99 µs':>8} {'p99.9 µs':>9} {'KB/conn':>8}")
for r in rows:
    print(f"{r['step']:28} {r.get('msgs_per_s', ''):>9} {r.get('p50_us', ''):>8} {r.get('p99_us', ''):>8} "
          f"{r.get('p999_us', ''):>9} {r.get('kb_per_conn', ''):>8}")
PY
