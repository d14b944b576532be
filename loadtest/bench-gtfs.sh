#!/usr/bin/env bash
# GTFS and GTFS-Realtime ingest of a large city, by hand (not in CI):
#   1. a fresh release server (.build/release/hubbub) on a temp data dir, with an API key;
#   2. the city's GTFS zip (scripts/gen-gtfs.py: 10,000 stops, 500 routes, 5 M stop times; written
#      once to $FEED when missing) POSTed to /api/feeds/gtfs?feed=city with curl, timed, then POSTed
#      again (a replacement of the same feed); the server's VmRSS before and after each and its peak
#      (VmHWM) from /proc;
#   3. K travellers (default 200; Python websockets clients) subscribe to corridors over the city
#      (3-10 km between two stops, 500 m wide), then a FULL_DATASET FeedMessage of ALERTS alerts
#      (default 1,000; written afresh, its periods are relative to now) is POSTed to
#      /api/feeds/gtfs-rt?feed=city: decode-to-push is from the POST's start to the last intel.added
#      the travellers receive (the server's own `ms` beside it); the same message again (all
#      unchanged) is timed too.
# Prints a table. Usage:
#   loadtest/bench-gtfs.sh                 (FEED=/tmp/hubbub-gtfs-city.zip, K=200, ALERTS=1000)
# Environment: FEED, K, ALERTS, SERVER_ARGS (extra server flags), SERVER_CPUS (taskset list, default: all).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

FEED=${FEED:-/tmp/hubbub-gtfs-city.zip}
K=${K:-200}
ALERTS=${ALERTS:-1000}
KEY=bench-gtfs-key
export HUBBUB_API_KEY=$KEY
[[ -x $HB_BIN ]] || die "build first: swift build -c release ($HB_BIN missing)"
command -v curl >/dev/null || die "curl is needed"
ensure_venv websockets gtfs-realtime-bindings

make_tmpdir OUT
if [[ ! -f $FEED ]]; then
    log "generating $FEED (10,000 stops, 500 routes, 5,000,000 stop times; about 15 s)"
    "$VENV_PY" scripts/gen-gtfs.py --stops 10000 --routes 500 --stop-times 5000000 --seed 1 --out "$FEED"
fi
log "writing $ALERTS alerts on it"
"$VENV_PY" scripts/gen-gtfs.py --out "$FEED" --alerts "$ALERTS" --rt-out "$OUT/alerts.pb" 2> "$OUT/alerts.json"
cat "$FEED" > /dev/null # in the page cache for curl

port=$(free_port)
make_tmpdir DATA
if [[ -n ${SERVER_CPUS:-} ]]; then
    real_bin=$HB_BIN
    cat > "$OUT/hubbub-pinned" <<EOF
#!/bin/sh
exec taskset -c "$SERVER_CPUS" "$real_bin" "\$@"
EOF
    chmod +x "$OUT/hubbub-pinned"
    HB_BIN=$OUT/hubbub-pinned
fi
# shellcheck disable=SC2086
start_hubbub --host 127.0.0.1 --port "$port" --data-dir "$DATA" --log-level warning --auth-kdf-iterations 1000 --auth-kdf-max-queued 100000 \
    --auth-signups-per-address-per-hour 100000000 --rate-limits-auth-burst 100000 --rate-limits-read-burst 100000 \
    --rate-limits-read-per-second 100000 --rate-limits-write-burst 100000 --rate-limits-write-per-second 100000 ${SERVER_ARGS:-}
pid=$HB_PID # the wrapper execs taskset, which execs hubbub: the same pid

mem() { # VmRSS and VmHWM of the server, in kB
    awk '/^VmRSS/ {r=$2} /^VmHWM/ {h=$2} END {print r, h}' "/proc/$pid/status"
}

post_feed() { # name: POST the zip, keep the answer and "status seconds"
    curl -s -o "$OUT/$1.json" -w '%{http_code} %{time_total}\n' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/zip' \
        -H 'Expect:' --data-binary @"$FEED" "http://127.0.0.1:$port/api/feeds/gtfs?feed=city" > "$OUT/$1.timing"
    read -r status _ < "$OUT/$1.timing"
    [[ $status == 200 ]] || die "POST /api/feeds/gtfs answered $status: $(head -c 600 "$OUT/$1.json")"
}

