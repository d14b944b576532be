#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (one binary per parser of bytes from outside; fuzz/README.md
# lists them and what each checks) and runs them, one after the other.
#
#   scripts/fuzz.sh                    every target for 60 seconds
#   scripts/fuzz.sh 600                every target for 600 seconds
#   scripts/fuzz.sh -runs=N            every target for N executions
#   scripts/fuzz.sh --ci               every target for its CI budget (CI_RUNS below: about 3 minutes in all)
#   scripts/fuzz.sh --long             every target for at least 10,000,000 executions
#   scripts/fuzz.sh --build            build what is stale, run nothing
#   scripts/fuzz.sh --target json ...  only the targets named (repeat it, or --target json,csv)
#   scripts/fuzz.sh 60 -jobs=2         further arguments go to libFuzzer as they are
#
# Each binary is built straight from the sources it fuzzes with `swiftc -sanitize=fuzzer,address`
# (SwiftPM is not used, so this never touches .build, and a module is only the files the parser
# needs: a file being rewritten elsewhere in its target cannot break the build). Everything goes to
# .build-fuzz/: modules, binaries (fuzz-<target>), each target's corpus (corpus/<target>, beside
# the seeds in fuzz/seeds/<target>), logs (logs/<target>.log) and crash inputs
# (artifacts/<target>/). The inputs in fuzz/regressions/<target>/ run first, every time.
# Reproduce a crash with: .build-fuzz/fuzz-<target> <file>, and keep it in fuzz/regressions/<target>/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# FUZZ_OUT: where everything goes (default .build-fuzz); another folder keeps a short run from
# sharing the corpora and logs of a long one still running.
OUT=${FUZZ_OUT:-.build-fuzz}
mkdir -p "$OUT/corpus" "$OUT/artifacts" "$OUT/logs"

TARGETS=(websocket json csv gtfs-rt xml postgres scenario)
# Executions per target in --ci, from their speed on a 2-core machine (fuzz/README.md has the
# figures): about 30 seconds each; -max_total_time caps any target that runs slower there.
declare -A CI_RUNS=([websocket]=150000 [json]=600000 [csv]=60000 [gtfs-rt]=400000 [xml]=120000 [postgres]=40000 [scenario]=1000000)
CI_MAX_SECONDS=45
# Sanitizers of a target built as one module (link_target) when not fuzzer,address: the postgres
# target's sources (the escaping and the harness's lexer) hold no unsafe pointer, C call or
# unchecked access, so AddressSanitizer has nothing to find there, and its allocator was two thirds
# of the target's time (perf; 780 exec/s with it, a long run took 3 hours).
declare -A SANITIZERS=([postgres]=fuzzer)
# Longest input per target: room for the structure each parser reads, small enough to stay fast.
declare -A MAX_LEN=([websocket]=16384 [json]=4096 [csv]=4096 [gtfs-rt]=4096 [xml]=8192 [postgres]=2048 [scenario]=4096)

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

MODE=time
SECONDS_PER_TARGET=60
SELECTED=()
PASS=()
while (($#)); do
    case "$1" in
        --target) shift; (($#)) || usage; IFS=, read -ra names <<< "$1"; SELECTED+=("${names[@]}") ;;
        --target=*) IFS=, read -ra names <<< "${1#--target=}"; SELECTED+=("${names[@]}") ;;
        --ci) MODE=ci ;;
        --long) MODE=long ;;
        --build) MODE=build ;;
        -h|--help) usage ;;
        -runs=*) MODE=given; PASS+=("$1") ;;
        -*) PASS+=("$1") ;;
        *[!0-9]*) echo "unknown argument $1" >&2; usage ;;
        *) SECONDS_PER_TARGET="$1" ;;
    esac
    shift
