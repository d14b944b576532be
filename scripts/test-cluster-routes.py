#!/usr/bin/env python3
"""Three hubbub processes on one PostgreSQL: kill -9 of the owner of the intel shards during a
provider burst. Nothing acknowledged may be lost, nothing pushed twice; watchers on B and C go on
untouched in their nodes' epochs, and A's watchers, back on another node with since, take a
snapshot (each node makes its own corridors: `route:` rooms are never written) missing nothing.

Setup: nodes A, B, C (`--database URL --cluster-lease-seconds 3`). A provider's first batch is
posted to A, with an item in each cell of a grid over the area, so A owns every shard. Watchers
subscribe to three corridors across the area (north-south, west-east, diagonal), two per corridor,
on different nodes.

Storm: a provider posts batches of BATCH items at random places to B and C in turn (so B and C
ask A for each shard's part), travellers post through every node, and likers like what was
posted. After 1.5 s, A is killed with SIGKILL. The storm runs on for STORM_S seconds: the shards'
leases run out, B and C take them (an op or a batch for a shard claims it; the expiry's look
claims the rest); A's watchers reconnect to B or C, which load their corridors. A request that
fails for want of its node (`unavailable`, no reply, a dropped connection) is retried, on the next
node when the connection broke: a provider's draft answered `unavailable` is sent again.

Checks, once the storm is over and the nodes have settled:
  - every acknowledged item (a provider's id, a traveller's reply) and every acknowledged like is
    in the store, once (read with psql);
  - no watcher saw a gap or a repeat in seq within an epoch, nor an item added twice in an epoch;
  - the watchers on B and C never resubscribed (no snapshot, no recovery: one epoch throughout);
    those on A resumed with since and took a snapshot (a new node, a new epoch), which listed
    every acknowledged item well inside the band;
  - after the storm, an item posted at the middle of each corridor reaches every watcher of it;
  - every watcher converges on its room's head on its node; no node holds a `route:` lease;
  - a fresh subscribe on every live node lists every acknowledged item well inside the corridor.
Usage: test-cluster-routes.py HB_BIN POSTGRES_URL
"""
import json
import math
import os
import random
import subprocess
import sys
import threading
import time
import urllib.request

from clusterlib import Client, Watcher, check, configure, dig, finish, live

BIN, DB_URL = sys.argv[1:3]
BATCH = int(os.environ.get("CLUSTER_ROUTES_BATCH", "40"))
STORM_S = float(os.environ.get("CLUSTER_ROUTES_STORM_SECONDS", "10"))
LEASE_S = 3
# The area: 0.2° square over Istanbul (about 4 × 4 shards of 0.05°).
SOUTH, WEST, SIZE = 40.95, 28.90, 0.2
CORRIDORS = [((40.96, 29.00), (41.14, 29.00)), ((41.05, 28.91), (41.05, 29.09)), ((40.96, 28.91), (41.14, 29.09))]
WIDTH_M = 1500
nodes = configure(BIN, DB_URL, LEASE_S, ["--rate-limits-write-burst", "100000", "--rate-limits-write-per-second", "100000",
                                         "--auth-kdf-iterations", "1000"])
rng = random.Random(28)


def metres(a, b):
    """Equirectangular distance: plenty at these scales."""
    x = math.radians(b[1] - a[1]) * math.cos(math.radians((a[0] + b[0]) / 2))
    return 6_371_000 * math.hypot(x, math.radians(b[0] - a[0]))


def off_line(p, a, b):
    """Distance in metres from p to the segment a–b."""
    kx = math.cos(math.radians(p[0]))
    ax, ay, bx, by, px, py = a[1] * kx, a[0], b[1] * kx, b[0], p[1] * kx, p[0]
    t = max(0, min(1, ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)))
    return metres(p, (ay + t * (by - ay), (ax + t * (bx - ax)) / kx))


