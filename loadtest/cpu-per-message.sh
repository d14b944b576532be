#!/usr/bin/env bash
# Server CPU per message, Hubbub beside uWebSockets, in turn: one Hubbub run, one uWebSockets run,
# N rounds, so the drift of a shared machine lands on both alike (run-matrix.sh runs each peer's
# repeats in a block). Each run: the server on core 1, ../shared/bench's Go loadgen on core 0 for
# 10 s; the server's user and system clock ticks (/proc/PID/stat) over the run, per 1,000 messages
# (MODE=echo: 100 connections echoing 32 B) or deliveries (MODE=bcast: 1 publisher at 200/s to
# 1,000 subscribers).
#   loadtest/cpu-per-message.sh                       (N=7 MODE=echo)
#   N=5 MODE=bcast loadtest/cpu-per-message.sh
# Environment: N, MODE, BIN (default .build/release/hubbub), UWS_BIN (default
# /tmp/uws-build/uws-peer, built as ../shared/bench/README.md says), BENCH (default ../shared/bench).
set -euo pipefail
N=${N:-7} MODE=${MODE:-echo}
BIN=${BIN:-.build/release/hubbub} UWS_BIN=${UWS_BIN:-/tmp/uws-build/uws-peer}
BENCH=${BENCH:-$(dirname "$0")/../../shared/bench}
LG=$BENCH/loadgen/loadgen
[[ -x $LG ]] || "$BENCH/loadgen/build.sh" >&2
[[ -x $BIN && -x $UWS_BIN ]] || { echo "need $BIN (swift build -c release) and $UWS_BIN" >&2; exit 2; }

ticks() { local s rest; s=$(cat "/proc/$1/stat"); rest=${s##*) }; read -r -a f <<< "$rest"; echo "${f[11]} ${f[12]}"; }

# run PORT COMMAND...: prints "user system" ticks per 1,000 messages
run() {
    local port=$1; shift
    taskset -c 1 "$@" > /dev/null 2>&1 & local pid=$!
    sleep 1.5
    local a b out n
    read -r -a a <<< "$(ticks $pid)"
    if [[ $MODE == echo ]]; then
        out=$(taskset -c 0 "$LG" -mode echo -url "ws://127.0.0.1:$port/echo" -c 100 -d 10s -s 32 2> /dev/null | tail -n 1)
        n=$(grep -o '"msgs":[0-9]*' <<< "$out" | cut -d: -f2)
    else
        out=$(taskset -c 0 "$LG" -mode broadcast -url "ws://127.0.0.1:$port/broadcast" -c 1000 -p 1 -r 200 -d 10s -warmup 1s -drain 3s 2> /dev/null | tail -n 1)
        n=$(grep -o '"delivered":[0-9]*' <<< "$out" | cut -d: -f2)
    fi
    read -r -a b <<< "$(ticks $pid)"
    kill "$pid"; wait "$pid" 2> /dev/null || true
    sleep 0.5
    python3 -c "print(f'{$((b[0] - a[0])) / $n * 1000:.3f} {$((b[1] - a[1])) / $n * 1000:.3f}')"
}

ratios=()
for i in $(seq 1 "$N"); do
    read -r hu hs <<< "$(run 9411 "$BIN" --host 127.0.0.1 --port 9411 --bench --event-loops 1 --limits-max-connections-per-ip 1000000)"
    read -r uu us <<< "$(run 9412 "$UWS_BIN" 9412)"
    r=$(python3 -c "print(round(($hu + $hs) / ($uu + $us), 3))")
    ratios+=("$r")
    echo "round $i, ticks per 1,000 (user system): hubbub $hu $hs  uws $uu $us  total ratio $r"
done
python3 -c "import statistics; print('median ratio', statistics.median([$(IFS=,; echo "${ratios[*]}")]))"
