"""The web client's weight and speed (issue 13), measured, not asserted:

- page weight: each page's files (the HTML, the scripts it imports, the styles), uncompressed and
  gzipped as the server sends them, from the browser's own resource timings;
- time to the first live queue: a fresh browser (empty cache) opens /patron?venue=<id> of a venue
  with a 50-track playlist, already signed in; from navigation start until the "Queue" list shows
  every track; `ROUNDS` times (default 5), with the median and the best.

    .venv/bin/python scripts/measure-web.py [--rounds 5]

Needs what scripts/test-web.sh installs (chromium, chromium-driver, selenium, websockets)."""

import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "web"))
from conftest import Client, Server, free_port, new_browser, unique  # noqa: E402

PAGES = ["/", "/patron", "/owner", "/traveller", "/tonight"]

WEIGHT = """
const entries = [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')];
return entries.map(e => ({name: e.name, decoded: e.decodedBodySize, encoded: e.encodedBodySize}));
"""

FIRST_QUEUE = """
const done = arguments[arguments.length - 1], want = arguments[0];
function count() {
  const list = document.querySelector('ol[aria-label="Queue"], ul[aria-label="Queue"], [role=list][aria-label="Queue"]');
  return list ? list.querySelectorAll('li').length : 0;
}
if (count() >= want) return done(performance.now());
new MutationObserver((_, o) => { if (count() >= want) { o.disconnect(); done(performance.now()); } })
  .observe(document.documentElement, {childList: true, subtree: true});
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", 5)))
    ap.add_argument("--tracks", type=int, default=50)
    args = ap.parse_args()
    binary = os.environ.get("HB_BIN", ".build/release/hubbub")
    data = tempfile.mkdtemp(prefix="hubbub-measure-web-")
    server = Server(binary, data, free_port())
    server.start()
    try:
        owner = Client(server)
        owner.signup(unique("owner"))
        venue = owner.call("venue.register", {"name": "The Measured Arms", "address": "1 Briggate", "postcode": "LS1 6HD", "city": "Leeds", "country": "GB", "lat": 53.8, "lon": -1.55})["venue"]["id"]
        owner.call("venue.playlist.set", {"venue": venue, "playlistUri": "playlist:measure", "creator": "owner",
                                          "tracks": [{"uri": f"track:{i}", "title": f"Song number {i}", "artist": "The Band"} for i in range(args.tracks)]})
        print("page weight (each page in a fresh browser: bytes as decoded, and as sent with gzip):")
        for page in PAGES:
            d = new_browser()
            try:
                d.get(server.url + page)
                d.execute_script("return new Promise(r => setTimeout(r, 500))")
                rows = [r for r in d.execute_script(WEIGHT) if r["name"].startswith(server.url)]
                decoded, encoded = sum(r["decoded"] for r in rows), sum(r["encoded"] for r in rows)
                print(f"  {page:11} {len(rows)} files, {decoded:7,} bytes, {encoded:6,} gzipped")
            finally:
                d.quit()
        times = []
        for _ in range(args.rounds):
            patron = Client(server)
            token = patron.signup(unique("patron"))["token"]
            patron.close()
            d = new_browser()
            try:
                d.get(server.url + "/img/icon.svg")  # the origin, to set its storage
                d.execute_script("localStorage.setItem('hubbub.token', arguments[0])", token)
                d.get(f"{server.url}/patron?venue={venue}")
                times.append(d.execute_async_script(FIRST_QUEUE, args.tracks))
            finally:
                d.quit()
        print(f"time to the first live queue ({args.tracks} tracks, signed in, empty cache, loopback), {args.rounds} rounds: "
              f"median {statistics.median(times):.0f} ms, best {min(times):.0f} ms, worst {max(times):.0f} ms")
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
