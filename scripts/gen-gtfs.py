#!/usr/bin/env python3
"""Generate a large city's GTFS feed (a zip) for Hubbub, and GTFS-Realtime alerts on it.

The city is Helsinki-sized: stops in a box of --box-km x --box-km around --center, denser towards
the centre; each route a chain of 20-60 nearby stops that keeps roughly one heading (buses mostly,
then trams, subway, rail, ferries); trips run each route's stop sequence, in both directions,
from 05:00 on, until the stop_times target is met. Deterministic for a --seed. Standard library
only for the zip; every file is streamed into it (zipfile's writer, zip64), so memory stays small
whatever --stop-times asks.

  python3 scripts/gen-gtfs.py --out /tmp/gtfs-city.zip                       # 10k stops, 500 routes, 5M stop times
  python3 scripts/gen-gtfs.py --stops 300 --routes 20 --stop-times 20000 --out /tmp/small.zip
  .venv/bin/python scripts/gen-gtfs.py --out /tmp/gtfs-city.zip --alerts 1000 --rt-out /tmp/alerts.pb

With --rt-out (needs gtfs-realtime-bindings): reads the feed at --out (writing it first when the
file is missing) and writes one FULL_DATASET FeedMessage of --alerts alerts on its routes (60 %),
stops (30 %, 1-3 stops each) and trips (10 %), each with a header and a description in fi, sv and
en, an active period that started up to an hour ago and ends in 30 min to 2 h (or is open, one
alert in two). Its periods are relative to now: write it again for each run.

Options (defaults in brackets):
  --stops N [10000] --routes N [500] --stop-times N [5000000] --seed N [1]
  --center LAT,LON [60.1699,24.9384] --box-km K [30] --lang TAG [fi] (agency_lang)
  --out PATH (the zip) --alerts N [1000] --rt-out PATH

stderr gets one JSON line: what was written (counts, bytes, seconds).
"""
import argparse
import csv
import io
import json
import math
import os
import random
import sys
import time
import zipfile

KM_PER_DEG_LAT = 110.574
SYLLABLES = ["ka", "ta", "la", "mi", "ne", "ri", "so", "vu", "ha", "po", "ki", "lu", "me", "sa", "to", "va", "jo", "ni", "pe", "ru"]
SUFFIXES = ["tie", "katu", "kuja", "ranta", "puisto", "mäki", "tori", "aukio", "silta", "portti"]
ROUTE_TYPES = [(3, 0.68), (0, 0.12), (700, 0.05), (1, 0.04), (2, 0.06), (4, 0.02), (11, 0.03)]  # bus, tram, coach, subway, rail, ferry, trolleybus