def post_batch(node, items):
    body = json.dumps({"items": items}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{node.port}/api/intel", data=body, method="POST",
                                     headers={"Authorization": "Bearer k", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=15) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None
    except Exception:
        return None, None


def draft(lat, lon, n):
    return {"lat": lat, "lon": lon, "kind": "disruption", "body": f"burst item {n}", "source": "metro"}


def psql(sql):
    out = subprocess.run(["psql", DB_URL, "-At", "-c", sql], check=True, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line]


ACKED = {"items": {}}  # the run's acknowledged items (main's `acked` once the storm starts)


def acknowledged():
    """The items acknowledged so far (read while the storm's threads add to them)."""
    for _ in range(100):
        try:
            return list(ACKED["items"])
        except RuntimeError:  # changed size while copied
            continue
    return []


class CorridorWatcher(Watcher):
    """Watches one corridor; an item added twice in one epoch is a violation too."""

    def __init__(self, name, node_index, corridor):
        super().__init__(name, node_index, signup=True)
        self.first_node = node_index
        (a, b) = corridor
        self.corridor = corridor
        self.added = set()  # (epoch, item) seen added
        self.shown = []  # the items of each snapshot after a resubscribe, with the items acknowledged before it
        r = self.call("route.subscribe", **{"from": {"lat": a[0], "lon": a[1]}, "to": {"lat": b[0], "lon": b[1]}, "widthMeters": WIDTH_M})
        assert r.get("ok"), r
        self.room = r["result"]["room"]
        self.joined(r)

    def saw(self, push):
        if push["event"] == "intel.added":
            key = (push["epoch"], dig(push, "data", "item", "id"))
            if key in self.added:
                self.violations.append(f"{key[1]} added twice in epoch {key[0]}")
            self.added.add(key)

    def joined(self, r, since=None):
        super().joined(r, since)
        if since and not r["result"].get("recovered"):
            self.shown.append(({x["id"] for x in r["result"]["snapshot"]["items"]}, acknowledged()))

    def heard(self, item):
        with self.cond:
            return any(dig(p, "data", "item", "id") == item for p in self.pushes if p["event"] == "intel.added")


def storm(posters, likers, acked, stop_at):
    lock = threading.Lock()

    def provider():
        n, turn = 0, 0
        while time.time() < stop_at:
            pending = []
            for _ in range(BATCH):
                n += 1
                pending.append(draft(SOUTH + rng.random() * SIZE, WEST + rng.random() * SIZE, n))
            for _ in range(100):
                targets = [x for x in live() if x is not nodes[0]] or live()
                turn += 1
                status, answer = post_batch(targets[turn % len(targets)], pending)
                if status == 200:
                    with lock:
                        acked["provider_batches"] += 1
                        acked["items"].update((i, None) for i in answer["ids"])
                    # Drafts its shards' owners could not take: sent again.
                    retry = {int(r["record"][6:-1]) for r in answer.get("rejects", []) if "try again" in r["reason"]}
                    pending = [d for i, d in enumerate(pending) if i in retry]
                    if not pending:
                        break
                time.sleep(0.2)

    def traveller(client):
        while time.time() < stop_at:
            lat, lon = SOUTH + rng.random() * SIZE, WEST + rng.random() * SIZE
            r = client.call("intel.post", lat=lat, lon=lon, kind="poi", body="seen here")
            code = dig(r, "error", "code")
            if r.get("ok"):
                with lock:
                    acked["items"][r["result"]["item"]["id"]] = client.name
            elif code in ("disconnected", "no_reply"):
                client.reconnect()
            elif code == "unavailable":
                time.sleep(0.1)
            else:
                acked["errors"].append(r)

    def liker(client):
        while time.time() < stop_at:
            with lock:
                mine = [i for i, who in acked["items"].items() if (i, client.name) not in acked["likes"] and who != client.name]
            if not mine:
                time.sleep(0.05)
                continue
            item = rng.choice(mine)
            r = client.call("intel.like", item=item)
            code = dig(r, "error", "code")
            if r.get("ok") or code == "conflict":
                with lock:
                    acked["likes"].add((item, client.name))
            elif code in ("disconnected", "no_reply"):
                client.reconnect()
            elif code == "unavailable":
                time.sleep(0.1)
            else:
                acked["errors"].append(r)

    threads = [threading.Thread(target=provider, daemon=True)]
    threads += [threading.Thread(target=traveller, args=(c,), daemon=True) for c in posters]
    threads += [threading.Thread(target=liker, args=(c,), daemon=True) for c in likers]
    for t in threads:
        t.start()
    return threads


def main():
    for n in nodes:
        n.start()
    try:
        # A owns every shard of the area: its first batch has an item in each cell.
        grid = [draft(SOUTH + (i + 0.5) * 0.05, WEST + (j + 0.5) * 0.05, f"g{i}{j}") for i in range(4) for j in range(4)]
        status, first = post_batch(nodes[0], grid)
        check(status == 200 and len(first["ids"]) == 16, f"a provider's first batch on A ({status})")
        acked = {"items": {i: None for i in first["ids"]}, "likes": set(), "errors": [], "provider_batches": 1}
        ACKED["items"] = acked["items"]
        watchers = [CorridorWatcher(f"watcher{k}", k % 3, CORRIDORS[k % 3]) for k in range(6)]
        posters = [Client(f"poster{k}", k % 3, signup=True) for k in range(3)]
        likers = [Client(f"liker{k}", (k + 1) % 3, signup=True) for k in range(3)]

        start = time.time()
        threads = storm(posters, likers, acked, start + STORM_S)
        time.sleep(1.5)
        before = len(acked["items"])
        nodes[0].kill9()
        print(f"killed A (every shard's owner) with SIGKILL after {before} acknowledged items", flush=True)
        while any(t.is_alive() for t in threads):
            for w in watchers:
                w.keep_up()
            time.sleep(0.1)
        check(not acked["errors"], f"no request refused for another reason ({acked['errors'][:3]})")

        # After the storm: an item at the middle of each corridor, heard by each of its watchers.
        marks = {}
        poster = posters[0]
        for corridor in CORRIDORS:
            (a, b) = corridor
            for _ in range(50):
                r = poster.call("intel.post", lat=(a[0] + b[0]) / 2, lon=(a[1] + b[1]) / 2 + 0.0001 * CORRIDORS.index(corridor),
                                kind="poi", body="after the storm")
                if r.get("ok"):
                    break
                if dig(r, "error", "code") in ("disconnected", "no_reply"):
                    poster.reconnect()
                time.sleep(0.2)
            marks[corridor] = dig(r, "result", "item", "id")
            if marks[corridor]:
                acked["items"][marks[corridor]] = poster.name
        deadline = time.time() + 20
        while time.time() < deadline:
            for w in watchers:
                w.keep_up()
            if all(w.heard(marks[w.corridor]) for w in watchers):
                break
            time.sleep(0.2)
        for w in watchers:
            check(w.heard(marks[w.corridor]), f"{w.name} hears of an item posted in its corridor after the storm")

        stored = set(psql("SELECT id FROM intel_item"))
        lost = [i for i in acked["items"] if i not in stored]
        check(not lost, f"every acknowledged item is stored ({len(acked['items'])} items; lost: {lost[:5]})")
        likes = {tuple(line.split("|")) for line in psql('SELECT l.item, u.username FROM intel_like l JOIN "user" u ON u.id = l."user"')}
        missing = [x for x in acked["likes"] if x not in likes]
        check(not missing, f"every acknowledged like is stored ({len(acked['likes'])} likes; lost: {missing[:5]})")

        # Converged: each watcher at its room's head, as a fresh subscribe on its node says (each
        # node makes its own corridors, in its own epoch); every live node's snapshot is kept.
        def fresh(node_index, corridor):
            a, b = corridor
            c = Client("observer", node_index, signup=True)
            try:
                r = c.call("route.subscribe", **{"from": {"lat": a[0], "lon": a[1]}, "to": {"lat": b[0], "lon": b[1]}, "widthMeters": WIDTH_M})
            finally:
                c.ws.close()
            return r["result"] if r.get("ok") else None

        deadline = time.time() + 20
        while time.time() < deadline:
            for w in watchers:
                w.keep_up()
            heads = {w.name: fresh(w.node_index, w.corridor) for w in watchers}
            if all(h and (w.seq, w.epoch) == (h["seq"], h["epoch"]) for w in watchers for h in [heads[w.name]]):
                break
            time.sleep(0.5)
        for w in watchers:
            with w.cond:
                w.absorb()
            h = heads.get(w.name) or {}
            check((w.seq, w.epoch) == (h.get("seq"), h.get("epoch")),
                  f"{w.name} converged on its room's head on node {w.node_index} ({w.seq}, {w.epoch}; the node says {h.get('seq')}, {h.get('epoch')})")
            check(not w.violations, f"{w.name} saw no gap, repeat or item added twice ({w.violations[:3]})")
            if w.first_node == 0:
                check(w.snapshots >= 1 and w.recoveries == 0,
                      f"{w.name} (on A) resumed with since on another node and took a snapshot ({w.snapshots} snapshots, {w.recoveries} recoveries)")
            else:
                check(w.snapshots == 0 and w.recoveries == 0 and w.reconnects == 0,
                      f"{w.name} (on {'BC'[w.first_node - 1]}) went on untouched ({w.reconnects} reconnects, {w.snapshots} snapshots)")
        check(psql("SELECT count(*) FROM cluster_lease WHERE shard LIKE 'route:%'") == ["0"], "no node holds a corridor's lease")
        # Every snapshot (a fresh one on every live node, and each A watcher's after its resubscribe)
        # lists every item acknowledged before it well inside the band (not near its edge).
        points = {row.split("|")[0]: (float(row.split("|")[1]), float(row.split("|")[2]))
                  for row in psql("SELECT id, lat, lon FROM intel_item")}

        def inside(items, corridor):
            return [i for i in items if i in points and off_line(points[i], *corridor) < WIDTH_M / 2 - 60]

        for n in live():
            for corridor in CORRIDORS:
                listed = {item["id"] for item in (fresh(nodes.index(n), corridor) or {}).get("items", [])}
                want = inside(acked["items"], corridor)
                missed = [i for i in want if i not in listed]
                check(not missed, f"corridor {corridor} on node {nodes.index(n)}: a fresh snapshot lists all {len(want)} acknowledged items inside it (missed {missed[:5]})")
        for w in watchers:
            for listed, before in w.shown:
                missed = [i for i in inside(before, w.corridor) if i not in listed]
                check(not missed, f"{w.name}: its snapshot after resubscribing lists every item acknowledged before it (missed {missed[:5]})")
        print(f"routes cluster: {len(acked['items'])} items and {len(acked['likes'])} likes acknowledged across a kill -9 "
              f"({acked['provider_batches']} provider batches); "
              f"{sum(c.reconnects for c in watchers + posters + likers)} reconnects, "
              f"{sum(w.recoveries for w in watchers)} recoveries with since, {sum(w.snapshots for w in watchers)} snapshots", flush=True)
    finally:
        status = finish("routes cluster")
    sys.exit(status)


if __name__ == "__main__":
    main()
