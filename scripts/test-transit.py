#!/usr/bin/env python3
"""GTFS and GTFS-Realtime ingest end to end: uploads, alerts as intel, languages, expiry, bad input, the poller.

Starts hubbub with an API key, a small `routes.gtfsMaxUncompressedBytes` and a 2 h intel TTL, and
four travellers on `/ws` (websockets' sync client):
  alice (profile language fi) and bob (no language) on a corridor along tram route 4,
  carol on a corridor that crosses bus route 55 at ONE of its stops, dave on a corridor near no stop.
A small GTFS feed "city" is built in memory (one agency, agency_lang en; tram route 4, route_type 0,
and bus route 55, route_type 3, six stops each, one stop shared; an unserved stop OLD; 12 stops),
then GTFS-Realtime messages (gtfs-realtime-bindings) are POSTed and the pushes checked:
  - a stop alert → intel.added at that stop (provider, disruption, by.source, modes transit, TTL end);
  - a route alert and a trip alert → one item at every stop of the route (`points`), tagged tram,
    pushed once per corridor;
  - an alert with en/fi/tr/it headers → alice reads Finnish, bob English, in pushes and in
    route.subscribe's list; `translations` has all four;
  - the same id with a new text, then new points → intel.updated; the same message again →
    unchanged, no push; is_deleted → intel.expired; absent from a FULL_DATASET → intel.expired;
  - alerts with no locatable entity (agency only, unknown stop) → rejected with a reason;
  - an alert on bus route 55 ending 4 s from now → carol gets intel.added live, then intel.expired
    once it ends; dave never gets anything.
Bad input, each answered 400 {"error"} with /healthz still ok and the feed in force still placing an
alert at OLD (a stop the refused zips lack): a body that is not a zip, zip bombs (stop_times.txt of
zeros declared honestly, the same declaring 1,000 bytes, an unread shapes.txt declaring too much),
entries ../evil.txt and /abs.txt, zips without stops.txt or stop_times.txt, a truncated FeedMessage
and random bytes (no push follows, nothing ends). A zip with bad rows (wrong column count, bad
latitude and longitude, unknown route_type, stop times naming an unknown trip or stop) is 200 with
each reject's file and line, the rest kept; a good replacement is in force at once.
Then hubbub restarts on the same data with `routes.gtfsRt` polling a local http.server every second
(timeout 1 s): the feeds survive the restart; a 200 with an ETag pushes intel.added; the next polls
send If-None-Match / If-Modified-Since and get 304 (nothing pushed, `result="not_modified"`); 500s
and a hang count in hubbub_gtfs_rt_poll_failures_total{feed="city"}, are logged and back off; a new
200 afterwards pushes intel.updated.
Prints PASS/FAIL per check and `transit: N passed, M failed` last; exits 1 on any failure.
Usage: test-transit.py HB_BIN
"""
import csv
import email.utils
import http.client
import http.server
import io
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
from google.transit import gtfs_realtime_pb2 as rt
from websockets.sync.client import connect

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/release/hubbub"
KEY = "test-transit-key"
TTL = 7200                      # routes.intelTtlSeconds for the run: an open alert ends now + TTL
MAX_UNZIPPED = 2 << 20          # routes.gtfsMaxUncompressedBytes for the run
BOMB = 16 << 20                 # zeros in a bomb entry (about 16 KB deflated)
PUSH_WAIT = 5.0                 # seconds a push may take to arrive
SETTLE = 0.5                    # seconds to wait before saying that nothing (more) came
WIDTH = 300                     # corridors' widthMeters: 150 m either side

# The network: tram 4 west to east along 60.170 N, bus 55 south to north along 24.92 E, crossing
# at T2 (served by both). OLD serves nothing: only the first version of the feed has it.
TRAM = [(f"T{i}", f"Tram stop {i}", 60.170, round(24.900 + 0.01 * i, 3)) for i in range(6)]
BUS = [("B0", "Bus stop 0", 60.154, 24.92), ("B1", "Bus stop 1", 60.162, 24.92), ("T2", "Tram stop 2", 60.170, 24.92),
       ("B3", "Bus stop 3", 60.178, 24.92), ("B4", "Bus stop 4", 60.186, 24.92), ("B5", "Bus stop 5", 60.194, 24.92)]
OLD = ("OLD", "Old depot", 60.230, 24.780)
NEW = ("NEW", "New depot", 60.232, 24.785)
STOPS = {s[0]: s for s in TRAM + BUS}
TRAM_ROUTE, BUS_ROUTE = "R4", "R55"
TRIPS = {TRAM_ROUTE: ["R4-1", "R4-2", "R4-3"], BUS_ROUTE: ["R55-1", "R55-2", "R55-3"]}
SERVES = {TRAM_ROUTE: [s[0] for s in TRAM], BUS_ROUTE: [s[0] for s in BUS]}
TRAM_CORRIDOR = {"from": {"lat": 60.170, "lon": 24.895}, "to": {"lat": 60.170, "lon": 24.955}, "widthMeters": WIDTH}
ONE_STOP_CORRIDOR = {"from": {"lat": 60.186, "lon": 24.905}, "to": {"lat": 60.186, "lon": 24.935}, "widthMeters": WIDTH}  # B4 only
NOWHERE_CORRIDOR = {"from": {"lat": 60.140, "lon": 24.895}, "to": {"lat": 60.140, "lon": 24.955}, "widthMeters": WIDTH}


# ---------------------------------------------------------------------------------------------
# Checks

class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=None):
        ok = bool(ok)
        if ok:
            self.passed += 1
            print(f"PASS {what}", flush=True)
        else:
            self.failed += 1
            text = "" if detail is None else ": " + (detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False, default=str))
            print(f"FAIL {what}{text[:600]}", flush=True)
        return ok


