#!/usr/bin/env bash
# Browser interop: headless Chromium talks to Hubbub's /echo over ws:// and wss://.
#
#   scripts/test-browser.sh
#
# Installs Debian's chromium if missing, makes the dev certificate, starts hubbub with a plain
# and a TLS listener, and serves Tests/browser/echo.html from a small helper HTTP server on
# another loopback port. Chromium (--headless=new --dump-dom) loads the page, which runs the
# checks against ws://127.0.0.1:P/echo and wss://127.0.0.1:Q/echo, writes the outcome into its
# DOM and POSTs it as JSON to the helper. The page holds a resource that the helper answers only
# once the result has been posted, so the load event (and --dump-dom) comes after the tests.
# The dev certificate is trusted by its public-key hash (--ignore-certificate-errors-spki-list),
# not by ignoring all certificate errors. Prints one line per check and, last,
# "browser: N passed, M failed"; exits non-zero on any failure.
#
# Environment: HB_BIN (default .build/release/hubbub), CHROMIUM (browser binary),
# BROWSER_TIMEOUT (seconds for the browser run, default 150).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BROWSER_TIMEOUT="${BROWSER_TIMEOUT:-150}"
PAGE="$REPO_ROOT/Tests/browser/echo.html"
[[ -f "$PAGE" ]] || die "test page $PAGE is missing"

ensure_apt chromium
if [[ -z "${CHROMIUM:-}" ]]; then
    # The real binary; Debian's /usr/bin/chromium wrapper adds flags (extensions, GPU) we don't want.
    if [[ -x /usr/lib/chromium/chromium ]]; then CHROMIUM=/usr/lib/chromium/chromium; else CHROMIUM="$(command -v chromium)"; fi
fi
[[ -x "$CHROMIUM" ]] || die "chromium binary not found (CHROMIUM=$CHROMIUM)"
log "browser: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"

bash "$REPO_ROOT/config/make-dev-cert.sh" >/dev/null
CERT="$REPO_ROOT/config/dev-cert/cert.pem"
KEY="$REPO_ROOT/config/dev-cert/key.pem"
SPKI="$(openssl x509 -in "$CERT" -noout -pubkey | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)"
[[ -n "$SPKI" ]] || die "could not compute the SPKI hash of $CERT"

make_tmpdir WORK

PORT="$(free_port)"
TLS_PORT="$(free_port)"
while [[ "$TLS_PORT" == "$PORT" ]]; do TLS_PORT="$(free_port)"; done
start_hubbub --host 127.0.0.1 --port "$PORT" --tls-port "$TLS_PORT" --tls-cert "$CERT" --tls-key "$KEY" \
    --data-dir "$WORK/data"

# ---- helper HTTP server: serves the page, takes the posted result, holds the page's load event.
cat >"$WORK/helper.py" <<'PY'
import http.server, os, sys, threading

page_path, result_path, port_path, hold_seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
posted = threading.Event()
GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, code, body=b"", ctype="text/plain; charset=utf-8"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        if path == "/echo.html":
            with open(page_path, "rb") as f:
                self._send(200, f.read(), "text/html; charset=utf-8")
        elif path == "/__hold":
            posted.wait(hold_seconds)
            self._send(200, GIF, "image/gif")
        else:
            self._send(404, b"not found\n")

    def do_POST(self):
        if self.path != "/__result":
            return self._send(404, b"not found\n")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        tmp = result_path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, result_path)
        self._send(204)
        posted.set()

    def log_message(self, fmt, *args):
        sys.stderr.write("helper: " + (fmt % args) + "\n")

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(port_path + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_path + ".tmp", port_path)
server.serve_forever()
PY

# Page deadline < helper's hold < browser timeout, so a hung check still yields a report.
((BROWSER_TIMEOUT >= 60)) || die "BROWSER_TIMEOUT must be at least 60 s"
HOLD_SECONDS=$((BROWSER_TIMEOUT - 20))
PAGE_DEADLINE_MS=$(((BROWSER_TIMEOUT - 40) * 1000))
python3 "$WORK/helper.py" "$PAGE" "$WORK/result.json" "$WORK/helper.port" "$HOLD_SECONDS" \
    >"$WORK/helper.log" 2>&1 </dev/null &
