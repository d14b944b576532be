#!/usr/bin/env bash
# The load harness end to end, small enough for every CI run:
#   1. the `smoke` venue scenario against a server started here must pass its thresholds
#      (its validators see every push; a gap, repeat or wrong order fails it), and its
#      result.json, summary.txt and report.html must be written;
#   2. the `route-smoke` rush hour must pass its thresholds too: every push inside the traveller's
#      corridor, every item posted inside it (by travellers, and by a provider through
#      POST /api/intel) delivered once (its audit must have expected some);
#   3. the `tonight-smoke` evening must pass too: every suggestion, announcement of a new show and
#      change of a followed event (with its previous values) delivered exactly once while feeds are
#      ingested and re-ingested with changes (its audit must have expected some of each);
#   4. comparison mode: the `echo` and `fanout` scenarios, scaled down, against Hubbub and
#      against a Python `websockets` peer in the same invocation, one report for both;
#   5. a scenario with an impossible threshold must exit 1 (thresholds really decide).
# Environment: HB_BIN, HB_LOAD_BIN (default .build/release/{hubbub,hubbub-load}).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOAD="${HB_LOAD_BIN:-$REPO_ROOT/.build/release/hubbub-load}"
[[ -x "$LOAD" ]] || die "$LOAD not found (swift build -c release)"
ensure_venv 'websockets>=13'

make_tmpdir WORK
PORT="$(free_port)"
# Fast password hashing so seeding accounts through the protocol takes no time.
# The operator key lets route-smoke's provider post its bursts (POST /api/intel).
API_KEY="load-test-$RANDOM$RANDOM"
start_hubbub --host 127.0.0.1 --port "$PORT" --data-dir "$WORK/data" --bench --auth-kdf-iterations 1000 --auth-kdf-max-queued 100000 --auth-signups-per-address-per-hour 100000000 --api-key "$API_KEY" --log-level warning

log "smoke scenario"
rc=0
timeout 300 "$LOAD" run smoke --url "ws://127.0.0.1:$PORT" --server-pid "$HB_PID" --out "$WORK/smoke" || rc=$?
[[ $rc == 0 ]] || { dump_hubbub_log; die "the smoke scenario failed its thresholds (exit $rc)"; }
for f in result.json summary.txt report.html; do [[ -s "$WORK/smoke/$f" ]] || die "smoke: $f was not written"; done
"$VENV_PY" - "$WORK/smoke/result.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
s = run["summary"]
assert run["passed"], run["thresholds"]
assert s["received"] > 100 and s["acked"] > 10, s
assert s["latencySamples"] > 100, "pushes were timed"
assert run["reconnects"]["recovered"] > 0, run["reconnects"]
assert len(run["timeline"]) >= 5 and len(run["server"]) >= 5, "timeline and server samples"
assert max(r["connections"] for r in run["timeline"]) > 10
print("smoke result checked:", int(s["received"]), "pushes,", int(s["acked"]), "actions acked,",
      run["reconnects"]["recovered"], "recovered, p99", s["latencyP99Ms"], "ms")
PY
grep -q "<svg" "$WORK/smoke/report.html" || die "report.html has no plots"

log "route-smoke scenario"
rc=0
timeout 300 "$LOAD" run route-smoke --url "ws://127.0.0.1:$PORT" --server-pid "$HB_PID" --api-key "$API_KEY" --out "$WORK/route-smoke" || rc=$?
[[ $rc == 0 ]] || { dump_hubbub_log; die "the route-smoke scenario failed its thresholds (exit $rc)"; }
for f in result.json summary.txt report.html; do [[ -s "$WORK/route-smoke/$f" ]] || die "route-smoke: $f was not written"; done
"$VENV_PY" - "$WORK/route-smoke/result.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
s, v = run["summary"], run["violations"]
assert run["passed"], run["thresholds"]
assert s["posts"] > 10 and s["postsAcked"] == s["posts"], s
assert s["deliveriesExpected"] > 20, "the delivery audit expected deliveries"
assert s["providerSamples"] > 0, "the provider's items (POST /api/intel) were delivered and timed"
assert s["latencySamples"] + s["providerSamples"] >= s["deliveriesExpected"], "every expected delivery was received and timed"
assert s["received"] > s["latencySamples"], "likes and comments were pushed too"
assert v["outsideCorridor"] == 0 and v["undelivered"] == 0 and v["redelivered"] == 0, v
assert len(run["timeline"]) >= 5 and len(run["server"]) >= 5, "timeline and server samples"
print("route-smoke result checked:", int(s["received"]), "pushes,", int(s["posts"]), "posts,",
      int(s["deliveriesExpected"]), "deliveries expected and made, p99", s["latencyP99Ms"], "ms, provider p99", s["providerP99Ms"], "ms")