done
((${#SELECTED[@]})) || SELECTED=("${TARGETS[@]}")
for t in "${SELECTED[@]}"; do
    [[ " ${TARGETS[*]} " == *" $t "* ]] || { echo "unknown target $t (targets: ${TARGETS[*]})" >&2; exit 2; }
done

# MARK: building

SWIFTC="${SWIFTC:-swiftc}"
# -sanitize=fuzzer instruments for coverage (and links libFuzzer's main into the final binary);
# every module must be instrumented, so each is compiled with the same flags.
FLAGS=(-sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld -swift-version 6
       -I "$OUT"
       -Xcc -fmodule-map-file=Sources/Platform/CHubbubZlib/module.modulemap -I Sources/Platform/CHubbubZlib
       -Xcc -fmodule-map-file=Sources/Platform/COpenSSL/module.modulemap -I Sources/Platform/COpenSSL
       -Xcc -fmodule-map-file=Sources/Platform/CLibXML2/module.modulemap -I Sources/Platform/CLibXML2 -Xcc -I/usr/include/libxml2)
# Everything is rebuilt when the flags change (not at every edit of this script).
STAMP="$OUT/flags"
[[ -e "$STAMP" && "$(cat "$STAMP")" == "${FLAGS[*]}" ]] || echo "${FLAGS[*]}" > "$STAMP"

# SwiftProtobuf's runtime, from the checkout SwiftPM resolved (the version Package.resolved pins).
PROTOBUF=.build/checkouts/swift-protobuf/Sources/SwiftProtobuf

newer() { # target sources... : true when target is missing or older than any source
    local target="$1"; shift
    [[ ! -e "$target" ]] && return 0
    for f in "$@"; do [[ "$f" -nt "$target" ]] && return 0; done
    return 1
}

module() { # name "dependency modules" "extra flags" sources...
    local name="$1" deps="$2" extra="$3"; shift 3
    local dep_objects=()
    for d in $deps; do dep_objects+=("$OUT/$d.o"); done
    newer "$OUT/$name.o" "$@" "${dep_objects[@]}" "$STAMP" || return 0
    echo "==> compiling $name" >&2
    # shellcheck disable=SC2086 # extra flags are words
    nice -n 10 "$SWIFTC" "${FLAGS[@]}" $extra -module-name "$name" -wmo -emit-module -emit-module-path "$OUT/$name.swiftmodule" \
        -c "$@" -o "$OUT/$name.o"
}

link_target() { # target "modules" "libraries" sources...
    local target="$1" modules="$2" libraries="$3"; shift 3
    local objects=()
    for m in $modules; do objects+=("$OUT/$m.o"); done
    newer "$OUT/fuzz-$target" fuzz/Shared/*.swift "$@" "${objects[@]}" "$STAMP" || return 0
    echo "==> linking $OUT/fuzz-$target" >&2
    local flags=("${FLAGS[@]/#-sanitize=fuzzer,address/-sanitize=${SANITIZERS[$target]:-fuzzer,address}}")
    # shellcheck disable=SC2086 # libraries are words
    nice -n 10 "$SWIFTC" "${flags[@]}" -module-name "Fuzz${target//-/}" fuzz/Shared/*.swift "$@" "${objects[@]}" $libraries \
        -o "$OUT/fuzz-$target"
}

build() {
    case "$1" in
        websocket)
            module HubbubCrypto "" "" Sources/Platform/HubbubCrypto/*.swift
            module WebSocket "HubbubCrypto" "" Sources/Protocol/WebSocket/*.swift
            link_target websocket "HubbubCrypto WebSocket" "-lz -lssl -lcrypto" fuzz/WebSocket/*.swift ;;
        json)
            # The parser and the value it makes: the rest of Realtime (rooms, the envelope) is not needed.
            module Realtime "" "" Sources/Protocol/Realtime/JSON.swift Sources/Protocol/Realtime/JSONParser.swift
            link_target json "Realtime" "" fuzz/JSON/*.swift ;;
        csv)
            module Transit "" "" Sources/Domains/Transit/Rules/*.swift
            link_target csv "Transit" "" fuzz/CSV/*.swift ;;
        gtfs-rt)
            [[ -d "$PROTOBUF" ]] || { echo "no $PROTOBUF: resolve the package first (swift package resolve, or any swift build)" >&2; return 1; }
            module SwiftProtobuf "" "-enable-upcoming-feature ExistentialAny -package-name swift_protobuf" "$PROTOBUF"/*.swift
            module Transit "" "" Sources/Domains/Transit/Rules/*.swift
            module TransitFeeds "Transit SwiftProtobuf" "" Sources/Domains/Transit/Feeds/*.swift
            link_target gtfs-rt "SwiftProtobuf Transit TransitFeeds" "" fuzz/GTFSRealtime/*.swift ;;
        xml)
            module StreamingXML "" "" Sources/Protocol/StreamingXML/*.swift
            module Tonight "" "" Sources/Domains/Tonight/Rules/*.swift
            link_target xml "StreamingXML Tonight" "-lxml2" fuzz/XML/*.swift ;;
        postgres)
            # One module with the target, which reaches the escaping's internals (PostgresStatement, the tokenizer).
            link_target postgres "" "" fuzz/Postgres/*.swift Sources/Core/Storage/SQLValue.swift Sources/Core/Storage/PostgresLiteral.swift \
                Sources/Core/Storage/PostgresDialect.swift Sources/Core/Storage/PostgresBlock.swift ;;
        scenario)
            # The scenario files' reader and the settings it fills (not the harness's clients and reports).
            module HubbubCrypto "" "" Sources/Platform/HubbubCrypto/*.swift
            module Realtime "" "" Sources/Protocol/Realtime/JSON.swift Sources/Protocol/Realtime/JSONParser.swift
            module Routes "HubbubCrypto" "" Sources/Domains/Routes/Rules/*.swift
            module LoadHarness "Realtime Routes" "" loadtest/Sources/LoadHarness/{Scenario,ScenarioReader,RateSchedule,Threshold,RouteSettings,TonightSettings}.swift
            link_target scenario "HubbubCrypto Realtime Routes LoadHarness" "-lssl -lcrypto" fuzz/Scenario/*.swift ;;
    esac
}

for t in "${SELECTED[@]}"; do build "$t"; done
[[ "$MODE" == build ]] && exit 0

# MARK: running

# Swift's own crash backtracer fights ASan's signal handling (it reports a bogus stack-buffer-underflow
# in CrashHandlerLinux.cpp after a fatalError): leave crash reports to the sanitizer.
export SWIFT_BACKTRACE=enable=no
# Five frames of where a block was allocated, not thirty: the targets allocate on every token and
# record, and the deeper unwinding halves some targets' speed. Rerun a reproducer with
# ASAN_OPTIONS=malloc_context_size=30 for the whole stack.
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=5}"

final_stat() { # log name: a value of libFuzzer's -print_final_stats
    sed -n "s/^stat::$2: *//p" "$1" | tail -1
}

failed=()
SUMMARY=()
for t in "${SELECTED[@]}"; do
    bin="$OUT/fuzz-$t" log="$OUT/logs/$t.log"
    mkdir -p "$OUT/corpus/$t" "$OUT/artifacts/$t"
    if compgen -G "fuzz/regressions/$t/*" > /dev/null; then
        if ! "$bin" fuzz/regressions/"$t"/* > "$OUT/logs/$t-regressions.log" 2>&1; then
            echo "==> $t: a regression input fails (fuzz/regressions/$t):" >&2
            grep -E 'invariant broken|ERROR: AddressSanitizer|Fatal error|Running: ' "$OUT/logs/$t-regressions.log" | tail -6 >&2
            failed+=("$t")
            continue
        fi
    fi
    case "$MODE" in
        ci) args=(-runs="${CI_RUNS[$t]}" -max_total_time="$CI_MAX_SECONDS") ;;
        long) args=(-runs=10000000) ;;
        given) args=() ;;
        time) args=(-max_total_time="$SECONDS_PER_TARGET") ;;
    esac
    echo "==> $bin ${args[*]} ${PASS[*]}" >&2
    status=0
    # -rss_limit_mb: the machine has 24 GiB; -timeout: a single input taking 10 s is a hang.
    "$bin" "${args[@]}" -max_len="${MAX_LEN[$t]}" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$OUT/artifacts/$t/" "${PASS[@]}" "$OUT/corpus/$t" "fuzz/seeds/$t" > "$log" 2>&1 || status=$?
    runs="$(final_stat "$log" number_of_executed_units)" speed="$(final_stat "$log" average_exec_per_sec)"
    line="$(printf '%-10s %12s runs %8s exec/s  corpus %5s' "$t" "${runs:-?}" "${speed:-?}" "$(find "$OUT/corpus/$t" -type f | wc -l)")"
    if ((status != 0)); then
        failed+=("$t")
        line+="  FAILED (exit $status, $log)"
        grep -E 'invariant broken|ERROR: (AddressSanitizer|libFuzzer)|Fatal error|Test unit written' "$log" | tail -6 >&2
    fi
    echo "$line" >&2
    SUMMARY+=("$line")
done

echo "==> summary" >&2
printf '%s\n' "${SUMMARY[@]}" >&2
if ((${#failed[@]})); then
    echo "==> failed: ${failed[*]}" >&2
    exit 1
fi
