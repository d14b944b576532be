#!/usr/bin/env bash
# The event-feed ingest beside Python's iterparse, in one run (issue 12): Python parses the feed
# (parse only, and parse with field extraction), then a fresh Hubbub ingests it over HTTP twice
# (first: everything is new; again: nothing changed) while 50 WebSocket clients echo 20 messages/s
# each; the server's RSS is sampled every 50 ms.
#   loadtest/bench-ingest.sh [FEED]        (default /tmp/feed-119.xml, generated when missing)
# Environment: SERVER_CPUS (default: both cores), SERVER_ARGS (extra server flags).
set -euo pipefail
cd "$(dirname "$0")/.."
FEED=${1:-/tmp/feed-119.xml}
BIN=.build/release/hubbub LOAD=.build/release/hubbub-load
[[ -x $BIN && -x $LOAD ]] || { echo "build first: swift build -c release" >&2; exit 2; }
[[ -f $FEED ]] || python3 scripts/gen-feed.py --out "$FEED"
BYTES=$(stat -c %s "$FEED")
OUT=$(mktemp -d /tmp/hubbub-ingest.XXXXXX)
cat "$FEED" > /dev/null # both read it from the page cache

python3 scripts/bench-iterparse.py --parse-only "$FEED" > "$OUT/py-parse.json"
python3 scripts/bench-iterparse.py "$FEED" > "$OUT/py-extract.json"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DATA=$(mktemp -d /tmp/hubbub-ingest-data.XXXXXX)
KEY=bench-ingest-key
# shellcheck disable=SC2086
taskset -c "${SERVER_CPUS:-0,1}" "$BIN" --host 127.0.0.1 --port "$PORT" --data-dir "$DATA" --api-key "$KEY" --log-level warning \
    ${SERVER_ARGS:-} > "$OUT/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
rss() { awk '/VmRSS/ {print $2}' "/proc/$PID/status"; }
RSS0=$(rss)
( peak=0; while kill -0 $PID 2>/dev/null; do r=$(rss); ((r > peak)) && peak=$r && echo $peak > "$OUT/peak"; sleep 0.05; done ) &
SAMPLER=$!

ingest() { # label
    local t0 t1
    t0=$(date +%s.%N)
    curl -s -o "$OUT/$1.json" -w '%{http_code}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/xml' \
        --data-binary @"$FEED" "http://127.0.0.1:$PORT/api/feeds/events" > "$OUT/$1.status"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc > "$OUT/$1.seconds"
}
for pass in first again; do
    "$LOAD" echo --url "ws://127.0.0.1:$PORT/echo" -c 50 --rate 20 --text --warmup 0.5 --duration 3 --json "$OUT/echo-$pass.json" \
        > /dev/null 2>&1 &
    ECHO=$!
    sleep 0.7
    ingest "$pass"
    wait $ECHO
done
kill $SAMPLER 2>/dev/null || true

python3 - "$OUT" "$BYTES" "$RSS0" <<'PY'
import json, sys
out, size, rss0 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(name): return json.load(open(f"{out}/{name}"))
parse, extract = load("py-parse.json"), load("py-extract.json")
peak = int(open(f"{out}/peak").read())
print(f"feed: {size / 1e6:.1f} MB ({out})")
print(f"python iterparse, parse only:      {parse['seconds']:.2f} s  {size / 1e6 / parse['seconds']:.0f} MB/s")
print(f"python iterparse, with fields:     {extract['seconds']:.2f} s  {size / 1e6 / extract['seconds']:.0f} MB/s")
for p in ("first", "again"):
    s = float(open(f"{out}/{p}.seconds").read())
    status = open(f"{out}/{p}.status").read().strip()
    r = load(f"{p}.json")
    e = load(f"echo-{p}.json")
    lat = e.get("latencyMicros") or e.get("latency") or {}
    print(f"hubbub ingest ({p}): HTTP {status}, {s:.2f} s  {size / 1e6 / s:.0f} MB/s  ({parse['seconds'] / s:.2f}x python parse-only)"
          f"  added {r.get('added')} changed {r.get('changed')} unchanged {r.get('unchanged')} rejected {r.get('rejected')}")
    print(f"  echo during it: p50 {e['p50_us'] / 1000:.1f} ms, p99 {e['p99_us'] / 1000:.1f} ms, max {e['max_us'] / 1000:.1f} ms over {e['messages']} echoes")
print(f"server RSS: {rss0 / 1024:.0f} MB before, {peak / 1024:.0f} MB at most (+{(peak - rss0) / 1024:.0f} MB)")
PY