class City:
    """Stops and routes, in memory (a few MB for 10k stops and 500 routes)."""

    def __init__(self, args):
        self.rng = random.Random(args.seed)
        self.lat0, self.lon0 = args.center
        self.kx = 111.320 * math.cos(math.radians(self.lat0))  # km per degree of longitude here
        self.half = args.box_km / 2
        self.stops = []   # (id, name, lat, lon, x, y)
        self.routes = []  # (id, short, long, type, [stop indices])
        self._make_stops(args.stops)
        self._make_routes(args.routes)

    def name(self):
        r = self.rng
        return ("".join(r.choice(SYLLABLES) for _ in range(r.randint(2, 3))) + r.choice(SUFFIXES)).capitalize()

    def _make_stops(self, n):
        r, h = self.rng, self.half
        for i in range(n):
            while True:
                if r.random() < 0.6:  # the centre is denser
                    x, y = r.gauss(0, h / 3), r.gauss(0, h / 3)
                else:
                    x, y = r.uniform(-h, h), r.uniform(-h, h)
                if -h <= x <= h and -h <= y <= h:
                    break
            lat, lon = self.lat0 + y / KM_PER_DEG_LAT, self.lon0 + x / self.kx
            self.stops.append((f"S{i + 1:05d}", f"{self.name()} {r.randint(1, 120)}", round(lat, 6), round(lon, 6), x, y))
        self.cell = 0.5
        self.grid = {}
        for i, s in enumerate(self.stops):
            self.grid.setdefault((int(math.floor(s[4] / self.cell)), int(math.floor(s[5] / self.cell))), []).append(i)

    def near(self, x, y, radius):
        c, k = self.cell, int(math.ceil(radius / self.cell))
        cx, cy = int(math.floor(x / c)), int(math.floor(y / c))
        for gx in range(cx - k, cx + k + 1):
            for gy in range(cy - k, cy + k + 1):
                yield from self.grid.get((gx, gy), ())

    def _make_routes(self, n):
        r = self.rng
        weights = [w for _, w in ROUTE_TYPES]
        for i in range(n):
            rtype = r.choices([t for t, _ in ROUTE_TYPES], weights)[0]
            length = r.randint(20, 60)
            spacing = {1: 1.0, 2: 1.6, 4: 1.2}.get(rtype, 0.45)  # km between stops
            seq = self._walk(length, spacing)
            first, last = self.stops[seq[0]][1].rsplit(" ", 1)[0], self.stops[seq[-1]][1].rsplit(" ", 1)[0]
            short = {0: str(1 + i % 15), 1: "M" + str(1 + i % 2), 2: "ABCDEIKLPRTUZ"[i % 13]}.get(rtype, str(10 + i))
            self.routes.append((f"R{i + 1:04d}", short, f"{first} - {last}", rtype, seq))

    def _walk(self, length, spacing):
        """A chain of distinct nearby stops that keeps roughly one heading (turning round at the box's edge)."""
        r = self.rng
        spacing = max(spacing, 0.8 * self.half * 2 / math.sqrt(len(self.stops)))  # sparse cities: the stops' own spacing
        cur = r.randrange(len(self.stops))
        seq, used = [cur], {cur}
        heading = r.uniform(-math.pi, math.pi)
        turned = False
        while len(seq) < min(length, len(self.stops)):
            x, y = self.stops[cur][4], self.stops[cur][5]
            best = None
            for radius, cone in ((spacing * 2, math.pi / 3), (spacing * 4, math.pi / 2)):
                for j in self.near(x, y, radius):
                    if j in used:
                        continue
                    dx, dy = self.stops[j][4] - x, self.stops[j][5] - y
                    d = math.hypot(dx, dy)
                    if d == 0 or d > radius:
                        continue
                    turn = abs((math.atan2(dy, dx) - heading + math.pi) % (2 * math.pi) - math.pi)
                    if turn > cone:
                        continue
                    score = abs(d - spacing) / spacing + turn
                    if best is None or score < best[0]:
                        best = (score, j, math.atan2(dy, dx))
                if best:
                    break
            if best is None and not turned:  # nothing ahead (the edge, a gap): turn round once
                heading += math.pi
                turned = True
                continue
            if best is None:  # still nothing: the nearest stop not on the route yet
                j = min((k for k in range(len(self.stops)) if k not in used),
                        key=lambda k: math.hypot(self.stops[k][4] - x, self.stops[k][5] - y))
                best = (0, j, math.atan2(self.stops[j][5] - y, self.stops[j][4] - x))
            _, cur, direction = best
            seq.append(cur)
            used.add(cur)
            turned = False
            # Drift towards where it went, and a little at random.
            heading = math.atan2(0.6 * math.sin(heading) + 0.4 * math.sin(direction), 0.6 * math.cos(heading) + 0.4 * math.cos(direction))
            heading += r.gauss(0, 0.08)
        return seq


def hhmmss(t):
    return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"