mem > "$OUT/mem-idle"
log "POST $(du -h "$FEED" | cut -f1) GTFS zip (first ingest)"
post_feed first
mem > "$OUT/mem-first"
log "POST it again (replacing the feed)"
post_feed again
mem > "$OUT/mem-again"

log "$K travellers subscribe, then $ALERTS alerts are POSTed"
"$VENV_PY" - "$port" "$KEY" "$FEED" "$OUT/alerts.pb" "$K" > "$OUT/rt.json" <<'PY'
import asyncio, csv, http.client, io, json, math, random, sys, time, zipfile
from websockets.asyncio.client import connect

port, key, feed, alerts, k = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
with zipfile.ZipFile(feed) as z, z.open("stops.txt") as f:
    stops = [(float(r["stop_lat"]), float(r["stop_lon"])) for r in csv.DictReader(io.TextIOWrapper(f, encoding="utf-8-sig"))]
rng = random.Random(42)

def km(a, b):
    return math.hypot((a[0] - b[0]) * 110.574, (a[1] - b[1]) * 111.32 * math.cos(math.radians(a[0])))

def corridor():
    a = rng.choice(stops)
    for _ in range(1000):
        b = rng.choice(stops)
        if 3 <= km(a, b) <= 10:
            break
    return {"from": {"lat": a[0], "lon": a[1]}, "to": {"lat": b[0], "lon": b[1]}, "widthMeters": 500}

class Traveller:
    def __init__(self, n):
        self.n, self.next, self.pushes, self.waiting = n, 1, [], {}

    async def start(self):
        self.ws = await connect(f"ws://127.0.0.1:{port}/ws", max_size=None)
        self.reader = asyncio.create_task(self.read())
        name = f"bench{self.n}"
        r = await self.call("account.signup", username=name, email=f"{name}@example.com", password="secret123")
        if not r.get("ok"):
            r = await self.call("account.login", login=name, password="secret123")
        await self.call("auth", token=r["result"]["token"])
        r = await self.call("route.subscribe", **corridor())
        assert r.get("ok"), r
        self.listed = len(r["result"]["items"])

    async def call(self, op, **args):
        rid, self.next = self.next, self.next + 1
        fut = self.waiting[rid] = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps({"id": rid, "op": op, "args": args}))
        return await fut

    async def read(self):
        try:
            async for raw in self.ws:
                now = time.monotonic()
                m = json.loads(raw)
                if "event" in m:
                    self.pushes.append((now, m["event"], (m.get("data") or {}).get("item", {}).get("id") if m["event"] != "intel.expired" else None))
                elif m.get("id") in self.waiting:
                    self.waiting.pop(m["id"]).set_result(m)
        except Exception:
            pass

