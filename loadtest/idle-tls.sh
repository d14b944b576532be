#!/usr/bin/env bash
# What an idle TLS connection costs: N idle wss:// connections (hubbub-load idle), server RSS before
# and after, Hubbub beside uWebSockets' SSLApp on the same OpenSSL and the same client, two rounds
# each; then OpenSSL's own floor (loadtest/openssl-floor.c: what the library keeps per connection
# once its buffers are released). Server on CPU 1, client on CPU 0.
#   loadtest/idle-tls.sh [N]        (default 1500)
# Needs a release build. The uWS row needs uWebSockets and uSockets cloned under UWS_BUILD
# (default /tmp/uws-build, as ../shared/bench/README.md says); uSockets is built there with OpenSSL
# in uSockets-ssl. Without them the row is left out, loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1500}
UWS_BUILD=${UWS_BUILD:-/tmp/uws-build}
BIN=.build/release/hubbub LOAD=.build/release/hubbub-load
[[ -x $BIN && -x $LOAD ]] || { echo "build first: swift build -c release" >&2; exit 1; }
config/make-dev-cert.sh >/dev/null
CERT=config/dev-cert/cert.pem KEY=config/dev-cert/key.pem
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"

peers=(hubbub)
if [[ -d $UWS_BUILD/uWebSockets/src && -d $UWS_BUILD/uSockets/src ]]; then
  if [[ ! -x $UWS_BUILD/uws-tls-peer || loadtest/uws-tls-peer.cpp -nt $UWS_BUILD/uws-tls-peer ]]; then
    [[ -d $UWS_BUILD/uSockets-ssl ]] || cp -r "$UWS_BUILD/uSockets" "$UWS_BUILD/uSockets-ssl"
    (cd "$UWS_BUILD/uSockets-ssl" && make clean >/dev/null 2>&1 || true
     make WITH_OPENSSL=1 WITH_LIBUV=0 >/dev/null 2>&1 && ar rcs uSockets.a ./*.o)
    g++ -O3 -march=native -flto=auto -std=c++20 -w -I"$UWS_BUILD/uWebSockets/src" -I"$UWS_BUILD/uSockets-ssl/src" \
      -DLIBUS_USE_OPENSSL loadtest/uws-tls-peer.cpp "$UWS_BUILD/uSockets-ssl/uSockets.a" -lssl -lcrypto -lz -o "$UWS_BUILD/uws-tls-peer"
  fi
  peers+=(uws)
else
  echo "NOTE: no uWebSockets under $UWS_BUILD: the uws row is left out" >&2
fi

PID="" DATA=""
stop() { [[ -n $PID ]] && { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }; PID=""; [[ -n $DATA ]] && rm -rf "$DATA"; DATA=""; }
trap stop EXIT
for round in 1 2; do
  for who in "${peers[@]}"; do
    DATA=$(mktemp -d)
    if [[ $who == hubbub ]]; then
      taskset -c 1 "$BIN" --host 127.0.0.1 --port 19400 --tls-port 19401 --tls-cert $CERT --tls-key $KEY --event-loops 1 \
        --data-dir "$DATA" --limits-max-connections-per-ip 1000000 --log-level error &
    else
      taskset -c 1 "$UWS_BUILD/uws-tls-peer" 19401 $CERT $KEY >/dev/null &
    fi
    PID=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/19401) 2>/dev/null && break; sleep 0.1; done
    line=$(taskset -c 0 "$LOAD" idle --url wss://127.0.0.1:19401/echo -c "$N" --hold 3 --server-pid "$PID" 2>/dev/null | tail -n 1)
    python3 -c 'import json, sys
r = json.loads(sys.argv[2])
print("round %s  %-7s %d idle wss: %6.2f KB per connection (RSS %d -> %d KB, %d failed)" % (sys.argv[3], sys.argv[1],
      r["connections"], r["kb_per_conn"], r["rss_before_kb"], r["rss_after_kb"], r["failed"]))' "$who" "$line" "$round"
    stop
  done
done
cc -O1 loadtest/openssl-floor.c -lssl -lcrypto -o /tmp/openssl-floor
/tmp/openssl-floor $CERT $KEY | head -n 1