def write_feed(args):
    started = time.monotonic()
    city = City(args)
    total_len = sum(len(rt[4]) for rt in city.routes)
    base = args.stop_times // total_len
    spare = args.stop_times - base * total_len
    trips_of = []
    for rt in city.routes:  # trips per route: the same number each, one more for routes that still fit
        n = base
        if spare >= len(rt[4]):
            n += 1
            spare -= len(rt[4])
        trips_of.append(n)

    # Travel times along each route (from the stops' distances), both directions.
    offsets = []
    for rt in city.routes:
        speed = {1: 35.0, 2: 60.0, 4: 20.0, 0: 16.0}.get(rt[3], 20.0)  # km/h
        out = [0]
        for a, b in zip(rt[4], rt[4][1:]):
            d = math.hypot(city.stops[a][4] - city.stops[b][4], city.stops[a][5] - city.stops[b][5])
            out.append(out[-1] + 20 + int(d / speed * 3600))
        offsets.append(out)

    tmp = args.out + ".part"
    counts = {"agencies": 1, "stops": len(city.stops), "routes": len(city.routes), "trips": sum(trips_of), "stop_times": 0}
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        def text(name, rows):
            with z.open(name, "w", force_zip64=True) as f, io.TextIOWrapper(f, encoding="utf-8", newline="") as w:
                csv.writer(w, lineterminator="\n").writerows(rows)

        text("agency.txt", [["agency_id", "agency_name", "agency_url", "agency_timezone", "agency_lang", "agency_phone"],
                            ["CITY", "City Transport Authority", "https://example.org/", "Europe/Helsinki", args.lang, "+358 9 000 000"]])
        text("calendar.txt", [["service_id", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "start_date", "end_date"],
                              ["WK", "1", "1", "1", "1", "1", "1", "1", "20260101", "20271231"]])
        text("stops.txt", [["stop_id", "stop_code", "stop_name", "stop_lat", "stop_lon", "location_type", "wheelchair_boarding"]]
             + [[s[0], s[0][1:], s[1], f"{s[2]:.6f}", f"{s[3]:.6f}", "0", str(i % 3)] for i, s in enumerate(city.stops)])
        text("routes.txt", [["route_id", "agency_id", "route_short_name", "route_long_name", "route_type", "route_color"]]
             + [[rt[0], "CITY", rt[1], rt[2], str(rt[3]), "%06X" % ((int(rt[0][1:]) * 2654435761) & 0xFFFFFF)]
                for rt in city.routes])
        with z.open("trips.txt", "w", force_zip64=True) as f:
            f.write(b"route_id,service_id,trip_id,trip_headsign,direction_id\n")
            buf = []
            for rt, n in zip(city.routes, trips_of):
                heads = (rt[2].split(" - ")[-1], rt[2].split(" - ")[0])
                for j in range(n):
                    buf.append(f"{rt[0]},WK,{rt[0]}_{j:04d},{heads[j % 2]},{j % 2}\n")
                if len(buf) > 20000:
                    f.write("".join(buf).encode())
                    buf.clear()
            f.write("".join(buf).encode())
        with z.open("stop_times.txt", "w", force_zip64=True) as f:
            f.write(b"trip_id,arrival_time,departure_time,stop_id,stop_sequence\n")
            times = [hhmmss(t) for t in range(0, 36 * 3600)]
            buf = []
            for rt, n, off in zip(city.routes, trips_of, offsets):
                ids = [city.stops[k][0] for k in rt[4]]
                back = [off[-1] - t for t in reversed(off)]
                half = max(1, (n + 1) // 2)
                headway = max(120, (19 * 3600) // half)
                for j in range(n):
                    trip = f"{rt[0]}_{j:04d}"
                    start = 5 * 3600 + (j // 2) * headway + (j % 2) * headway // 2
                    seq, o = (ids, off) if j % 2 == 0 else (ids[::-1], back)
                    for k, (stop, t) in enumerate(zip(seq, o)):
                        hh = times[min(start + t, len(times) - 1)]
                        buf.append(f"{trip},{hh},{hh},{stop},{k + 1}\n")
                    counts["stop_times"] += len(seq)
                    if len(buf) > 50000:
                        f.write("".join(buf).encode())
                        buf.clear()
            f.write("".join(buf).encode())
    os.replace(tmp, args.out)
    return {"zip": args.out, "bytes": os.path.getsize(args.out), **counts, "seconds": round(time.monotonic() - started, 1)}


def read_feed(path):
    """(stop ids, [(route id, short name, type)], trip ids) of a feed's zip."""
    def rows(z, name):
        with z.open(name) as f:
            yield from csv.DictReader(io.TextIOWrapper(f, encoding="utf-8-sig", newline=""))

    with zipfile.ZipFile(path) as z:
        stops = [r["stop_id"] for r in rows(z, "stops.txt")]
        routes = [(r["route_id"], r.get("route_short_name") or r["route_id"], int(r["route_type"])) for r in rows(z, "routes.txt")]
        trips = [r["trip_id"] for r in rows(z, "trips.txt")]
    return stops, routes, trips


KINDS = {0: ("raitiovaunu", "spårvagn", "tram"), 1: ("metro", "metro", "metro"), 2: ("juna", "tåg", "train"),
         4: ("lautta", "färja", "ferry")}
WHY = [("tietöiden vuoksi", "på grund av vägarbete", "because of roadworks"),
       ("onnettomuuden vuoksi", "på grund av en olycka", "because of an accident"),
       ("mielenosoituksen vuoksi", "på grund av en demonstration", "because of a demonstration"),
       ("teknisen vian vuoksi", "på grund av ett tekniskt fel", "because of a technical fault"),
       ("sään vuoksi", "på grund av vädret", "because of the weather")]


def write_alerts(args):
    from google.transit import gtfs_realtime_pb2 as rt

    started = time.monotonic()
    stops, routes, trips = read_feed(args.out)
    r = random.Random(args.seed * 7919 + args.alerts)
    now = int(time.time())
    m = rt.FeedMessage()
    m.header.gtfs_realtime_version = "2.0"
    m.header.incrementality = rt.FeedHeader.FULL_DATASET
    m.header.timestamp = now
    kinds = {"route": 0, "stop": 0, "trip": 0}
    causes = [rt.Alert.CONSTRUCTION, rt.Alert.ACCIDENT, rt.Alert.DEMONSTRATION, rt.Alert.TECHNICAL_PROBLEM, rt.Alert.WEATHER]
    for i in range(args.alerts):
        e = m.entity.add()
        e.id = f"alert-{i + 1:05d}"
        a = e.alert
        p = a.active_period.add()
        p.start = now - r.randint(0, 3600)
        if r.random() < 0.5:
            p.end = now + r.randint(1800, 7200)
        why = r.randrange(len(WHY))
        a.cause = causes[why]
        x = r.random()
        if x < 0.6:
            kind = "route"
            chosen = r.sample(routes, 2 if r.random() < 0.1 else 1)
            for rid, _, _ in chosen:
                a.informed_entity.add(route_id=rid)
            rid, short, rtype = chosen[0]
            vehicle = KINDS.get(rtype, ("linja", "linje", "line"))
            head = (f"{vehicle[0].capitalize()} {short}: poikkeusreitti {WHY[why][0]}", f"{vehicle[1].capitalize()} {short}: omledning {WHY[why][1]}",
                    f"{vehicle[2].capitalize()} {short}: diverted {WHY[why][2]}")
            a.effect = rt.Alert.DETOUR
        elif x < 0.9 or not trips:
            kind = "stop"
            chosen = r.sample(stops, r.randint(1, 3))
            for sid in chosen:
                a.informed_entity.add(stop_id=sid)
            head = (f"Pysäkki {chosen[0]} poissa käytöstä {WHY[why][0]}", f"Hållplats {chosen[0]} ur bruk {WHY[why][1]}",
                    f"Stop {chosen[0]} out of use {WHY[why][2]}")
            a.effect = rt.Alert.STOP_MOVED
        else:
            kind = "trip"
            trip = r.choice(trips)
            a.informed_entity.add().trip.trip_id = trip
            head = (f"Vuoro {trip} peruttu {WHY[why][0]}", f"Tur {trip} inställd {WHY[why][1]}", f"Trip {trip} cancelled {WHY[why][2]}")
            a.effect = rt.Alert.NO_SERVICE
        kinds[kind] += 1
        for text, lang in zip(head, ("fi", "sv", "en")):
            a.header_text.translation.add(text=text, language=lang)
        for text, lang in zip(head, ("fi", "sv", "en")):
            a.description_text.translation.add(text=text + ". " + "Lisätietoja / Mer information / More: https://example.org/", language=lang)
    data = m.SerializeToString()
    with open(args.rt_out, "wb") as f:
        f.write(data)
    return {"rt": args.rt_out, "bytes": len(data), "alerts": args.alerts, **kinds, "seconds": round(time.monotonic() - started, 2)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stops", type=int, default=10_000)
    p.add_argument("--routes", type=int, default=500)
    p.add_argument("--stop-times", type=int, default=5_000_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--center", type=lambda s: tuple(float(v) for v in s.split(",")), default=(60.1699, 24.9384))
    p.add_argument("--box-km", type=float, default=30.0)
    p.add_argument("--lang", default="fi")
    p.add_argument("--out", required=True)
    p.add_argument("--alerts", type=int, default=1000)
    p.add_argument("--rt-out")
    args = p.parse_args()
    if args.stops < 60 or args.routes < 1 or args.stop_times < 1:
        p.error("need at least 60 stops, one route and one stop time")
    summary = {}
    if not args.rt_out or not os.path.exists(args.out):
        summary["gtfs"] = write_feed(args)
    if args.rt_out:
        summary["gtfs_rt"] = write_alerts(args)
    print(json.dumps(summary, ensure_ascii=False), file=sys.stderr)


if __name__ == "__main__":
    main()
