#!/usr/bin/env python3
"""Three hubbub processes on one PostgreSQL: kill -9 of a room's owner during a vote storm, then
PostgreSQL restarted under load. Nothing acknowledged may be lost, no vote may count twice, and
every patron must see its venue's pushes in seq order without a gap and converge.

Setup: nodes A, B, C (`--database URL --cluster-lease-seconds 3`) on free ports. An owner signs up
on A, registers a venue and sets a playlist of TRACKS tracks, so A owns the venue's room. Three
patrons subscribe, one per node. VOTERS voters, spread over the nodes, each vote their own random
order of tracks, one vote per (voter, track), as fast as replies come.

A vote's outcome is final when the reply is `ok` (acknowledged) or `conflict` (already counted:
its first attempt committed but the reply was lost with a node). `unavailable`, a missing reply or
a dropped connection are retried, on the next node when the connection broke: retrying is what a
client does, and it must be safe.

Each voter votes PER_PHASE tracks per phase (under the venue's 60 votes per user per hour).
Phase 1: after 1.5 s of storm, A (the owner) is killed with SIGKILL. Its voters and
its patron reconnect to B or C (the patron with `since`). The storm runs on.
Phase 2: PostgreSQL is stopped (fast) and started again 2 s later while the storm runs on B and C; /healthz
says 503 while it is down and 200 once the nodes are back.

Checks, after each phase (once the storm is over and the nodes have settled):
  - every vote that ended in ok or conflict is counted, exactly once: each track's vote count in
    `venue.playlist.get`, on every live node, equals the number of voters whose vote for it ended;
  - no patron saw a gap or a repeat in seq within an epoch while connected (violations = 0);
  - every patron converges: its last seq is the room's head (a fresh subscribe's seq) and its
    epoch the room's epoch;
  - every live node answers the same playlist.
Prints PASS/FAIL per check and a summary line with votes/s, reconnects and recoveries; exits 1 on
any failure. Usage: test-cluster.py HB_BIN POSTGRES_URL PG_CTL_STOP PG_CTL_START
(the last two are shell commands that stop and start the PostgreSQL cluster).
"""
import os
import random
import subprocess
import sys
import threading
import time

from clusterlib import Client, Watcher, check, configure, counts, dig, finish, live

BIN, DB_URL, PG_STOP, PG_START = sys.argv[1:5]
TRACKS = int(os.environ.get("CLUSTER_TRACKS", "120"))
VOTERS = int(os.environ.get("CLUSTER_VOTERS", "36"))
# Votes per voter and phase: two phases stay under a venue's default 60 votes per user per hour.
PER_PHASE = int(os.environ.get("CLUSTER_VOTES_PER_PHASE", "28"))
# A phase's storm ends when every vote has ended, or after this long.
STORM_S = float(os.environ.get("CLUSTER_STORM_SECONDS", "30"))
LEASE_S = 3
nodes = configure(BIN, DB_URL, LEASE_S)

class Patron(Watcher):
    """Watches the venue's room from its first subscribe."""

    def __init__(self, name, node_index, room):
        super().__init__(name, node_index, signup=True)
        self.room = room
        self.subscribe(None)


def storm(voters, plans, done, stop_at, stats):
    def run(voter, plan):
        while plan and time.time() < stop_at:
            track = plan[0]
            r = voter.call("venue.vote", venue=venue, track=f"t{track}")
            code = dig(r, "error", "code")
            if r.get("ok") or code == "conflict":
                with stats["lock"]:
                    done.setdefault(track, set()).add(voter.name)
                    stats["ok" if r.get("ok") else "conflict"] += 1
                plan.pop(0)
            elif code in ("disconnected", "no_reply"):
                stats["retries"] += 1
                voter.reconnect()
            elif code == "unavailable":
                stats["retries"] += 1
                time.sleep(0.05)
            else:
                stats["errors"].append(r)
                plan.pop(0)
    threads = [threading.Thread(target=run, args=(v, p), daemon=True) for v, p in zip(voters, plans)]
    for t in threads:
        t.start()
    return threads


def settle_and_check(phase, voters, patrons, done):
    # Finish whatever votes are in flight (their retries), then let pushes arrive.
    deadline = time.time() + 20
    while time.time() < deadline:
        for p in patrons:
            p.keep_up()
        heads = []
        for n in live():
            c = observer_on(n)
            r = c.call("subscribe", room=f"venue:{venue}")
            c.ws.close()
            if r.get("ok"):
                heads.append((r["result"]["seq"], r["result"]["epoch"]))
        if heads and all(p.seq == heads[0][0] and p.epoch == heads[0][1] for p in patrons) and len(set(heads)) == 1:
            break
        time.sleep(0.3)
    head = heads[0] if heads else (None, None)
    check(len(set(heads)) == 1, f"{phase}: every live node gives the room the same head {head}")
    for p in patrons:
        check((p.seq, p.epoch) == head, f"{phase}: patron {p.name} converged on seq {p.seq} (head {head[0]})")
        check(not p.violations, f"{phase}: patron {p.name} saw no gap or repeat ({p.violations[:3]})")
    playlists, answers = [], []
    for n in live():
        c = observer_on(n)
        for _ in range(20):
            r = c.call("venue.playlist.get", venue=venue)
            if r.get("ok"):
                break
            time.sleep(0.2)
        c.ws.close()
        answers.append(r if not r.get("ok") else "ok")
        playlists.append(dig(r, "result", "playlist"))
    check(all(pl == playlists[0] for pl in playlists) and playlists[0] is not None,
          f"{phase}: every live node answers the same playlist ({answers})")
    counts = {int(t["track"]["uri"][1:]): t["votes"] for t in (playlists[0] or {}).get("tracks", [])}
    expected = {t: len(vs) for t, vs in done.items()}
    lost = {t: (expected[t], counts.get(t, 0)) for t in expected if counts.get(t, 0) < expected[t]}
    extra = {t: (expected.get(t, 0), c) for t, c in counts.items() if c > expected.get(t, 0)}
    check(not lost, f"{phase}: every acknowledged vote is counted ({sum(expected.values())} votes; lost: {list(lost.items())[:5]})")
    check(not extra, f"{phase}: no vote counted twice or without an answer ({list(extra.items())[:5]})")