def post(body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request("POST", "/api/feeds/gtfs-rt?feed=city", body=body, headers={"Authorization": f"Bearer {key}", "Content-Type": "application/x-protobuf"})
    r = conn.getresponse()
    answer = r.read()
    return r.status, json.loads(answer)

async def round_trip(travellers, body, label):
    marks = [len(t.pushes) for t in travellers]
    t0 = time.monotonic()
    status, answer = await asyncio.to_thread(post, body)
    t_answer = time.monotonic()
    assert status == 200, (status, answer)
    seen, quiet = sum(len(t.pushes) for t in travellers), t_answer
    while time.monotonic() - quiet < 2 and time.monotonic() - t0 < 120:  # until 2 s without a new push
        await asyncio.sleep(0.05)
        n = sum(len(t.pushes) for t in travellers)
        if n != seen:
            seen, quiet = n, time.monotonic()
    new = [p for t, m in zip(travellers, marks) for p in t.pushes[m:]]
    added = [p for p in new if p[1] == "intel.added"]
    return {"label": label, "post_s": t_answer - t0, "server_ms": answer.get("ms"), "added": answer.get("added"),
            "changed": answer.get("changed"), "unchanged": answer.get("unchanged"), "ended": answer.get("ended"),
            "rejected": answer.get("rejected"), "pushes": len(new), "added_pushes": len(added),
            "items_pushed": len({p[2] for p in added}),
            "reached": sum(1 for t, m in zip(travellers, marks) if any(p[1] == "intel.added" for p in t.pushes[m:])),
            "first_push_s": min((p[0] for p in added), default=t0) - t0, "last_push_s": max((p[0] for p in added), default=t0) - t0,
            "rejects": answer.get("rejects", [])[:3]}

async def main():
    travellers = [Traveller(n) for n in range(k)]
    t = time.monotonic()
    sem = asyncio.Semaphore(50)
    async def start(tr):
        async with sem:
            await tr.start()
    await asyncio.gather(*(start(tr) for tr in travellers))
    subscribe_s = time.monotonic() - t
    body = open(alerts, "rb").read()
    first = await round_trip(travellers, body, "first")
    again = await round_trip(travellers, body, "again")
    print(json.dumps({"travellers": k, "subscribe_s": subscribe_s, "listed_before": sum(tr.listed for tr in travellers),
                      "bytes": len(body), "first": first, "again": again}))
    for tr in travellers:
        await tr.ws.close()

asyncio.run(main())
PY
mem > "$OUT/mem-rt"

"$VENV_PY" - "$OUT" "$FEED" <<'PY'
import json, os, sys
out, feed = sys.argv[1], sys.argv[2]
def mem(name):
    rss, hwm = open(f"{out}/mem-{name}").read().split()
    return int(rss) / 1024, int(hwm) / 1024
def timing(name):
    status, seconds = open(f"{out}/{name}.timing").read().split()
    return float(seconds), json.load(open(f"{out}/{name}.json"))
gen = json.loads(open(f"{out}/alerts.json").read().strip().splitlines()[-1]).get("gtfs_rt", {})
rt = json.load(open(f"{out}/rt.json"))
rows = []
idle = mem("idle")
rows.append(("server at rest", "", f"RSS {idle[0]:.0f} MB, peak {idle[1]:.0f} MB"))
for name, label in (("first", "GTFS ingest (new feed)"), ("again", "GTFS ingest (replacing it)")):
    s, a = timing(name)
    m = mem(name)
    rows.append((label, f"{s:.2f} s (server {a['ms'] / 1000:.2f} s)",
                 f"{a['stops']} stops, {a['routes']} routes, {a['trips']} trips, rejected {a['rejected']}; RSS after {m[0]:.0f} MB, peak {m[1]:.0f} MB"))
rows.append((f"{rt['travellers']} travellers subscribe", f"{rt['subscribe_s']:.2f} s", f"{rt['listed_before']} items listed"))
for key, label in (("first", "GTFS-RT alerts (new)"), ("again", "GTFS-RT alerts (unchanged)")):
    r = rt[key]
    rows.append((label, f"POST {r['post_s'] * 1000:.0f} ms (server {r['server_ms']} ms)",
                 f"added {r['added']}, changed {r['changed']}, unchanged {r['unchanged']}, ended {r['ended']}, rejected {r['rejected']}"))
    if r["added_pushes"]:
        rows.append(("  decode-to-push", f"last intel.added {r['last_push_s'] * 1000:.0f} ms", f"first {r['first_push_s'] * 1000:.0f} ms; "
                     f"{r['added_pushes']} intel.added of {r['items_pushed']} items to {r['reached']} of {rt['travellers']} travellers"))
    else:
        rows.append(("  pushes", str(r["pushes"]), ""))
m = mem("rt")
rows.append(("server after alerts", "", f"RSS {m[0]:.0f} MB, peak {m[1]:.0f} MB"))
print(f"\nfeed {feed}: {os.path.getsize(feed) / 1e6:.1f} MB zip; alerts {rt['bytes'] / 1e3:.0f} kB "
      f"({gen.get('route', '?')} on routes, {gen.get('stop', '?')} on stops, {gen.get('trip', '?')} on trips)\n")
w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
print(f"| {'what':<{w0}} | {'time':<{w1}} | details")
print(f"|{'-' * (w0 + 2)}|{'-' * (w1 + 2)}|---------")
for a, b, c in rows:
    print(f"| {a:<{w0}} | {b:<{w1}} | {c}")
PY
