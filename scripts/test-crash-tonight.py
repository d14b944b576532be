#!/usr/bin/env python3
"""kill -9 during an event-feed ingest leaves the store consistent and loses no user's acknowledged state.

Starts hubbub with an API key, ingests a small known feed (scripts/gen-feed.py, seed 7) and signs up
a few event-goers who set their preferences near its venues, favourite its artists and categories,
follow and dismiss its events. Then, twice, a large feed (seed 8, no ID in common with the small
one but the categories; about 33 MB) is POSTed, streamed, while the goers keep following events,
favouriting artists and moving their radius, and the server gets SIGKILL in the middle of the
ingest, when the store shows:
  1. the first batch with the large feed's venues durable (its artists went before; more venues
     and all its events still to come);
  2. about a third of its events durable (the rest still to be written, and no answer yet).
After each kill the server is restarted on the same data directory and checked:
  - it answers /healthz, `PRAGMA integrity_check` says ok, and every catalog row seen durable
    before the kill is still there;
  - the small feed POSTed again is all `unchanged` (every record of it kept, none altered);
  - each goer's `prefs.get` (location, radius, maxPrice, categories, favourites), `plans.list` and
    `event.get`'s plan hold every acknowledged change and nothing never sent; a `subscribe` to
    `user:<id>` answers a snapshot with the same prefs and plans.
At the end the large feed POSTed whole answers 200 with nothing rejected or changed and every record
counted (what was written before the kills is `unchanged`); once more, all `unchanged`; and with
the server stopped the database passes `integrity_check` and no event, plan or favourite points at
a record that is not there.
Prints `crash-tonight: N passed, M failed` last. Usage: test-crash-tonight.py HB_BIN
"""
import asyncio
import http.client
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

from websockets.exceptions import ConnectionClosed

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
from crashlib import Results, free_port, kill_when, session, start

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/release/hubbub"
GEN_FEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen-feed.py")
KEY = "crash-tonight-key"
SMALL = ["--artists", "200", "--venues", "100", "--events", "500", "--seed", "7"]
LARGE = ["--artists", "3000", "--venues", "2000", "--events", "20000", "--seed", "8"]
GOERS = 6
CHURN_OPS = 400  # the most changes each goer sends during one ingest (the kill comes first)
rng = random.Random(20261124)


