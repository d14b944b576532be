#!/usr/bin/env python3
"""The Python baseline for Hubbub's event-feed ingest: parse an event-info feed (feeds.md) with
xml.etree.ElementTree.iterparse the way a careful Python ingester would, and print one JSON line.

  python3 scripts/bench-iterparse.py /tmp/feed-119.xml
  python3 scripts/bench-iterparse.py --root-clear /tmp/feed-119.xml
  python3 scripts/gen-feed.py --events 1000 --out - | python3 scripts/bench-iterparse.py -

Default: iterparse(events=("end",)); at the end of each top-level record (Category, Artist,
Venue, Event) its fields are extracted into a dict (IDs, names, texts, the lists of
ArtistCategory / EventPerformer IDs; unknown elements skipped), counted per type, and the
element is cleared so memory stays flat. With events=("end",) the root is never seen, so the
cleared (empty) record elements stay attached to it: about 100 bytes each.
  --root-clear  use events=("start", "end") to catch the root and empty it after each record
                (flat to the byte, at the cost of the extra start events)
  --parse-only  count the records and clear them, extract nothing ("merely parses it")

Output: file, bytes, seconds (wall) and cpu_seconds, mb_per_s (MB = 10^6 bytes, wall),
records per type, records without an ID, rss_start_mb and peak_rss_mb (ru_maxrss; MB = 2^20
bytes) and their difference, the Python version and the mode.
"""
import argparse
import json
import platform
import resource
import sys
import time
import xml.etree.ElementTree as ET

RECORDS = ("Category", "Artist", "Venue", "Event")


def rss_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_mb():
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024 if sys.platform != "darwin" else r / 2**20


def category(e):
    d = {"id": e.get("ID"), "name": None, "parent": None}
    for c in e:
        t = c.tag
        if t == "CategoryName":
            d["name"] = c.text
        elif t == "ParentCategory":
            d["parent"] = c.get("ID")
    return d


ARTIST_TEXT = {"ArtistName": "name", "ArtistImageURL": "image", "ArtistURL": "url"}


def artist(e):
    d = {"id": e.get("ID"), "categories": [], "name": None, "image": None, "url": None}
    for c in e:
        t = c.tag
        if t == "ArtistCategory":
            d["categories"].append(c.get("ID"))
        elif t in ARTIST_TEXT:
            d[ARTIST_TEXT[t]] = c.text
    return d


VENUE_TEXT = {"VenueName": "name", "VenueStreet": "street", "VenueCity": "city", "VenueState": "state",
              "VenueZip": "zip", "VenueImageURL": "image", "VenueURL": "url", "VenueLatitude": "lat",
              "VenueLongitude": "lon", "VenueTimeZone": "tz"}


def venue(e):
    d = {"id": e.get("ID")}
    for c in e:
        k = VENUE_TEXT.get(c.tag)
        if k:
            d[k] = c.text
    if "lat" in d and "lon" in d:
        d["lat"], d["lon"] = float(d["lat"]), float(d["lon"])
    return d


EVENT_TEXT = {"EventDate": "date", "EventTime": "time", "EventStatus": "status", "OnSaleDate": "onsale",
              "PerformanceName": "name", "EventURL": "url", "MinPrice": "min", "MaxPrice": "max",
              "Currency": "currency"}


def event(e):
    d = {"id": e.get("ID"), "performers": [], "category": None, "venue": None}
    for c in e:
        t = c.tag
        if t == "EventPerformer":
            d["performers"].append(c.get("ID"))
        elif t == "EventVenue":
            d["venue"] = c.get("ID")
        elif t == "EventCategory":
            d["category"] = c.get("ID")
        else:
            k = EVENT_TEXT.get(t)
            if k:
                d[k] = c.text
    return d


EXTRACT = {"Category": category, "Artist": artist, "Venue": venue, "Event": event}


def run(source, root_clear, parse_only):
    counts = dict.fromkeys(RECORDS, 0)
    no_id = 0
    sink = None  # the last record's dict (a real ingester would upsert it somewhere)
    if root_clear:
        it = ET.iterparse(source, events=("start", "end"))
        root = None
        for ev, elem in it:
            if ev == "start":
                if root is None:
                    root = elem
                continue
            t = elem.tag
            if t in counts:
                counts[t] += 1
                if not parse_only:
                    sink = EXTRACT[t](elem)
                    if sink["id"] is None:
                        no_id += 1
                root.clear()
    else:
        for _, elem in ET.iterparse(source, events=("end",)):
            t = elem.tag
            if t in counts:
                counts[t] += 1
                if not parse_only:
                    sink = EXTRACT[t](elem)
                    if sink["id"] is None:
                        no_id += 1
                elem.clear()
    return counts, no_id


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                usage="%(prog)s [--root-clear] [--parse-only] FILE")
    p.add_argument("file", help='the feed ("-" = stdin)')
    p.add_argument("--root-clear", action="store_true")
    p.add_argument("--parse-only", action="store_true")
    a = p.parse_args()
    rss0 = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    if a.file == "-":
        class Counting:
            def __init__(self, f):
                self.f, self.n = f, 0

            def read(self, size=-1):
                b = self.f.read(size)
                self.n += len(b)
                return b
        src = Counting(sys.stdin.buffer)
        counts, no_id = run(src, a.root_clear, a.parse_only)
        nbytes = src.n
    else:
        with open(a.file, "rb") as f:
            counts, no_id = run(f, a.root_clear, a.parse_only)
            nbytes = f.tell()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = peak_rss_mb()
    print(json.dumps({
        "file": a.file, "bytes": nbytes, "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
        "mb_per_s": round(nbytes / 1e6 / wall, 1), "records": counts, "records_without_id": no_id,
        "rss_start_mb": round(rss0, 1), "peak_rss_mb": round(peak, 1),
        "peak_rss_growth_mb": round(peak - rss0, 1),
        "python": platform.python_version(),
        "mode": ("parse-only" if a.parse_only else "extract") + (", start+end events, root cleared" if a.root_clear else ", end events, records cleared"),
    }))


if __name__ == "__main__":
    main()
