#!/usr/bin/env bash
# Plays a venue scenario against NODES Hubbub nodes on one fresh PostgreSQL (Debian's, started
# here as the postgres user and stopped at exit), the clients spread over the nodes; with
# KILL_AT=S, the first node is killed with SIGKILL S seconds into the run, and patrons it drops
# come back to the next node with `since` (--resume-after-drop).
#   loadtest/run-cluster.sh SCENARIO [hubbub-load run options...]
#   e.g. NODES=3 KILL_AT=150 loadtest/run-cluster.sh friday-night --out /tmp/fn3k
#        NODES=1 loadtest/run-cluster.sh friday-night          (one node on PostgreSQL)
# Environment: NODES (default 3), KILL_AT (seconds; default none), BIN / LOAD (the server and
# harness binaries; default .build/release/...), SERVER_ARGS (extra server
# flags), SERVER_CPUS / LOAD_CPUS (default 1 / 0, as run-scenario.sh; PostgreSQL is not pinned).
# Servers as in run-scenario.sh: one event loop each, 1,000 PBKDF2 iterations, a random api key.
# At the end: each node's CPU seconds over the run (user + system, from /proc, sampled every
# second so a killed node counts until it died) and its share of the nodes' total: the nodes
# share the server cores here, so latency alone hides which node does the work; and
# PostgreSQL's CPU seconds (its processes, ended ones included). PG_STATEMENTS=N: also its N
# statements that took longest in all (pg_stat_statements: calls, total and mean milliseconds,
# rows), to tell which writes the database's CPU goes to. And each node's room notifications:
# heard, and ignored (of rooms nobody on the node watches).
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
[[ $# -ge 1 ]] || { sed -n 2,12p "$0"; exit 2; }
SCENARIO=$1; shift
BIN=${BIN:-.build/release/hubbub} LOAD=${LOAD:-.build/release/hubbub-load}
[[ -x $BIN && -x $LOAD ]] || die "build first: swift build -c release"
if [[ -n "${PG_STATEMENTS:-}" ]]; then
    export POSTGRES_OPTIONS="${POSTGRES_OPTIONS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
fi
start_postgres DB
API_KEY=${API_KEY:-$(head -c 18 /dev/urandom | base64 | tr "+/" "-_")}
PIDS=() URLS=()
for n in $(seq "${NODES:-3}"); do
    port=$(free_port)
    make_tmpdir data
    # shellcheck disable=SC2086
    taskset -c "${SERVER_CPUS:-1}" "$BIN" --host 127.0.0.1 --port "$port" --data-dir "$data" --database "$DB" --event-loops 1 \
        --auth-kdf-iterations 1000 --auth-kdf-max-queued 100000 --auth-signups-per-address-per-hour 100000000 --api-key="$API_KEY" --log-level warning \
        ${SERVER_ARGS:-} > "$data.log" 2>&1 &
    PIDS+=($!)
    URLS+=("ws://127.0.0.1:$port")
    on_exit "kill ${PIDS[-1]} 2>/dev/null; wait ${PIDS[-1]} 2>/dev/null"
    for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    log "node $n: ${URLS[-1]} (pid ${PIDS[-1]}, log $data.log)"
done
if [[ -n "${KILL_AT:-}" ]]; then
    ( sleep "$KILL_AT"; kill -9 "${PIDS[0]}" 2>/dev/null && log "killed node 1 (pid ${PIDS[0]}) with SIGKILL at ${KILL_AT}s" ) &
fi
# Each node's utime+stime in clock ticks, one line per second: "t ticks1 ticks2 ... pg", a dead
# node's column keeping its last value; the last column is PostgreSQL's (the postmaster with its
# children: those still running, and those that ended).
make_tmpdir cpu_dir
CPU_LOG=$cpu_dir/cpu.log
PG_PORT=${DB##*:}
PG_PID=$(ps -u postgres -o pid=,args= | awk -v p="-p $PG_PORT" 'index($0, p) && /postgres -D/ {print $1; exit}')
ticks() { local stat rest; stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; rest=${stat##*) }; read -r -a f <<< "$rest"; echo $((f[11] + f[12] + ${2:-0} * (f[13] + f[14]))); }
(
    declare -A last
    while :; do
        line=$(date +%s)
        for pid in "${PIDS[@]}"; do
            if stat=$(cat "/proc/$pid/stat" 2>/dev/null); then
                rest=${stat##*) }
                read -r -a f <<< "$rest"
                last[$pid]=$((f[11] + f[12]))
            fi
            line+=" ${last[$pid]:-0}"
        done
        pg=0
        if [[ -n $PG_PID ]] && t=$(ticks "$PG_PID" 1); then
            pg=$t
            for child in $(pgrep -P "$PG_PID"); do t=$(ticks "$child") && pg=$((pg + t)); done
        fi
        line+=" $pg"
        echo "$line" >> "$CPU_LOG"
        sleep 1
    done
) &
SAMPLER=$!
on_exit "kill $SAMPLER 2>/dev/null"
report_cpu() {
    kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null || true
    python3 - "$CPU_LOG" "$(getconf CLK_TCK)" <<'PY'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
tck = int(sys.argv[2])
if len(rows) < 2:
    sys.exit(0)
first, last = rows[0], rows[-1]
secs = [(b - a) / tck for a, b in zip(first[1:], last[1:])]
pg = secs.pop()
total = sum(secs) or 1
span = last[0] - first[0]
print(f"node CPU over {span} s (user + system; share of the nodes' total):")
for i, s in enumerate(secs, 1):
    print(f"  node {i}: {s:8.1f} s  {100 * s / total:5.1f} %")
print(f"  nodes:  {sum(secs):8.1f} s")
print(f"  PostgreSQL: {pg:6.1f} s  ({100 * pg / max(span, 1):.0f} % of one core)")
PY
    # Every node hears every logged room's notifications (venues, events, users, the intel
    # shards' logs; corridors are made on each node and send none) and passes over those of
    # rooms nobody on it watches: that share is what hearing every room costs.
    echo "room notifications heard (of rooms nobody on the node watches):"
    for i in "${!URLS[@]}"; do
        port=${URLS[$i]##*:}
        if m=$(curl -fs -H "Authorization: Bearer $API_KEY" "http://127.0.0.1:$port/metrics" 2>/dev/null); then
            heard=$(awk '$1 == "hubbub_room_notifications_total" {print $2}' <<< "$m")
            ignored=$(awk '$1 == "hubbub_room_notifications_ignored_total" {print $2}' <<< "$m")
            python3 -c "import sys; h, i = float(sys.argv[2] or 0), float(sys.argv[3] or 0); print(f'  node {sys.argv[1]}: {h:,.0f} heard, {i:,.0f} ignored ({100 * i / max(h, 1):.0f} %)')" \
                "$((i + 1))" "${heard:-0}" "${ignored:-0}"
        else
            echo "  node $((i + 1)): no metrics (not running)"
        fi
    done
    if [[ -n "${PG_STATEMENTS:-}" ]]; then
        echo "PostgreSQL's $PG_STATEMENTS costliest statements (calls, total ms, mean ms, rows):"
        psql "$DB" -qAt -F ' | ' -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
            -c "SELECT calls, round(total_exec_time), round(mean_exec_time::numeric, 3), rows, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
                FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT $PG_STATEMENTS" | sed 's/^/  /'
    fi
}
rc=0
url=$(IFS=,; echo "${URLS[*]}")
taskset -c "${LOAD_CPUS:-0}" "$LOAD" run "$SCENARIO" --url "$url" --server-pid "${PIDS[1]:-${PIDS[0]}}" --api-key="$API_KEY" \
    --resume-after-drop 3 "$@" || rc=$?
report_cpu
exit $rc