def gen_feed(args, out):
    """Writes a feed with gen-feed.py; returns its records per type (distinct IDs, all valid)."""
    p = subprocess.run([sys.executable, GEN_FEED, *args, "--out", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("gen-feed.py failed: " + p.stderr)
    return json.loads(p.stderr.strip().splitlines()[-1])["xml"]["records"]


def feed_ids(path):
    """{(type, ID)} of a feed's records."""
    with open(path, encoding="utf-8") as f:
        return set(re.findall(r'<(Category|Artist|Venue|Event) ID="([^"]*)"', f.read()))


def post_feed(port, path, progress=None, timeout=120):
    """POSTs the feed at path to /api/feeds/events, streamed; (status, answer). progress["sent"]
    counts the bytes sent."""
    size = os.path.getsize(path)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest("POST", "/api/feeds/events")
        conn.putheader("Authorization", f"Bearer {KEY}")
        conn.putheader("Content-Type", "application/xml")
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 16):
                conn.send(chunk)
                if progress is not None:
                    progress["sent"] += len(chunk)
        r = conn.getresponse()
        body = r.read()
        try:
            return r.status, json.loads(body)
        except ValueError:
            return r.status, body.decode(errors="replace")
    finally:
        conn.close()


def healthz(port):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/healthz")
        r = conn.getresponse()
        return r.status, r.read().decode(errors="replace")
    except OSError as e:
        return None, repr(e)


class Upload(threading.Thread):
    """The large feed POSTed in the background; status stays None when no answer came."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.port, self.path = port, path
        self.progress = {"sent": 0}
        self.status = self.answer = self.error = None
        self.done = False

    def run(self):
        try:
            self.status, self.answer = post_feed(self.port, self.path, self.progress)
        except Exception as e:  # the server was killed: expected
            self.error = repr(e)
        finally:
            self.done = True


CATALOG = ("tonight_category", "tonight_artist", "tonight_venue", "tonight_event")


class Stop(Exception):
    """The server did not come back: the checks that need it are skipped."""


class Store:
    """A read-only look at DATA/hubbub.sqlite (WAL: it reads beside the running server)."""

    def __init__(self, data):
        self.db = sqlite3.connect(f"file:{data}/hubbub.sqlite?mode=ro", uri=True, timeout=5)
        self.last = None

    def counts(self):
        """Rows per catalog table; the last answer again if the database is busy for a moment."""
        try:
            self.last = self.db.execute("SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in CATALOG)).fetchone()
        except sqlite3.OperationalError:
            pass
        return self.last

    def integrity(self):
        return [r[0] for r in self.db.execute("PRAGMA integrity_check").fetchall()]

    def close(self):
        self.db.close()


class Goer:
    """One event-goer and what they were acknowledged (acked) and what they sent (tried)."""

    def __init__(self, i, name):
        self.i, self.name = i, name
        self.client = self.uid = None
        self.location = None
        self.max_price = None
        self.categories = []
        self.radius_acked, self.radius_pending = None, None
        self.artists_acked, self.artists_tried = set(), set()
        self.cats_acked = set()
        self.follows_acked, self.follows_tried = set(), set()
        self.dismissed = set()

    def prefs_args(self, radius):
        a = {"location": {"lat": self.location[0], "lon": self.location[1]}, "radiusKm": radius}
        if self.max_price is not None:
            a["maxPrice"] = self.max_price
        if self.categories:
            a["categories"] = self.categories
        return a


def read_small_feed(path):
    """Located venues, artists, events (id, venue) and category ids of the small feed."""
    root = ET.parse(path).getroot()
    venues = []
    for v in root.iter("Venue"):
        lat, lon = v.findtext("VenueLatitude"), v.findtext("VenueLongitude")
        if lat and lon:
            venues.append((v.get("ID"), float(lat), float(lon)))
    artists = [a.get("ID") for a in root.iter("Artist")]
    events = [(e.get("ID"), e.find("EventVenue").get("ID")) for e in root.iter("Event")]
    categories = [c.get("ID") for c in root.iter("Category")]
    return venues, artists, events, categories


async def main():
    data = tempfile.mkdtemp(prefix="hubbub-crash-tonight-")
    feeds = tempfile.mkdtemp(prefix="hubbub-crash-tonight-feeds-")
    small_xml, large_xml = os.path.join(feeds, "small.xml"), os.path.join(feeds, "large.xml")
    t0 = time.monotonic()
    small_records, large_records = gen_feed(SMALL, small_xml), gen_feed(LARGE, large_xml)
    small_total, large_total = sum(small_records.values()), sum(large_records.values())
    small_ids, large_ids = feed_ids(small_xml), feed_ids(large_xml)
    common = {x for x in small_ids & large_ids if x[0] != "Category"}  # the categories are the same 75 in every feed
    if common:
        raise SystemExit(f"the large feed shares records with the small one, pick other seeds: {sorted(common)[:5]}")
    print(f"feeds: small {small_records} ({os.path.getsize(small_xml)} bytes), large {large_records} ({os.path.getsize(large_xml)} bytes)")
    venues, artists, events, categories = read_small_feed(small_xml)

    os.environ["HUBBUB_API_KEY"] = KEY  # crashlib's start passes the environment on; a key beats a flag in ps
    port = free_port()
    url = f"ws://127.0.0.1:{port}"
    proc = start(BIN, port, data)
    res = Results()
    stderr_of_killed = []

    status, first = await asyncio.to_thread(post_feed, port, small_xml)
    res.check(status == 200 and isinstance(first, dict) and first.get("added") == small_total and first.get("rejected") == 0,
              f"the small feed's first ingest: expected 200 with added {small_total}, got {status} {str(first)[:300]}")
    first_added = first.get("added") if isinstance(first, dict) else None

    # Event-goers near the small feed's venues, each with favourites and plans, all acknowledged.
    goers = [Goer(i, f"goer{i}") for i in range(GOERS)]
    refused = []
    for g in goers:
        g.client, g.uid = await session(url, g.name)
        vid, lat, lon = venues[(g.i * 7) % len(venues)]
        g.location = (round(lat + 0.01 * (g.i + 1), 6), round(lon - 0.01 * (g.i + 1), 6))
        g.max_price = 40.0 + 10 * g.i if g.i % 2 else None
        g.categories = sorted(rng.sample(categories, 2)) if g.i % 3 == 0 else []
        g.radius_pending = 10.0 + g.i
        m = await g.client.call("prefs.set", **g.prefs_args(g.radius_pending))
        if m.get("ok"):
            g.radius_acked, g.radius_pending = g.radius_pending, None
        else:
            refused.append((g.name, "prefs.set", m.get("error")))
        for a in rng.sample(artists, 2):
            g.artists_tried.add(a)
            m = await g.client.call("artist.favorite", artist=a)
            (g.artists_acked.add(a) if m.get("ok") else refused.append((g.name, "artist.favorite", m.get("error"))))
        if g.i % 2 == 0:
            c = rng.choice(categories)
            m = await g.client.call("category.favorite", category=c)
            (g.cats_acked.add(c) if m.get("ok") else refused.append((g.name, "category.favorite", m.get("error"))))
        here = [e for e, v in events if v == vid] or [events[g.i][0]]
        for e in [here[0], rng.choice(events)[0]]:
            g.follows_tried.add(e)
            m = await g.client.call("event.follow", event=e)
            (g.follows_acked.add(e) if m.get("ok") else refused.append((g.name, "event.follow", m.get("error"))))
        d = rng.choice([e for e, _ in events if e not in g.follows_tried])
        m = await g.client.call("event.dismiss", event=d)
        (g.dismissed.add(d) if m.get("ok") else refused.append((g.name, "event.dismiss", m.get("error"))))
    res.check(not refused, "the goers' setup was refused", refused)

    async def churn(g):
        """Changes g's state as fast as acknowledged until the server is gone."""
        follow_next = [e for e, _ in events if e not in g.follows_tried and e not in g.dismissed]
        favorite_next = [a for a in artists if a not in g.artists_tried]
        rng.shuffle(follow_next)
        rng.shuffle(favorite_next)
        sent = 0
        for n in range(CHURN_OPS):
            op = ("follow", "favorite", "follow", "prefs")[n % 4]
            if (op == "follow" and not follow_next) or (op == "favorite" and not favorite_next):
                op = "prefs"
            try:
                if op == "follow":
                    e = follow_next.pop()
                    g.follows_tried.add(e)
                    m = await g.client.call("event.follow", event=e)
                    if m.get("ok"):
                        g.follows_acked.add(e)
                elif op == "favorite":
                    a = favorite_next.pop()
                    g.artists_tried.add(a)
                    m = await g.client.call("artist.favorite", artist=a)
                    if m.get("ok"):
                        g.artists_acked.add(a)
                else:
                    g.radius_pending = 20.0 + n % 250 + g.i / 10  # within tonight.maxRadiusKm (300)
                    m = await g.client.call("prefs.set", **g.prefs_args(g.radius_pending))
                    if m.get("ok"):
                        g.radius_acked, g.radius_pending = g.radius_pending, None
            except (ConnectionClosed, OSError):
                return sent
            sent += 1
            if not m.get("ok"):
                refused.append((g.name, op, m.get("error")))
        return sent

    seen_durable = [0] * len(CATALOG)  # the most rows of each catalog table seen before a kill

    async def crash(label, fire):
        """POSTs the large feed while the goers churn; SIGKILL once fire(catalog row counts) says so."""
        nonlocal proc
        store = Store(data)
        before = store.counts()
        up = Upload(port, large_xml)
        up.start()
        churners = [asyncio.create_task(churn(g)) for g in goers]
        t = time.monotonic()
        await kill_when(proc, lambda: 1 if up.done or fire(store.counts()) else 0, 1)
        took = time.monotonic() - t
        at_kill = store.counts()  # read once more after the kill: all that was durable by then, at least
        store.close()
        stderr_of_killed.append(proc.stderr.read().decode(errors="replace"))
        await asyncio.to_thread(up.join, 30)
        churn_sent = await asyncio.gather(*churners)
        for k in range(len(CATALOG)):
            seen_durable[k] = max(seen_durable[k], at_kill[k])
        print(f"{label}: killed after {took:.2f} s, {up.progress['sent']} of {os.path.getsize(large_xml)} bytes sent; "
              f"catalog rows before {dict(zip(CATALOG, before))}, at the kill {dict(zip(CATALOG, at_kill))}; "
              f"goers' changes sent meanwhile {sum(churn_sent)}")
        res.check(up.status is None, f"{label}: the kill did not land in the middle of the ingest (it answered {up.status} {str(up.answer)[:200]})")
        res.check(not refused, f"{label}: goers' changes refused during the ingest", refused)
        refused.clear()
        return at_kill

    async def verify(label, at_kill):
        """The restarted server: health, the store, the small feed, every goer's state."""
        status, body = await asyncio.to_thread(healthz, port)
        res.check(status == 200 and '"ok"' in body, f"{label}: /healthz after the restart answered {status} {body[:200]}")
        try:
            store = Store(data)
            integrity = store.integrity()
            now = store.counts()
            store.close()
        except sqlite3.DatabaseError as e:
            integrity, now = [repr(e)], (0,) * len(CATALOG)
        res.check(integrity == ["ok"], f"{label}: PRAGMA integrity_check after the restart", integrity)
        lost = [(t, n, a) for t, n, a in zip(CATALOG, now, at_kill) if n < a]
        res.check(not lost, f"{label}: catalog rows durable before the kill are gone (table, now, at the kill)", lost)

        status, again = await asyncio.to_thread(post_feed, port, small_xml)
        ok = status == 200 and isinstance(again, dict) and (again.get("added"), again.get("changed"), again.get("unchanged"), again.get("rejected")) == (0, 0, first_added, 0)
        res.check(ok, f"{label}: the small feed again: expected added 0, changed 0, unchanged {first_added}, rejected 0; "
                      f"got {status} {str(again)[:300]}")

        for g in goers:
            g.client, uid = await session(url, g.name)
            res.check(uid == g.uid, f"{label}: {g.name} logs in as {uid}, signed up as {g.uid}")
            m = await g.client.call("prefs.get")
            p = m.get("result") or {}
            radii = {r for r in (g.radius_acked, g.radius_pending) if r is not None}
            loc = p.get("location") or {}
            problems = []
            if not m.get("ok"):
                problems.append(("prefs.get", m.get("error")))
            else:
                if abs(loc.get("lat", 1e9) - g.location[0]) > 1e-9 or abs(loc.get("lon", 1e9) - g.location[1]) > 1e-9:
                    problems.append(("location", loc, g.location))
                if p.get("radiusKm") not in radii:
                    problems.append(("radiusKm", p.get("radiusKm"), sorted(radii)))
                if p.get("maxPrice") != g.max_price or p.get("categories") != g.categories:
                    problems.append(("maxPrice/categories", p.get("maxPrice"), p.get("categories"), g.max_price, g.categories))
                fav = set(p.get("favoriteArtists") or [])
                if not g.artists_acked <= fav:
                    problems.append(("acknowledged favourite artists lost", sorted(g.artists_acked - fav)))
                if not fav <= g.artists_tried:
                    problems.append(("favourite artists never sent", sorted(fav - g.artists_tried)))
                if set(p.get("favoriteCategories") or []) != g.cats_acked:
                    problems.append(("favoriteCategories", p.get("favoriteCategories"), sorted(g.cats_acked)))
            m = await g.client.call("plans.list")
            plans = [x["event"]["id"] for x in (m.get("result") or {}).get("plans", [])]
            if not m.get("ok"):
                problems.append(("plans.list", m.get("error")))
            if len(plans) != len(set(plans)):
                problems.append(("a plan listed twice", plans))
            if not g.follows_acked <= set(plans):
                problems.append(("acknowledged follows lost", sorted(g.follows_acked - set(plans))))
            if not set(plans) <= g.follows_tried:
                problems.append(("follows never sent", sorted(set(plans) - g.follows_tried)))
            for d in sorted(g.dismissed):
                m = await g.client.call("event.get", event=d)
                if (m.get("result") or {}).get("plan") != "dismissed":
                    problems.append(("dismissed event", d, m.get("result", {}).get("plan"), m.get("error")))
            m = await g.client.call("subscribe", room=f"user:{g.uid}")
            snap = (m.get("result") or {}).get("snapshot") or {}
            snap_plans = [x["event"]["id"] for x in snap.get("plans", [])]
            if not m.get("ok") or snap.get("prefs") != p or snap_plans != plans:
                problems.append(("user: snapshot differs from prefs.get/plans.list", m.get("error"), snap.get("prefs"), len(snap_plans), len(plans)))
            res.check(not problems, f"{label}: {g.name}'s state after the restart", problems)
            # What survived is what the next kill must keep (it lay within the bounds just checked).
            if p.get("radiusKm") in radii:
                g.radius_acked, g.radius_pending = p.get("radiusKm"), None
            g.artists_acked |= set(p.get("favoriteArtists") or []) & g.artists_tried
            g.follows_acked |= set(plans) & g.follows_tried
        print(f"{label}: restarted; catalog rows {dict(zip(CATALOG, now))}; goers' follows "
              f"{sum(len(g.follows_acked) for g in goers)}, favourite artists {sum(len(g.artists_acked) for g in goers)}")

    def restart(label):
        """The server again on the same data directory (Stop if it does not come up)."""
        try:
            return start(BIN, port, data)
        except SystemExit as e:
            res.check(False, f"{label}: the server does not start again on its data directory: {str(e)[:1500]}")
            raise Stop

    try:
        # 1. A batch with the large feed's first venues durable (its artists went before).
        at_kill = await crash("kill 1 (venues being written)", lambda c: c[2] > small_records["Venue"])
        proc = restart("after kill 1")
        await verify("after kill 1", at_kill)

        # 2. A third of the large feed's events durable, the rest to come (in batches of
        #    tonight.ingestBatch, 2,000).
        at_kill = await crash("kill 2 (events being written)", lambda c: c[3] > small_records["Event"] + large_records["Event"] // 3)
        proc = restart("after kill 2")
        await verify("after kill 2", at_kill)

        # The large feed whole, twice: nothing rejected or changed, every record counted.
        durable_large = seen_durable[0] + sum(seen_durable[k] - small_records[t] for k, t in ((1, "Artist"), (2, "Venue"), (3, "Event")))
        status, full = await asyncio.to_thread(post_feed, port, large_xml)
        f = full if isinstance(full, dict) else {}
        res.check(status == 200 and f.get("rejected") == 0 and f.get("changed") == 0
                  and f.get("added", 0) + f.get("changed", 0) + f.get("unchanged", 0) == large_total,
                  f"the large feed whole: expected 200, rejected 0, changed 0, added+unchanged {large_total}; got {status} {str(full)[:300]}")
        res.check(f.get("unchanged", 0) >= durable_large,
                  f"the large feed whole: {f.get('unchanged')} unchanged, but {durable_large} of its records were seen durable before the kills")
        status, again = await asyncio.to_thread(post_feed, port, large_xml)
        a = again if isinstance(again, dict) else {}
        res.check(status == 200 and (a.get("added"), a.get("changed"), a.get("unchanged"), a.get("rejected")) == (0, 0, large_total, 0),
                  f"the large feed again: expected added 0, changed 0, unchanged {large_total}; got {status} {str(again)[:300]}")
        print(f"large feed whole after the kills: {{added {f.get('added')}, changed {f.get('changed')}, unchanged {f.get('unchanged')}, "
              f"rejected {f.get('rejected')}, ms {f.get('ms')}}} ({durable_large} seen durable before the kills); "
              f"again: {{added {a.get('added')}, changed {a.get('changed')}, unchanged {a.get('unchanged')}}}")
    except Stop:
        pass
    finally:
        proc.terminate()
        proc.wait()

    # The store at rest: sound, every catalog record there once, nothing pointing at a missing record.
    db = sqlite3.connect(f"file:{data}/hubbub.sqlite?mode=ro", uri=True)
    try:
        integrity = [r[0] for r in db.execute("PRAGMA integrity_check").fetchall()]
        res.check(integrity == ["ok"], "PRAGMA integrity_check with the server stopped", integrity)
        counts = db.execute("SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in CATALOG)).fetchone()
        expected = (small_records["Category"], small_records["Artist"] + large_records["Artist"],
                    small_records["Venue"] + large_records["Venue"], small_records["Event"] + large_records["Event"])
        res.check(counts == expected, f"catalog rows at the end {dict(zip(CATALOG, counts))}, expected {dict(zip(CATALOG, expected))}")
        repeated = db.execute("SELECT " + ", ".join(f"(SELECT count(*) - count(DISTINCT id) FROM {t})" for t in CATALOG)).fetchone()
        res.check(repeated == (0, 0, 0, 0), "catalog records stored in more than one row (each has the row the catalog gave it)", [repeated])
        dangling = db.execute("""SELECT
            (SELECT count(*) FROM tonight_event WHERE venue NOT IN (SELECT id FROM tonight_venue)),
            (SELECT count(*) FROM tonight_plan WHERE event NOT IN (SELECT id FROM tonight_event)),
            (SELECT count(*) FROM tonight_favorite WHERE kind = 'artist' AND id NOT IN (SELECT id FROM tonight_artist)),
            (SELECT count(*) FROM tonight_favorite WHERE kind = 'category' AND id NOT IN (SELECT id FROM tonight_category))""").fetchone()
        res.check(dangling == (0, 0, 0, 0), "rows pointing at missing records (events→venue, plans→event, favourites→artist, →category)", [dangling])
    except sqlite3.DatabaseError as e:
        res.check(False, f"the database with the server stopped: {e!r}")
    finally:
        db.close()

    print(f"took {time.monotonic() - t0:.1f} s")
    print(f"crash-tonight: {res.passed} passed, {res.failed} failed")
    shutil.rmtree(feeds, ignore_errors=True)
    if res.failed:
        for err in stderr_of_killed:
            if err.strip():
                print("server stderr before a kill:\n" + err[-2000:])
        print(f"data directory kept: {data}")
        return 1
    shutil.rmtree(data, ignore_errors=True)
    return 0


sys.exit(asyncio.run(main()))
