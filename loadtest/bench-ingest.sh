#!/usr/bin/env bash
# The event-feed ingest beside Python's iterparse (issue 12), interleaved in ROUNDS rounds (default
# 3; this machine is a shared VM whose speed drifts, so each round measures both, back to back):
# Python parses the feed (parse only; parse with field extraction), then a fresh Hubbub ingests it
# over HTTP twice (first: everything new; again: nothing changed) while 50 WebSocket clients echo
# 20 messages/s each, its RSS sampled every 50 ms. Prints each round and the best and median.
#   loadtest/bench-ingest.sh [FEED]        (default /tmp/feed-119.xml, generated when missing)
# Environment: ROUNDS, SERVER_CPUS (default: both cores), SERVER_ARGS (extra server flags).
set -euo pipefail
cd "$(dirname "$0")/.."
FEED=${1:-/tmp/feed-119.xml}
ROUNDS=${ROUNDS:-3}
BIN=.build/release/hubbub LOAD=.build/release/hubbub-load
[[ -x $BIN && -x $LOAD ]] || { echo "build first: swift build -c release" >&2; exit 2; }
[[ -f $FEED ]] || python3 scripts/gen-feed.py --out "$FEED"
OUT=$(mktemp -d /tmp/hubbub-ingest.XXXXXX)
cat "$FEED" > /dev/null # every reader finds it in the page cache
KEY=bench-ingest-key

round() { # n
    local n=$1 port data pid sampler rss0
    python3 scripts/bench-iterparse.py --parse-only "$FEED" > "$OUT/$n-py-parse.json"
    python3 scripts/bench-iterparse.py "$FEED" > "$OUT/$n-py-extract.json"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    data=$(mktemp -d /tmp/hubbub-ingest-data.XXXXXX)
    # shellcheck disable=SC2086
    taskset -c "${SERVER_CPUS:-0,1}" "$BIN" --host 127.0.0.1 --port "$port" --data-dir "$data" --api-key "$KEY" --log-level warning \
        ${SERVER_ARGS:-} > "$OUT/$n-server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    rss0=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    echo "$rss0" > "$OUT/$n-rss0"
    ( peak=0; while kill -0 "$pid" 2>/dev/null; do r=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        ((r > peak)) && peak=$r && echo $peak > "$OUT/$n-peak"; sleep 0.05; done ) &
    sampler=$!
    for pass in first again; do
        "$LOAD" echo --url "ws://127.0.0.1:$port/echo" -c 50 --rate 20 --text --warmup 0.5 --duration 3 --json "$OUT/$n-echo-$pass.json" \
            > /dev/null 2>&1 &
        local echo=$!
        sleep 0.7
        local t0 t1
        t0=$(date +%s.%N)
        curl -s -o "$OUT/$n-$pass.json" -w '%{http_code}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/xml' \
            --data-binary @"$FEED" "http://127.0.0.1:$port/api/feeds/events" > "$OUT/$n-$pass.status"
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc > "$OUT/$n-$pass.seconds"
        wait $echo
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
    kill $sampler 2>/dev/null || true
    rm -rf "$data"
}
for n in $(seq "$ROUNDS"); do round "$n"; done

python3 - "$OUT" "$FEED" "$ROUNDS" <<'PY'
import json, os, statistics, sys
out, feed, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
mb = os.path.getsize(feed) / 1e6
def load(name): return json.load(open(f"{out}/{name}"))
def num(name): return float(open(f"{out}/{name}").read())
rows = []
for n in range(1, rounds + 1):
    r = {"py": load(f"{n}-py-parse.json")["seconds"], "pyx": load(f"{n}-py-extract.json")["seconds"],
         "first": num(f"{n}-first.seconds"), "again": num(f"{n}-again.seconds"),
         "rss": (num(f"{n}-peak") - num(f"{n}-rss0")) / 1024,
         "echo": max(load(f"{n}-echo-first.json")["p99_us"], load(f"{n}-echo-again.json")["p99_us"]) / 1000}
    for p in ("first", "again"):
        assert open(f"{out}/{n}-{p}.status").read().strip() == "200", (n, p, open(f"{out}/{n}-{p}.json").read()[:300])
    a = load(f"{n}-first.json")
    r["counts"] = f"added {a['added']}, rejected {a['rejected']}"
    rows.append(r)
    print(f"round {n}: python parse-only {r['py']:.2f} s, with fields {r['pyx']:.2f} s | hubbub first ingest {r['first']:.2f} s "
          f"({r['py'] / r['first']:.2f}x python parse-only), again {r['again']:.2f} s | RSS +{r['rss']:.0f} MB | echo p99 {r['echo']:.1f} ms | {r['counts']}")
for label, key in (("python iterparse, parse only", "py"), ("python iterparse, with fields", "pyx"),
                   ("hubbub first ingest", "first"), ("hubbub ingest again", "again")):
    v = [r[key] for r in rows]
    print(f"{label:32} best {min(v):.2f} s ({mb / min(v):.0f} MB/s), median {statistics.median(v):.2f} s")
print(f"best vs best: hubbub's first ingest takes {min(r['first'] for r in rows) / min(r['py'] for r in rows):.2f}x "
      f"python's parse-only time; the re-ingest {min(r['again'] for r in rows) / min(r['py'] for r in rows):.2f}x")
print(f"RSS growth at most +{max(r['rss'] for r in rows):.0f} MB; echo p99 during ingests at most {max(r['echo'] for r in rows):.1f} ms ({out})")
PY