_observers = {}


def observer_on(node):
    c = Client("observer", nodes.index(node))
    return c


def main():
    global venue
    for n in nodes:
        n.start()
    try:
        owner = Client("owner", 0, signup=True)
        v = owner.call("venue.register", name="Bar", address="1 St", postcode="1", city="C", country="X", lat=1, lon=2)
        venue = v["result"]["venue"]["id"]
        tracks = [{"uri": f"t{i}", "title": f"Song {i}", "artist": "Band"} for i in range(1, TRACKS + 1)]
        r = owner.call("venue.playlist.set", venue=venue, playlistUri="p", creator="dj", tracks=tracks)
        check(r.get("ok"), "the owner sets the playlist on A (A owns the room)")
        Client("observer", 1, signup=True).ws.close()
        patrons = [Patron(f"patron{i}", i, f"venue:{venue}") for i in range(3)]
        voters = [Client(f"voter{i}", i % 3, signup=True) for i in range(VOTERS)]
        rng = random.Random(7)
        orders = [rng.sample(range(1, TRACKS + 1), 2 * PER_PHASE) for _ in voters]
        plans = [o[:PER_PHASE] for o in orders]
        done, stats = {}, {"lock": threading.Lock(), "ok": 0, "conflict": 0, "retries": 0, "errors": []}

        # Phase 1: kill -9 of the owner in the middle of the storm.
        start = time.time()
        threads = storm(voters, plans, done, start + STORM_S, stats)
        time.sleep(1.5)
        before = stats["ok"]
        nodes[0].kill9()
        print(f"killed A (the owner) with SIGKILL after {before} acknowledged votes", flush=True)
        while any(t.is_alive() for t in threads):
            for p in patrons:
                p.keep_up()
            time.sleep(0.1)
        elapsed = time.time() - start
        check(not stats["errors"], f"phase 1: no vote refused for another reason ({stats['errors'][:3]})")
        settle_and_check("kill -9", voters, patrons, done)
        phase1 = (stats["ok"] + stats["conflict"], elapsed)

        # Phase 2: PostgreSQL restarted under load.
        check(all(not p for p in plans), "phase 1: every voter's votes ended (ok or conflict)")
        stats.update(ok=0, conflict=0, retries=0)
        plans = [o[PER_PHASE:] for o in orders]
        start = time.time()
        threads = storm(voters, plans, done, start + STORM_S, stats)
        time.sleep(1.5)
        subprocess.run(PG_STOP, shell=True, check=True)
        down_at = time.time()
        time.sleep(0.5)
        statuses = [n.health()[0] for n in live()]
        time.sleep(1.5)
        subprocess.run(PG_START, shell=True, check=True)
        up_at = time.time()
        back = None
        while time.time() < up_at + 30:
            if all(n.health()[0] == 200 for n in live()):
                back = time.time() - up_at
                break
            time.sleep(0.1)
        print(f"PostgreSQL down {up_at - down_at:.1f} s; /healthz during the outage: {statuses}", flush=True)
        check(all(s == 503 for s in statuses), "phase 2: /healthz says 503 while PostgreSQL is down")
        check(back is not None, f"phase 2: every node is healthy again after PostgreSQL is back ({back and round(back, 1)} s)")
        while any(t.is_alive() for t in threads):
            for p in patrons:
                p.keep_up()
            time.sleep(0.1)
        check(not stats["errors"], f"phase 2: no vote refused for another reason ({stats['errors'][:3]})")
        check(all(not p for p in plans), "phase 2: every voter's votes ended (ok or conflict)")
        phase2 = (stats["ok"] + stats["conflict"], time.time() - start)
        settle_and_check("PostgreSQL restart", voters, patrons, done)
        reconnects = sum(c.reconnects for c in voters + patrons)
        print(f"cluster: {phase1[0]} votes in {phase1[1]:.1f} s ({phase1[0] / phase1[1]:.0f}/s) across a kill -9, "
              f"{phase2[0]} in {phase2[1]:.1f} s across a PostgreSQL restart; "
              f"{reconnects} reconnects, {sum(p.recoveries for p in patrons)} recoveries with since, "
              f"{sum(p.snapshots for p in patrons)} snapshots, "
              f"{sum(len(p.violations) for p in patrons)} violations", flush=True)
    finally:
        if counts["failed"] and os.environ.get("CLUSTER_HOLD"):
            print(f"holding the nodes for inspection: {[(n.name, n.proc.pid) for n in nodes]}", flush=True)
            time.sleep(float(os.environ["CLUSTER_HOLD"]))
        status = finish("cluster")
    sys.exit(status)


if __name__ == "__main__":
    main()