C = Checks()


def dig(value, *keys):
    """value[k1][k2]... or None when any step is missing."""
    for k in keys:
        try:
            value = value[k]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def near(a, b, eps=1e-6):
    return a is not None and b is not None and abs(a - b) <= eps


def point_set(points):
    return {(round(p["lat"], 5), round(p["lon"], 5)) for p in points or []}


def stop_points(ids):
    return {(round(STOPS[i][2], 5), round(STOPS[i][3], 5)) for i in ids}


# ---------------------------------------------------------------------------------------------
# The server

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Hubbub:
    def __init__(self, data, port, log_path):
        self.data, self.port, self.log_path, self.proc = data, port, log_path, None

    def start(self, env_extra=None):
        env = dict(os.environ, HUBBUB_API_KEY=KEY, HUBBUB_ROUTES_INTEL_TTL_SECONDS=str(TTL),
                   HUBBUB_ROUTES_GTFS_MAX_UNCOMPRESSED_BYTES=str(MAX_UNZIPPED), **(env_extra or {}))
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([BIN, "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", self.data, "--log-level", "info",
                                     "--auth-kdf-iterations", "1000", "--auth-kdf-max-queued", "100000", "--auth-signups-per-address-per-hour", "100000000",
                                     "--rate-limits-write-burst", "100000", "--rate-limits-write-per-second", "100000",
                                     "--rate-limits-auth-burst", "1000", "--rate-limits-read-burst", "100000",
                                     "--rate-limits-read-per-second", "100000"],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"hubbub exited ({self.proc.returncode}) at start:\n{self.log_tail()}")
            if healthz(self.port) == 200:
                return
            time.sleep(0.1)
        raise SystemExit(f"hubbub did not answer /healthz within 30 s:\n{self.log_tail()}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log_size(self):
        return os.path.getsize(self.log_path)

    def log_since(self, offset):
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def log_tail(self, lines=40):
        return "\n".join(self.log_since(0).splitlines()[-lines:])


def request(port, method, path, body=None, headers=None, key=KEY, timeout=30):
    """(status, JSON answer or text); status None when the connection failed."""
    h = dict(headers or {})
    if key:
        h["Authorization"] = f"Bearer {key}"
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        raw = r.read()
        conn.close()
    except OSError as e:
        return None, repr(e)
    try:
        return r.status, json.loads(raw)
    except ValueError:
        return r.status, raw.decode(errors="replace")


def healthz(port):
    return request(port, "GET", "/healthz", key=None, timeout=5)[0]


def post_gtfs(port, feed, zip_bytes):
    return request(port, "POST", f"/api/feeds/gtfs?feed={feed}", zip_bytes, {"Content-Type": "application/zip"})


def post_rt(port, feed, msg):
    body = msg if isinstance(msg, (bytes, bytearray)) else msg.SerializeToString()
    return request(port, "POST", f"/api/feeds/gtfs-rt?feed={feed}", body, {"Content-Type": "application/x-protobuf"})


def metrics(port):
    """{(name, frozenset(labels)): value} from GET /metrics."""
    status, text = request(port, "GET", "/metrics")
    out = {}
    if status != 200 or not isinstance(text, str):
        return out
    for line in text.splitlines():
        m = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+(\S+)', line)
        if not m or line.startswith("#"):
            continue
        labels = frozenset(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        try:
            out[(m.group(1), labels)] = float(m.group(4))
        except ValueError:
            pass
    return out


def metric(port, name, **labels):
    return metrics(port).get((name, frozenset(labels.items())), 0.0)


# ---------------------------------------------------------------------------------------------
# Travellers (websockets' sync client; a thread reads, so pushes are kept whatever the main thread does)

class Traveller:
    def __init__(self, port, name):
        self.name = name
        self.ws = connect(f"ws://127.0.0.1:{port}/ws", max_size=None, open_timeout=10)
        self.cond = threading.Condition()
        self.replies, self.pushes, self.next, self.closed = {}, [], 1, False
        threading.Thread(target=self._read, daemon=True).start()
        r = self.call("account.signup", username=name, email=f"{name}@example.com", password="secret123")
        if not r.get("ok"):
            r = self.call("account.login", login=name, password="secret123")
        if not r.get("ok"):
            raise SystemExit(f"{name}: cannot sign up or log in: {r}")
        self.uid = r["result"]["user"]["id"]
        a = self.call("auth", token=r["result"]["token"])
        if not a.get("ok"):
            raise SystemExit(f"{name}: auth refused: {a}")

    def _read(self):
        try:
            for raw in self.ws:
                m = json.loads(raw)
                with self.cond:
                    if "event" in m and "room" in m:
                        self.pushes.append(m)
                    elif "id" in m:
                        self.replies[m["id"]] = m
                    self.cond.notify_all()
        except Exception:
            pass
        finally:
            with self.cond:
                self.closed = True
                self.cond.notify_all()

    def call(self, op, timeout=15, **args):
        with self.cond:
            rid = self.next
            self.next += 1
        self.ws.send(json.dumps({"id": rid, "op": op, "args": args}))
        with self.cond:
            self.cond.wait_for(lambda: rid in self.replies or self.closed, timeout)
            return self.replies.pop(rid, {"ok": False, "error": {"code": "no_reply", "message": f"{op}: no reply"}})

    def wait_for(self, pred, timeout=PUSH_WAIT):
        """The first push matching pred (waiting up to timeout), or None."""
        with self.cond:
            self.cond.wait_for(lambda: any(pred(p) for p in self.pushes), timeout)
            return next((p for p in self.pushes if pred(p)), None)

    def matching(self, pred):
        with self.cond:
            return [p for p in self.pushes if pred(p)]

    def count(self):
        with self.cond:
            return len(self.pushes)

    def since(self, n):
        with self.cond:
            return list(self.pushes[n:])

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass


def item_push(event, *, body=None, item=None):
    """A predicate: an `event` push about the item with that id and/or body."""
    def pred(p):
        if p.get("event") != event:
            return False
        it = dig(p, "data", "item")
        if isinstance(it, str):  # intel.expired: the id
            return item is not None and it == item and body is None
        return isinstance(it, dict) and (item is None or it.get("id") == item) and (body is None or it.get("body") in
                                                                                    ((body,) if isinstance(body, str) else body))
    return pred


def expired(item_id):
    return lambda p: p.get("event") == "intel.expired" and dig(p, "data", "item") == item_id


# ---------------------------------------------------------------------------------------------
# GTFS zips

def csv_bytes(rows):
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def network_files(extra_stops=(OLD,)):
    """The feed "city": agency, 12 stops (with OLD), tram 4 and bus 55, three trips each."""
    stops = [["stop_id", "stop_name", "stop_lat", "stop_lon"]]
    stops += [[s[0], s[1], f"{s[2]:.6f}", f"{s[3]:.6f}"] for s in TRAM + [b for b in BUS if b[0] != "T2"] + list(extra_stops)]
    trips, times = [["route_id", "service_id", "trip_id", "direction_id"]], [["trip_id", "arrival_time", "departure_time", "stop_id", "stop_sequence"]]
    for route, ids in TRIPS.items():
        for n, trip in enumerate(ids):
            trips.append([route, "WD", trip, str(n % 2)])
            seq = SERVES[route] if n % 2 == 0 else list(reversed(SERVES[route]))
            for k, stop in enumerate(seq):
                t = 8 * 3600 + n * 1800 + k * 120
                hhmmss = f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
                times.append([trip, hhmmss, hhmmss, stop, str(k + 1)])
    return {
        "agency.txt": csv_bytes([["agency_id", "agency_name", "agency_url", "agency_timezone", "agency_lang"],
                                 ["HSL", "Helsinki Regional Transport", "https://example.org/", "Europe/Helsinki", "en"]]),
        "stops.txt": csv_bytes(stops),
        "routes.txt": csv_bytes([["route_id", "agency_id", "route_short_name", "route_long_name", "route_type"],
                                 [TRAM_ROUTE, "HSL", "4", "Munkkiniemi - Katajanokka", "0"],
                                 [BUS_ROUTE, "HSL", "55", "Rautatientori - Koskela", "3"]]),
        "calendar.txt": csv_bytes([["service_id", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                                    "start_date", "end_date"], ["WD", "1", "1", "1", "1", "1", "0", "0", "20260101", "20271231"]]),
        "trips.txt": csv_bytes(trips),
        "stop_times.txt": csv_bytes(times),
    }


def make_zip(files, names=None):
    """A deflated zip of files {name: bytes}; names maps a file to the entry name to write it under."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            info = zipfile.ZipInfo((names or {}).get(name, name), date_time=(2026, 11, 24, 12, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return buf.getvalue()


def declare_size(data, name, size):
    """The zip with entry name's uncompressed size (local header and central directory) set to size."""
    out = bytearray(data)
    z = zipfile.ZipFile(io.BytesIO(data))
    info = z.getinfo(name)
    struct.pack_into("<I", out, info.header_offset + 22, size)
    pos = z.start_dir
    while out[pos:pos + 4] == b"PK\x01\x02":
        n, m, k = struct.unpack_from("<HHH", out, pos + 28)
        if out[pos + 46:pos + 46 + n].decode() == name:
            struct.pack_into("<I", out, pos + 24, size)
        pos += 46 + n + m + k
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# GTFS-Realtime

def message(*entities, full=False):
    m = rt.FeedMessage()
    m.header.gtfs_realtime_version = "2.0"
    m.header.incrementality = rt.FeedHeader.FULL_DATASET if full else rt.FeedHeader.DIFFERENTIAL
    m.header.timestamp = int(time.time())
    for e in entities:
        m.entity.add().CopyFrom(e)
    return m


def alert(eid, *, stops=(), routes=(), trips=(), agencies=(), header=(), start=None, end=None, deleted=False):
    """An entity: header is [(text, language or None)]."""
    e = rt.FeedEntity()
    e.id = eid
    if deleted:
        e.is_deleted = True
        return e
    a = e.alert
    if start is not None or end is not None:
        p = a.active_period.add()
        if start is not None:
            p.start = start
        if end is not None:
            p.end = end
    for s in stops:
        a.informed_entity.add(stop_id=s)
    for r in routes:
        a.informed_entity.add(route_id=r)
    for t in trips:
        a.informed_entity.add().trip.trip_id = t
    for ag in agencies:
        a.informed_entity.add(agency_id=ag)
    for text, lang in header:
        tr = a.header_text.translation.add(text=text)
        if lang:
            tr.language = lang
    a.cause = rt.Alert.CONSTRUCTION
    a.effect = rt.Alert.DETOUR
    return e


def answer_ok(status, answer, what, **expected):
    """200 and each expected count."""
    ok = status == 200 and isinstance(answer, dict) and all(answer.get(k) == v for k, v in expected.items()) \
        and isinstance(answer.get("ms"), (int, float))
    return C.check(ok, f"{what}: 200 with {', '.join(f'{k} {v}' for k, v in expected.items())} and ms", [status, answer])


def refused_400(status, answer, what):
    return C.check(status == 400 and isinstance(answer, dict) and isinstance(answer.get("error"), str) and answer["error"],
                   f"{what}: 400 {{error}}", [status, answer])


def check_item(item, what, *, source="city", points=None, tags=(), body=None, expires=None):
    """A provider item's shape (contract): kind, origin, by, modes, lat/lon = first point, points iff > 1."""
    if not C.check(isinstance(item, dict), f"{what}: an item", item):
        return
    problems = []
    if item.get("kind") != "disruption": problems.append(f"kind {item.get('kind')}")
    if item.get("origin") != "provider": problems.append(f"origin {item.get('origin')}")
    if item.get("by") != {"source": source}: problems.append(f"by {item.get('by')}")
    if item.get("modes") != ["transit"]: problems.append(f"modes {item.get('modes')}")
    for t in tags:
        if t not in (item.get("tags") or []): problems.append(f"tags {item.get('tags')} lack {t}")
    if body is not None and item.get("body") != body: problems.append(f"body {item.get('body')!r}, not {body!r}")
    if points is not None:
        want = stop_points(points)
        if len(want) > 1:
            got = item.get("points")
            if not isinstance(got, list) or point_set(got) != want or len(got) != len(want):
                problems.append(f"points {got} are not the {len(want)} stops {sorted(points)}")
            elif not (near(item.get("lat"), got[0]["lat"]) and near(item.get("lon"), got[0]["lon"])):
                problems.append(f"lat/lon {item.get('lat')},{item.get('lon')} are not the first point {got[0]}")
        else:
            if "points" in item: problems.append(f"points given for one place: {item['points']}")
            if (round(item.get("lat", 0), 5), round(item.get("lon", 0), 5)) not in want:
                problems.append(f"lat/lon {item.get('lat')},{item.get('lon')} not at {points}")
    if expires is not None and not (isinstance(item.get("expiresAt"), (int, float)) and abs(item["expiresAt"] - expires) <= 5):
        problems.append(f"expiresAt {item.get('expiresAt')}, expected about {expires:.0f}")
    C.check(not problems, f"{what}: kind, origin, by.source, modes, place, tags, body, expiresAt", problems)


# ---------------------------------------------------------------------------------------------
# The GTFS-Realtime URL the poller reads: a local http.server whose answer is switchable

class PolledFeed:
    def __init__(self):
        self.lock = threading.Lock()
        self.mode, self.body, self.etag, self.modified = "ok", b"", None, None
        self.requests = []  # (monotonic time, mode, headers)

    def serve(self, body, etag):
        with self.lock:
            self.mode, self.body, self.etag = "ok", body, etag
            self.modified = email.utils.formatdate(time.time(), usegmt=True)

    def set_mode(self, mode):
        with self.lock:
            self.mode = mode

    def seen(self, pred=lambda r: True):
        with self.lock:
            return [r for r in self.requests if pred(r)]


class PollHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    HANG = 3.0  # seconds: longer than routes.gtfsRtTimeoutSeconds (1)

    def do_GET(self):
        feed = self.server.feed
        with feed.lock:
            mode, body, etag, modified = feed.mode, feed.body, feed.etag, feed.modified
            feed.requests.append((time.monotonic(), mode, {k.lower(): v for k, v in self.headers.items()}))
        try:
            if mode == "500":
                self._answer(500, b"operator backend down\n", "text/plain")
            elif mode == "hang":
                time.sleep(self.HANG)
                self._answer(503, b"too late\n", "text/plain")
            else:
                tags = [t.strip() for t in (self.headers.get("If-None-Match") or "").split(",")]
                if etag and etag in tags:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self._answer(200, body, "application/x-protobuf", {"ETag": etag, "Last-Modified": modified})
        except OSError:
            pass  # the poller gave up (the hang)

    def _answer(self, status, body, ctype, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            if v:
                self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# ---------------------------------------------------------------------------------------------

def preflight():
    """The settings this test sets through the environment must exist (an unknown HUBBUB_* variable
    is ignored silently, and the test would then fail for a reason it does not show)."""
    p = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=30)
    text = p.stdout + p.stderr
    for flag in ("routes-gtfs-max-uncompressed-bytes", "routes-gtfs-rt", "routes-gtfs-rt-timeout-seconds", "routes-intel-ttl-seconds"):
        C.check(f"--{flag} " in text or f"--{flag}\n" in text, f"hubbub --help lists --{flag} (HUBBUB_{flag.upper().replace('-', '_')})")


def phase_one(hub, port):
    """Uploads, alerts, languages, updates, expiry, bad input; returns the ids learnt."""
    ids = {}
    alice, bob, carol, dave = (Traveller(port, n) for n in ("alice", "bob", "carol", "dave"))

    r = alice.call("profile.update", language="fi")
    C.check(r.get("ok"), "profile.update {language: fi} accepted", r)
    r = bob.call("profile.update", language="not a language!")
    C.check(not r.get("ok") and dig(r, "error", "code") == "bad_request" and "language" in (dig(r, "error", "message") or ""),
            "profile.update with an invalid language: bad_request naming field language", r)

    for t, corridor in ((alice, TRAM_CORRIDOR), (bob, TRAM_CORRIDOR), (carol, ONE_STOP_CORRIDOR), (dave, NOWHERE_CORRIDOR)):
        r = t.call("route.subscribe", **corridor)
        if not r.get("ok"):
            raise SystemExit(f"{t.name}: route.subscribe refused: {r}")
        t.room = r["result"]["room"]
    C.check(alice.room == bob.room and len({alice.room, carol.room, dave.room}) == 3, "alice and bob share a room; carol's and dave's are others")

    # Before any GTFS feed: 409; without the key: 401.
    status, answer = post_rt(port, "city", message(alert("early", stops=["T0"], header=[("early", None)])))
    C.check(status == 409 and isinstance(answer, dict) and answer.get("error"), "GTFS-Realtime before its GTFS feed: 409 {error}", [status, answer])
    status, _ = request(port, "POST", "/api/feeds/gtfs?feed=city", make_zip(network_files()), {"Content-Type": "application/zip"}, key="wrong")
    C.check(status == 401, "POST /api/feeds/gtfs with a wrong key: 401", status)

    # The feed.
    files = network_files()
    status, answer = post_gtfs(port, "city", make_zip(files))
    if not answer_ok(status, answer, "GTFS feed city", feed="city", agencies=1, stops=12, routes=2, trips=6, added=14, changed=0,
                     unchanged=0, rejected=0, rejects=[]):
        raise SystemExit("the GTFS upload failed: nothing else can be checked")

    # A stop alert (untagged header): at T4, for the tram corridor only.
    t0 = time.time()
    status, answer = post_rt(port, "city", message(alert("stop-1", stops=["T4"], header=[("Stop T4 closed", None)])))
    answer_ok(status, answer, "stop alert", added=1, changed=0, unchanged=0, ended=0, rejected=0)
    p = alice.wait_for(item_push("intel.added", body="Stop T4 closed"))
    check_item(dig(p, "data", "item"), "stop alert pushed to alice", points=["T4"], body="Stop T4 closed", expires=t0 + TTL)
    ids["stop"] = dig(p, "data", "item", "id")
    C.check(bob.wait_for(item_push("intel.added", body="Stop T4 closed")), "stop alert pushed to bob")

    # A route alert (an en header): at every stop of tram 4, once per corridor.
    status, answer = post_rt(port, "city", message(alert("route-tram", routes=[TRAM_ROUTE], header=[("Tram 4 diverted", "en")])))
    answer_ok(status, answer, "route alert", added=1, rejected=0)
    p = alice.wait_for(item_push("intel.added", body="Tram 4 diverted"))
    item = dig(p, "data", "item")
    check_item(item, "route alert", points=SERVES[TRAM_ROUTE], tags=["tram"], body="Tram 4 diverted")
    C.check(dig(item, "translations") == {"en": "Tram 4 diverted"}, "route alert: translations {en}", dig(item, "translations"))
    ids["route"] = dig(item, "id")

    # A trip alert: the trip's route's stops.
    status, answer = post_rt(port, "city", message(alert("trip-tram", trips=["R4-2"], header=[("Trip R4-2 cancelled", None)])))
    answer_ok(status, answer, "trip alert", added=1, rejected=0)
    p = alice.wait_for(item_push("intel.added", body="Trip R4-2 cancelled"))
    check_item(dig(p, "data", "item"), "trip alert (its route's stops)", points=SERVES[TRAM_ROUTE], tags=["tram"])
    ids["trip"] = dig(p, "data", "item", "id")

    # A translated alert: fi first, so "the first" would be Finnish; the agency's language (en) wins.
    headers = [("Pysäkki T1 suljettu", "fi"), ("Stop T1 closed", "en"), ("T1 durağı kapalı", "tr"), ("Fermata T1 chiusa", "it")]
    status, answer = post_rt(port, "city", message(alert("multi-1", stops=["T1"], header=headers)))
    answer_ok(status, answer, "translated alert", added=1, rejected=0)
    pa = alice.wait_for(item_push("intel.added", body=[h[0] for h in headers]))
    pb = bob.wait_for(item_push("intel.added", body=[h[0] for h in headers]))
    C.check(dig(pa, "data", "item", "body") == "Pysäkki T1 suljettu", "alice (language fi) reads the push in Finnish", dig(pa, "data", "item"))
    C.check(dig(pb, "data", "item", "body") == "Stop T1 closed", "bob (no language) reads the push in the agency's language (en)",
            dig(pb, "data", "item"))
    C.check(dig(pa, "data", "item", "translations") == {lang: text for text, lang in headers}, "translations hold en, fi, tr and it",
            dig(pa, "data", "item", "translations"))
    ids["multi"] = dig(pa, "data", "item", "id")
    for name, want in (("alice", "Pysäkki T1 suljettu"), ("bob", "Stop T1 closed")):
        t = Traveller(port, name)
        r = t.call("route.subscribe", **TRAM_CORRIDOR)
        listed = {i.get("id"): i for i in dig(r, "result", "items") or []}
        C.check(dig(listed, ids["multi"], "body") == want, f"{name}'s route.subscribe list shows the alert as {want!r}", dig(listed, ids["multi"]))
        t.close()

    # Updates: new text, then new points; the same message again changes nothing.
    status, answer = post_rt(port, "city", message(alert("stop-1", stops=["T4"], header=[("Stop T4 closed until noon", None)])))
    answer_ok(status, answer, "the stop alert with a new text", added=0, changed=1, unchanged=0)
    p = alice.wait_for(item_push("intel.updated", body="Stop T4 closed until noon"))
    C.check(dig(p, "data", "item", "id") == ids["stop"], "new text: intel.updated of the same item", p)
    n_alice = alice.count()
    status, answer = post_rt(port, "city", message(alert("stop-1", stops=["T4"], header=[("Stop T4 closed until noon", None)])))
    answer_ok(status, answer, "the same message again", added=0, changed=0, unchanged=1)
    time.sleep(SETTLE)
    C.check(alice.count() == n_alice, "the same message again: no push", alice.since(n_alice))
    status, answer = post_rt(port, "city", message(alert("stop-1", stops=["T3"], header=[("Stop T4 closed until noon", None)])))
    answer_ok(status, answer, "the stop alert moved to T3", changed=1)
    p = alice.wait_for(lambda p: item_push("intel.updated", item=ids["stop"])(p) and near(dig(p, "data", "item", "lon"), STOPS["T3"][3]))
    C.check(p, "new points: intel.updated at T3", alice.matching(item_push("intel.updated", item=ids["stop"])))

    # Removal: is_deleted, then absence from a full dataset.
    status, answer = post_rt(port, "city", message(alert("stop-1", deleted=True)))
    answer_ok(status, answer, "is_deleted", ended=1)
    C.check(alice.wait_for(expired(ids["stop"])) and bob.wait_for(expired(ids["stop"])), "is_deleted: intel.expired {item} to alice and bob")
    full = message(alert("route-tram", routes=[TRAM_ROUTE], header=[("Tram 4 diverted", "en")]),
                   alert("trip-tram", trips=["R4-2"], header=[("Trip R4-2 cancelled", None)]), full=True)
    status, answer = post_rt(port, "city", full)
    answer_ok(status, answer, "FULL_DATASET without the translated alert", added=0, changed=0, unchanged=2, ended=1)
    C.check(alice.wait_for(expired(ids["multi"])) and bob.wait_for(expired(ids["multi"])), "absent from FULL_DATASET: intel.expired to alice and bob")
    C.check(len(alice.matching(item_push("intel.added", item=ids["route"]))) == 1,
            "the route alert (six stops in alice's corridor) was pushed to her room once")

    # Nothing to place it at.
    status, answer = post_rt(port, "city", message(alert("agency-only", agencies=["HSL"], header=[("All lines delayed", None)]),
                                                   alert("unknown-stop", stops=["NOPE"], header=[("Somewhere closed", None)])))
    answer_ok(status, answer, "alerts with no locatable entity", added=0, rejected=2)
    rejects = {r.get("record"): r.get("reason") for r in dig(answer, "rejects") or []}
    C.check(rejects.get("alert agency-only") and rejects.get("alert unknown-stop"),
            "rejects name alert agency-only and alert unknown-stop with a reason", dig(answer, "rejects"))

    # An alert ending in 4 s on bus 55: carol's corridor passes B4 only; T2 is in the tram corridor.
    end = int(time.time()) + 4
    status, answer = post_rt(port, "city", message(alert("bus-soon", routes=[BUS_ROUTE], start=end - 3600, end=end,
                                                         header=[("Bus 55 replaced by taxis", None)])))
    answer_ok(status, answer, "bus alert ending in 4 s", added=1)
    p = carol.wait_for(item_push("intel.added", body="Bus 55 replaced by taxis"))
    C.check(p, "carol (one stop of bus 55 in her corridor) gets intel.added live")
    check_item(dig(p, "data", "item"), "bus alert", points=SERVES[BUS_ROUTE], tags=["bus"], expires=end)
    C.check(near(dig(p, "data", "item", "expiresAt"), end, 0.001), "bus alert: expiresAt is the active period's end", dig(p, "data", "item"))
    ids["bus"] = dig(p, "data", "item", "id")
    C.check(alice.wait_for(item_push("intel.added", body="Bus 55 replaced by taxis")), "alice's corridor holds T2 (bus 55): she gets it too")
    e = carol.wait_for(expired(ids["bus"]), timeout=end - time.time() + 5)
    C.check(e, "carol gets intel.expired once the alert ended (expiry timer)")
    late = time.time() - end
    C.check(e and -0.5 <= late <= 3, f"intel.expired came {late:.1f} s after the end (0 to 3 s)")
    C.check([p["event"] for p in carol.pushes] == ["intel.added", "intel.expired"], "carol got nothing else",
            [(p["event"], dig(p, "data", "item", "body") or dig(p, "data", "item")) for p in carol.pushes])

    # Bad input. Each refused zip lacks OLD: the feed in force still has it.
    shrunk = network_files(extra_stops=())
    bomb = dict(shrunk, **{"stop_times.txt": bytes(BOMB)})
    bad_zips = [
        ("a body that is not a zip", random.Random(1).randbytes(4096)),
        ("zip bomb: stop_times.txt of 16 MiB zeros (declared)", make_zip(bomb)),
        ("zip bomb: stop_times.txt of 16 MiB zeros declaring 1,000 bytes", declare_size(make_zip(bomb), "stop_times.txt", 1000)),
        # (A large file the server does not read, shapes.txt say, is never inflated: not a bomb, not refused.)
        ("entry ../evil.txt", make_zip(dict(shrunk, **{"evil": b"x"}), names={"evil": "../evil.txt"})),
        ("entry /abs.txt", make_zip(dict(shrunk, **{"abs": b"x"}), names={"abs": "/abs.txt"})),
        ("no stops.txt", make_zip({k: v for k, v in shrunk.items() if k != "stops.txt"})),
        ("no stop_times.txt", make_zip({k: v for k, v in shrunk.items() if k != "stop_times.txt"})),
    ]
    good = alert("route-tram", routes=[TRAM_ROUTE], header=[("Tram 4 diverted", "en")])
    truncated = message(good, alert("x" * 20, stops=["T0"], header=[("y" * 200, None)]), full=True).SerializeToString()[:-40]
    bad_rt = [("a truncated FeedMessage (FULL_DATASET)", truncated), ("random bytes", random.Random(2).randbytes(2048))]
    n_alice = alice.count()

    def still_placed(k, after):
        C.check(healthz(port) == 200, f"after {after}: /healthz ok")
        status, answer = post_rt(port, "city", message(alert(f"still-{k}", stops=["OLD"], header=[(f"Depot note {k}", None)])))
        return answer_ok(status, answer, f"after {after}: an alert at OLD (only in the feed in force) is placed", added=1, rejected=0)

    for k, (what, body) in enumerate(bad_zips):
        status, answer = post_gtfs(port, "city", body)
        if not refused_400(status, answer, f"GTFS {what}") and status == 200:
            print("     (it was taken and replaced the feed: the first version is POSTed again for the next cases)")
            post_gtfs(port, "city", make_zip(network_files()))
            continue
        still_placed(k, what)
    for k, (what, body) in enumerate(bad_rt, start=len(bad_zips)):
        refused_400(*post_rt(port, "city", body), f"GTFS-Realtime {what}")
        still_placed(k, what)
    r = alice.call("intel.get", item=ids["route"])
    C.check(r.get("ok"), "after the truncated FULL_DATASET: the route alert is still live", r)
    time.sleep(SETTLE)
    C.check(alice.count() == n_alice, "bad input: no push to alice", alice.since(n_alice))

    # Bad rows are refused with file and line, the rest kept (another feed, far away).
    stops_txt = ("stop_id,stop_name,stop_lat,stop_lon\n"
                 "S1,First,61.000000,25.500000\n"
                 "S2,Second,61.004000,25.510000,extra\n"        # line 3: a column too many
                 "S3,Third,91.500000,25.520000\n"              # line 4: latitude
                 "S4,Fourth,61.010000,abc\n"                   # line 5: longitude
                 "S5,Fifth,61.012000,25.530000\n")
    routes_txt = "route_id,route_short_name,route_type\nR1,1,3\nR2,2,42\n"  # line 3: route_type 42
    trips_txt = "route_id,service_id,trip_id\nR1,WD,t1\n"
    times_txt = ("trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"
                 "t1,08:00:00,08:00:00,S1,1\n"
                 "t1,08:05:00,08:05:00,S5,2\n"
                 "ghost,08:06:00,08:06:00,S1,1\n"              # line 4: unknown trip
                 "t1,08:07:00,08:07:00,S9,3\n")                # line 5: unknown stop
    zip_bytes = make_zip({"agency.txt": b"agency_name,agency_url,agency_timezone,agency_lang\nRegion,https://example.org/,Europe/Helsinki,fi\n",
                          "stops.txt": stops_txt.encode(), "routes.txt": routes_txt.encode(), "trips.txt": trips_txt.encode(),
                          "stop_times.txt": times_txt.encode()})
    status, answer = post_gtfs(port, "region", zip_bytes)
    answer_ok(status, answer, "GTFS with bad rows", feed="region", stops=2, routes=1, trips=1, added=3, rejected=6)
    got = {(r.get("record"), r.get("line")) for r in dig(answer, "rejects") or [] if r.get("reason")}
    want = {("stops.txt", 3), ("stops.txt", 4), ("stops.txt", 5), ("routes.txt", 3), ("stop_times.txt", 4), ("stop_times.txt", 5)}
    C.check(want <= got, "rejects name file and line with a reason: stops.txt 3 (columns), 4 (lat), 5 (lon), routes.txt 3 (route_type), "
            "stop_times.txt 4 (trip), 5 (stop)", dig(answer, "rejects"))
    status, answer = post_rt(port, "region", message(alert("r1", routes=["R1"], header=[("Linja 1 myöhässä", "fi")])))
    answer_ok(status, answer, "feed region (bad rows left out) places a route alert", added=1, rejected=0)

    # A good replacement is in force at once: OLD gone, NEW there.
    status, answer = post_gtfs(port, "city", make_zip(network_files(extra_stops=(NEW,))))
    answer_ok(status, answer, "the city feed replaced (NEW instead of OLD)", stops=12, routes=2, trips=6, rejected=0)
    status, answer = post_rt(port, "city", message(alert("old-gone", stops=["OLD"], header=[("Old", None)]),
                                                   alert("new-here", stops=["NEW"], header=[("New", None)])))
    answer_ok(status, answer, "after the replacement: NEW places, OLD is rejected", added=1, rejected=1)

    time.sleep(SETTLE)
    C.check(not dave.pushes, "dave (no stop in his corridor) got no push at all", [(p["event"], dig(p, "data", "item")) for p in dave.pushes])
    for t in (alice, bob, carol, dave):
        t.close()
    return ids


def logged_failure(text):
    return any(re.search(r"\b(warning|error|critical)\b", line) and re.search(r"\bcity\b", line) for line in text.splitlines())


def phase_two(hub, port, ids, feed):
    """After a restart with the poller on: the feeds kept, conditional GETs, failures, recovery."""
    status, answer = post_rt(port, "city", message(alert("after-restart", stops=["NEW"], header=[("Restarted", None)]),
                                                   alert("old-after-restart", stops=["OLD"], header=[("Old", None)])))
    answer_ok(status, answer, "after the restart: the stored city feed (the replacement) places alerts", added=1, rejected=1)
    alice = Traveller(port, "alice")
    r = alice.call("route.subscribe", **TRAM_CORRIDOR)
    listed = {i.get("id") for i in dig(r, "result", "items") or []}
    C.check(ids.get("route") in listed and ids.get("bus") not in listed and ids.get("multi") not in listed,
            "after the restart: the route alert is still in the corridor, the expired ones are not", sorted(listed))

    def wait_metric(name, above, timeout, **labels):
        deadline = time.monotonic() + timeout
        while True:
            v = metric(port, name, **labels)
            if v > above or time.monotonic() > deadline:
                return v
            time.sleep(0.2)

    ok_polls = wait_metric("hubbub_gtfs_rt_polls_total", 0, 6, feed="city", result="ok")
    C.check(ok_polls >= 1, 'the poller fetched the URL: hubbub_gtfs_rt_polls_total{feed="city",result="ok"} > 0', ok_polls)

    # 200 with a new ETag: the alert is pushed.
    v1 = message(alert("pull-1", stops=["T5"], header=[("Pulled: stop T5 closed", None)])).SerializeToString()
    feed.serve(v1, '"v1"')
    modified_v1 = feed.modified
    p = alice.wait_for(item_push("intel.added", body="Pulled: stop T5 closed"), timeout=6)
    check_item(dig(p, "data", "item"), "polled alert pushed (intel.added)", points=["T5"], body="Pulled: stop T5 closed")
    pulled = dig(p, "data", "item", "id")

    # Unchanged: conditional requests, 304, nothing pushed.
    n_alice = alice.count()
    nm = wait_metric("hubbub_gtfs_rt_polls_total", 0, 6, feed="city", result="not_modified")
    C.check(nm >= 1, 'polls after the 200 answered 304: hubbub_gtfs_rt_polls_total{feed="city",result="not_modified"} > 0', nm)
    conditional = feed.seen(lambda r: r[2].get("if-none-match") == '"v1"')
    C.check(conditional, 'the polls after the 200 send If-None-Match: "v1"', [r[2] for r in feed.seen()[-3:]])
    C.check(any(r[2].get("if-modified-since") == modified_v1 for r in conditional), "... and If-Modified-Since: the 200's Last-Modified",
            [r[2] for r in conditional[-2:]])
    C.check(alice.count() == n_alice, "304: no push", alice.since(n_alice))

    # 500s: counted, logged, backed off.
    failures0 = metric(port, "hubbub_gtfs_rt_poll_failures_total", feed="city")
    log_at = hub.log_size()
    t500 = time.monotonic()
    feed.set_mode("500")
    deadline = time.monotonic() + 12
    while len(feed.seen(lambda r: r[1] == "500")) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    failed = feed.seen(lambda r: r[1] == "500")
    f500 = wait_metric("hubbub_gtfs_rt_poll_failures_total", failures0, 3, feed="city")
    C.check(f500 >= failures0 + 2, f'500: hubbub_gtfs_rt_poll_failures_total{{feed="city"}} went from {failures0:.0f} to {f500:.0f} '
            f'({len(failed)} failing polls in {time.monotonic() - t500:.1f} s)')
    gaps = [round(b[0] - a[0], 2) for a, b in zip(failed, failed[1:])]
    C.check(len(gaps) >= 2 and gaps[-1] >= 1.8, f"500: the polls back off (gaps {gaps} s; interval 1 s)")
    C.check(logged_failure(hub.log_since(log_at)), "500: a warning or error log line names feed city", hub.log_since(log_at)[-400:])
    C.check(healthz(port) == 200, "during the failures: /healthz ok")

    # A hang longer than the timeout: counted and logged too.
    log_at = hub.log_size()
    feed.set_mode("hang")
    hung = wait_metric("hubbub_gtfs_rt_poll_failures_total", f500, 12, feed="city")
    C.check(hung > f500 and feed.seen(lambda r: r[1] == "hang"),
            f'hang (3 s, timeout 1 s): hubbub_gtfs_rt_poll_failures_total{{feed="city"}} went from {f500:.0f} to {hung:.0f}')
    C.check(logged_failure(hub.log_since(log_at)), "hang: a warning or error log line names feed city", hub.log_since(log_at)[-400:])

    # Recovery: a 200 with a new version pushes the change.
    ok_before = metric(port, "hubbub_gtfs_rt_polls_total", feed="city", result="ok")
    feed.serve(message(alert("pull-1", stops=["T5"], header=[("Pulled: stop T5 open again", None)])).SerializeToString(), '"v2"')
    t_ok = time.monotonic()
    p = alice.wait_for(item_push("intel.updated", body="Pulled: stop T5 open again"), timeout=20)
    C.check(p and dig(p, "data", "item", "id") == pulled, f"recovery: the next 200 pushes intel.updated ({time.monotonic() - t_ok:.1f} s after)", p)
    ok_after = metric(port, "hubbub_gtfs_rt_polls_total", feed="city", result="ok")
    C.check(ok_after > ok_before, f'recovery: hubbub_gtfs_rt_polls_total{{feed="city",result="ok"}} {ok_before:.0f} → {ok_after:.0f}')
    alice.close()


def main():
    started = time.monotonic()
    if not os.access(BIN, os.X_OK):
        raise SystemExit(f"no server binary at {BIN}")
    preflight()
    data = tempfile.mkdtemp(prefix="hubbub-transit-")
    port = free_port()
    hub = Hubbub(data, port, os.path.join(data, "hubbub.log"))
    poll_server = None
    try:
        hub.start()
        ids = phase_one(hub, port)
        hub.stop()

        feed = PolledFeed()
        feed.serve(message().SerializeToString(), '"v0"')  # an empty differential message first
        poll_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PollHandler)
        poll_server.daemon_threads = True
        poll_server.feed = feed
        threading.Thread(target=poll_server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{poll_server.server_address[1]}/alerts.pb"
        hub.start({"HUBBUB_ROUTES_GTFS_RT": json.dumps([{"feed": "city", "url": url, "intervalSeconds": 1}]),
                   "HUBBUB_ROUTES_GTFS_RT_TIMEOUT_SECONDS": "1",
                   # Not in the contract; an unknown variable is ignored. Keeps the recovery wait short.
                   "HUBBUB_ROUTES_GTFS_RT_MAX_BACKOFF_SECONDS": "4"})
        phase_two(hub, port, ids, feed)
    except SystemExit as e:
        C.check(False, "the run went to its end", str(e))
    finally:
        hub.stop()
        if poll_server:
            poll_server.shutdown()
    print(f"transit: {C.passed} passed, {C.failed} failed ({time.monotonic() - started:.0f} s)")
    if C.failed:
        print(f"data directory and server log kept: {data} ({hub.log_path})")
        return 1
    shutil.rmtree(data, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