PY
grep -q "<svg" "$WORK/route-smoke/report.html" || die "route-smoke: report.html has no plots"

log "tonight-smoke scenario"
rc=0
timeout 300 "$LOAD" run tonight-smoke --url "ws://127.0.0.1:$PORT" --server-pid "$HB_PID" --api-key "$API_KEY" --out "$WORK/tonight-smoke" || rc=$?
[[ $rc == 0 ]] || { dump_hubbub_log; die "the tonight-smoke scenario failed its thresholds (exit $rc)"; }
"$VENV_PY" - "$WORK/tonight-smoke/result.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
s, v = run["summary"], run["violations"]
assert run["passed"], run["thresholds"]
assert s["suggestionsExpected"] > 50 and s["announcementsExpected"] > 5 and s["changesExpected"] > 10, s
assert s["received"] == s["deliveriesExpected"], "exactly the expected pushes arrived"
assert v["undelivered"] == 0 and v["redelivered"] == 0 and v["unwanted"] == 0, v
assert s["latencySamples"] > 10 and s["providerSamples"] > 10, "favourite → suggestion and feed → push were timed"
print("tonight-smoke result checked:", int(s["received"]), "pushes,", int(s["suggestionsExpected"]), "suggestions,",
      int(s["announcementsExpected"]), "announcements,", int(s["changesExpected"]), "changes, each once; p99", s["latencyP99Ms"], "ms")
PY

log "comparison mode: echo and fanout against hubbub and a Python websockets peer"
PEER_PORT="$(free_port)"
"$VENV_PY" "$REPO_ROOT/scripts/peer-python.py" "$PEER_PORT" &
PEER_PID=$!
on_exit "kill $PEER_PID 2>/dev/null || true"
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PEER_PORT/" && break || sleep 0.1; done
for scenario in echo fanout; do
    rc=0
    timeout 300 "$LOAD" run "$scenario" --scale 0.02 --duration 2 --url "ws://127.0.0.1:$PORT" --server-pid "$HB_PID" \
        --compare "python=ws://127.0.0.1:$PEER_PORT" --compare-pid "python=$PEER_PID" --out "$WORK/$scenario" || rc=$?
    [[ $rc == 0 || $rc == 1 ]] || die "$scenario comparison could not run (exit $rc)"
    "$VENV_PY" - "$WORK/$scenario/result.json" "$scenario" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
assert [r["target"] for r in runs] == ["hubbub", "python"], runs
for r in runs:
    assert r["summary"]["received"] > 0, (r["target"], r["summary"])
    assert r["connectionsOpened"] == r["connectionsWanted"], r
hub = runs[0]
assert hub["passed"], ("hubbub must pass", hub["thresholds"])
print(sys.argv[2], "compared:", ", ".join(f'{r["target"]} {int(r["summary"]["messagesPerSecond"])}/s p99 {r["summary"]["latencyP99Ms"]} ms' for r in runs))
PY
done

log "a failed threshold exits 1"
sed 's/"p99Ms": 1000/"p99Ms": 0.001/' "$REPO_ROOT/config/scenarios/smoke.json" > "$WORK/impossible.json"
rc=0
timeout 300 "$LOAD" run "$WORK/impossible.json" --duration 2 --url "ws://127.0.0.1:$PORT" --out "$WORK/impossible" >/dev/null || rc=$?
[[ $rc == 1 ]] || die "a scenario over its p99 threshold exited $rc, not 1"
log "load harness checks passed"