HELPER_PID=$!
on_exit "kill $HELPER_PID; wait $HELPER_PID"
for _ in $(seq 100); do
    [[ -s "$WORK/helper.port" ]] && break
    kill -0 "$HELPER_PID" 2>/dev/null || { cat "$WORK/helper.log" >&2; die "the helper HTTP server exited"; }
    sleep 0.1
done
[[ -s "$WORK/helper.port" ]] || die "the helper HTTP server did not start"
HELPER_PORT="$(cat "$WORK/helper.port")"

WS_URL="ws://127.0.0.1:$PORT/echo"
WSS_URL="wss://127.0.0.1:$TLS_PORT/echo"
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
PAGE_URL="http://127.0.0.1:$HELPER_PORT/echo.html?url=$(enc "$WS_URL")&url=$(enc "$WSS_URL")&report=/__result&hold=/__hold&deadline=$PAGE_DEADLINE_MS"

# Headless Chromium in a container logs many harmless D-Bus/GPU complaints; hide those.
chromium_log() {
    grep -v -E 'dbus/|idle_linux|vaapi_wrapper|sandbox_linux|gpu_init|viz_main_impl|Fontconfig' "$WORK/chromium.log" || true
}

log "chromium --headless=new --dump-dom $PAGE_URL"
chrome_rc=0
timeout --kill-after=10 "$BROWSER_TIMEOUT" "$CHROMIUM" \
    --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$WORK/profile" --no-first-run --no-default-browser-check \
    --disable-extensions --disable-background-networking --disable-component-update \
    --disable-sync --disable-default-apps --disable-domain-reliability --no-pings \
    --disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication \
    --ignore-certificate-errors-spki-list="$SPKI" \
    --enable-logging=stderr --v=0 \
    --dump-dom "$PAGE_URL" \
    >"$WORK/dom.html" 2>"$WORK/chromium.log" </dev/null || chrome_rc=$?

if [[ ! -s "$WORK/result.json" ]]; then
    echo "----- chromium log (last 40 lines, D-Bus/GPU noise left out) -----" >&2
    chromium_log | tail -n 40 >&2 || true
    echo "----- dumped DOM -----" >&2
    cat "$WORK/dom.html" >&2 || true
    echo "----- helper log -----" >&2
    cat "$WORK/helper.log" >&2 || true
    if ((chrome_rc == 124 || chrome_rc == 137)); then
        echo "error: chromium did not finish within ${BROWSER_TIMEOUT} s" >&2
    else
        echo "error: the page posted no result (chromium exit status $chrome_rc)" >&2
    fi
    stop_hubbub
    note_hubbub_log 1
    echo "browser: 0 passed, 1 failed"
    exit 1
fi

rc=0
python3 - "$WORK/result.json" "$WORK/dom.html" <<'PY' || rc=$?
import json, sys

with open(sys.argv[1]) as f:
    result = json.load(f)
with open(sys.argv[2], errors="replace") as f:
    dom = f.read()
print(f"user agent: {result.get('userAgent', '?')}")
passed = failed = 0
for r in result.get("results", []):
    ok = bool(r.get("ok"))
    passed += ok
    failed += not ok
    detail = f" -- {r['detail']}" if r.get("detail") else ""
    print(f"{'PASS' if ok else 'FAIL'} {r.get('name')}{detail}")
summary = f"browser: {passed} passed, {failed} failed"
if summary != result.get("summary"):
    print(f"error: page summary {result.get('summary')!r} does not match its results", file=sys.stderr)
    failed += 1
elif summary not in dom:
    print("warning: the dumped DOM does not show the summary (was --dump-dom early?)", file=sys.stderr)
with open(sys.argv[1] + ".count", "w") as f:
    f.write(f"browser: {passed} passed, {failed} failed\n")
sys.exit(0 if failed == 0 and passed > 0 else 1)
PY

if ! kill -0 "$HB_PID" 2>/dev/null; then
    echo "error: hubbub was no longer running at the end of the browser test" >&2
    rc=1
fi
if ((rc != 0)); then
    echo "----- chromium log (last 20 lines, D-Bus/GPU noise left out) -----" >&2
    chromium_log | tail -n 20 >&2 || true
fi
stop_hubbub
note_hubbub_log "$rc"
cat "$WORK/result.json.count" 2>/dev/null || { echo "browser: 0 passed, 1 failed"; rc=1; }
exit "$rc"
