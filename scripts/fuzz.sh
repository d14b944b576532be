#!/usr/bin/env bash
# Builds the libFuzzer target in fuzz/ over the pure WebSocket codec and runs it.
#
#   scripts/fuzz.sh            run for 60 seconds
#   scripts/fuzz.sh 600        run for 600 seconds
#   scripts/fuzz.sh -runs=N    run exactly N executions
#   scripts/fuzz.sh 60 -jobs=2 extra arguments go to libFuzzer as they are
#
# The binary is built straight from the sources of Sources/HubbubCrypto and Sources/WebSocket with
# `swiftc -sanitize=fuzzer,address` (SwiftPM is not used, so it never touches .build). Everything
# goes to .build-fuzz/: objects, modules, the binary, the corpus (.build-fuzz/corpus, seeded
# from the RFC examples on first use) and crash reproducers (.build-fuzz/artifacts). Reproduce a
# crash with: .build-fuzz/hubbub-fuzz .build-fuzz/artifacts/crash-... and keep it in fuzz/regressions/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT=.build-fuzz
mkdir -p "$OUT/corpus" "$OUT/artifacts"

SWIFTC="${SWIFTC:-swiftc}"
# -sanitize=fuzzer instruments for coverage (and links libFuzzer's main into the final binary);
# every module must be instrumented, so each is compiled with the same flags.
FLAGS=(-sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld
       -I "$OUT"
       -Xcc -fmodule-map-file=Sources/CHubbubZlib/module.modulemap -I Sources/CHubbubZlib
       -Xcc -fmodule-map-file=Sources/COpenSSL/module.modulemap -I Sources/COpenSSL)

build_module() { # name sources...
    local name="$1"; shift
    "$SWIFTC" "${FLAGS[@]}" -module-name "$name" -wmo -emit-module -emit-module-path "$OUT/$name.swiftmodule" \
        -c "$@" -o "$OUT/$name.o"
}

newer() { # target sources... : true when target is missing or older than any source
    local target="$1"; shift
    [[ ! -e "$target" ]] && return 0
    for f in "$@"; do [[ "$f" -nt "$target" ]] && return 0; done
    return 1
}

CRYPTO_SOURCES=(Sources/HubbubCrypto/*.swift)
WS_SOURCES=(Sources/WebSocket/*.swift)
if newer "$OUT/HubbubCrypto.o" "${CRYPTO_SOURCES[@]}" "$0"; then
    echo "==> compiling HubbubCrypto" >&2
    build_module HubbubCrypto "${CRYPTO_SOURCES[@]}"
fi
if newer "$OUT/WebSocket.o" "${WS_SOURCES[@]}" "$OUT/HubbubCrypto.o" "$0"; then
    echo "==> compiling WebSocket" >&2
    build_module WebSocket "${WS_SOURCES[@]}"
fi
if newer "$OUT/hubbub-fuzz" fuzz/FuzzMain.swift "$OUT/WebSocket.o" "$0"; then
    echo "==> linking $OUT/hubbub-fuzz" >&2
    "$SWIFTC" "${FLAGS[@]}" -module-name HubbubFuzz fuzz/FuzzMain.swift "$OUT/WebSocket.o" "$OUT/HubbubCrypto.o" \
        -lz -lssl -lcrypto -o "$OUT/hubbub-fuzz"
fi

# Seeds: one per target (the first byte selects it), from RFC 6455 / RFC 7692 examples.
seed() { printf "$2" > "$OUT/corpus/seed-$1"; }
if [[ ! -e "$OUT/corpus/seed-close-midway" ]]; then
    # target 0, flags (server, deflate), limits, cut seed, then frames
    seed rfc6455-masked   '\x00\x00\xff\xff\x01\x01\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58'
    seed rfc7692-deflate  '\x00\x04\xff\xff\x02\x01\xc1\x87\x00\x00\x00\x00\xf2\x48\xcd\xc9\xc9\x07\x00'
    seed rfc7692-frag     '\x00\x00\xff\xff\x03\x01\x41\x83\x00\x00\x00\x00\xf2\x48\xcd\x80\x84\x00\x00\x00\x00\xc9\xc9\x07\x00'
    seed client-frames    '\x00\x03\xff\xff\x00\x01\x01\x03Hel\x89\x05Hello\x80\x02lo\x82\x7e\x00\x7e'"$(head -c 126 /dev/zero | tr '\0' 'x')"'\x88\x02\x03\xe8'
    seed client-deflate   '\x00\x01\xff\xff\x01\x01\xc1\x07\xf2\x48\xcd\xc9\xc9\x07\x00\xc1\x05\xf2\x00\x11\x00\x00'
    seed close-midway     '\x01\x04\xff\xff\x05\x80\x0f\x09\x05Hel\x00\x02lo\x09\x05Hello\x00\x02lo\x83\x05\x03\xe9bye'
    seed structured       '\x01\x04\xff\xff\x05\x01\x0f\x11\x05Hello\x09\x03Hel\x00\x02lo\x04\x01p\x12\x10compress me more\x83\x05\x03\xe8bye'
    seed http-request     '\x02\xff\x20\x00\x01GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat, hubbub.v1\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits, permessage-deflate; server_max_window_bits=10\r\nOrigin: https://a.example\r\n\r\n\x81\x80\x00\x00\x00\x00'
    seed http-response    '\x03\xff\x20\x00\x01HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n\r\n'
    seed inflate          '\x04\x00\x10\xf2\x48\xcd\xc9\xc9\x07\x00\xfe\xf2\x00\x11\x00\x00\xfe\x00\x05\x00\xfa\xffHello\x00'
    seed roundtrip        '\x04\x07\x10\x05Hello Hello Hello\xfe\xfdA\xfe{"kind":"poi","tags":["a","b"]}'
    seed extensions       '\x05\x03permessage-deflate; server_max_window_bits=10; client_max_window_bits, permessage-deflate; client_no_context_takeover'
fi
if [[ ! -e "$OUT/corpus/seed-body-chunked" ]]; then
    seed body-chunked     '\x06\x00\x40\x02\x34;name=value\r\nWiki\r\n5\r\npedia\r\n0\r\nExpires: never\r\n\r\nGET'
    seed body-length      '\x06\x01\x40\x05hello, world!'
fi

# Inputs that once broke an invariant run first, every time (libFuzzer runs files given as arguments).
if compgen -G "fuzz/regressions/*" > /dev/null; then
    echo "==> regressions: fuzz/regressions" >&2
    SWIFT_BACKTRACE=enable=no "$OUT/hubbub-fuzz" fuzz/regressions/* 2> "$OUT/regressions.log" || { cat "$OUT/regressions.log" >&2; exit 1; }
fi

ARGS=()
case "${1:-}" in
    "") ARGS=(-max_total_time=60) ;;
    -*) ;;
    *) ARGS=(-max_total_time="$1"); shift ;;
esac
echo "==> $OUT/hubbub-fuzz ${ARGS[*]} $*" >&2
# Swift's own crash backtracer fights ASan's signal handling (it reports a bogus stack-buffer-underflow
# in CrashHandlerLinux.cpp after a fatalError): leave crash reports to the sanitizer.
export SWIFT_BACKTRACE=enable=no
# -rss_limit_mb: the machine has 24 GiB; -timeout: a single input taking 10 s is a hang.
exec "$OUT/hubbub-fuzz" "${ARGS[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$OUT/artifacts/" "$@" "$OUT/corpus"
