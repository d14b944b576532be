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
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from websockets.sync.client import connect

BIN, DB_URL, PG_STOP, PG_START = sys.argv[1:5]
TRACKS = int(os.environ.get("CLUSTER_TRACKS", "120"))
VOTERS = int(os.environ.get("CLUSTER_VOTERS", "36"))
# Votes per voter and phase: two phases stay under a venue's default 60 votes per user per hour.
PER_PHASE = int(os.environ.get("CLUSTER_VOTES_PER_PHASE", "28"))
# A phase's storm ends when every vote has ended, or after this long.
STORM_S = float(os.environ.get("CLUSTER_STORM_SECONDS", "30"))
LEASE_S = 3

passed, failed = 0, 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL {what}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, name):
        self.name, self.port = name, free_port()
        self.dir = tempfile.mkdtemp(prefix=f"hubbub-cluster-{name}-")
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = None

    def start(self):
        # Every client signs up from 127.0.0.1, and sign-ups per address count across nodes.
        self.proc = subprocess.Popen([BIN, "--port", str(self.port), "--data-dir", self.dir, "--database", DB_URL,
                                      "--api-key", "k", "--cluster-lease-seconds", str(LEASE_S), "--auth-signups-per-address-per-hour", "100000",
                                      "--log-level", os.environ.get("CLUSTER_LOG_LEVEL", "info")],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.health()[0] == 200:
                return
            time.sleep(0.1)
        raise SystemExit(f"node {self.name} did not become healthy (log {self.log.name})")

    def health(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, None
        except Exception:
            return None, None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


nodes = [Node("A"), Node("B"), Node("C")]


class Client:
    """One user on one node at a time; a thread reads; replies by id, pushes in order."""

    def __init__(self, name, node_index, signup=False):
        self.name, self.node_index = name, node_index
        self.cond = threading.Condition()
        self.replies, self.pushes, self.next, self.closed = {}, [], 1, True
        self.reconnects = 0
        self.connect(signup)

    def connect(self, signup=False):
        for attempt in range(60):
            node = nodes[self.node_index]
            if not node.alive():
                self.node_index = (self.node_index + 1) % len(nodes)
                continue
            try:
                self.ws = connect(f"ws://127.0.0.1:{node.port}/ws", max_size=None, open_timeout=5)
            except Exception:
                self.node_index = (self.node_index + 1) % len(nodes)
                time.sleep(0.1)
                continue
            with self.cond:
                self.closed = False
            threading.Thread(target=self._read, args=(self.ws,), daemon=True).start()
            op = "account.signup" if signup else "account.login"
            args = dict(username=self.name, email=f"{self.name}@example.com", password="secret123") if signup \
                else dict(login=self.name, password="secret123")
            r = self.call(op, **args)
            if r.get("ok"):
                return
            if signup and dig(r, "error", "code") == "conflict":
                signup = False
            time.sleep(0.2)
        raise SystemExit(f"{self.name}: cannot connect and log in")

    def _read(self, ws):
        try:
            for raw in ws:
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
                if ws is self.ws:
                    self.closed = True
                self.cond.notify_all()

    def call(self, op, timeout=10, **args):
        with self.cond:
            rid = self.next
            self.next += 1
        try:
            self.ws.send(json.dumps({"id": rid, "op": op, "args": args}))
        except Exception:
            return {"ok": False, "error": {"code": "disconnected"}}
        with self.cond:
            self.cond.wait_for(lambda: rid in self.replies or self.closed, timeout)
            return self.replies.pop(rid, {"ok": False, "error": {"code": "disconnected" if self.closed else "no_reply"}})

    def reconnect(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.reconnects += 1
        self.node_index = (self.node_index + 1) % len(nodes)
        self.connect()


def dig(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


class Patron(Client):
    """Watches the venue; checks seq order per epoch as pushes come; resumes with since."""

    def __init__(self, name, node_index, room):
        super().__init__(name, node_index, signup=True)
        self.room, self.violations, self.recoveries, self.snapshots = room, [], 0, 0
        self.epoch, self.seq, self.checked = None, None, 0
        self.subscribe(None)

    def subscribe(self, since):
        args = {"room": self.room}
        if since:
            args["since"] = since
        r = self.call("subscribe", **args)
        if not r.get("ok"):
            return False
        res = r["result"]
        with self.cond:
            self.absorb()
            if since and res.get("recovered"):
                self.recoveries += 1
            else:
                if since:
                    self.snapshots += 1
                self.epoch, self.seq = res["epoch"], res["seq"]
                self.checked = len(self.pushes)
        return True

    def absorb(self):
        """Checks pushes not yet checked (call with the lock held)."""
        for p in self.pushes[self.checked:]:
            if p.get("room") != self.room:
                continue
            if p["epoch"] != self.epoch:
                self.violations.append(f"epoch {p['epoch']} while in {self.epoch} at seq {p['seq']}")
                self.epoch, self.seq = p["epoch"], p["seq"]
            elif p["seq"] != self.seq + 1:
                self.violations.append(f"seq {p['seq']} after {self.seq}")
                self.seq = max(self.seq, p["seq"])
            else:
                self.seq = p["seq"]
        self.checked = len(self.pushes)

    def keep_up(self):
        """Checks what came; if the connection broke, resumes on another node with since."""
        with self.cond:
            self.absorb()
            broken = self.closed
        if broken:
            since = {"seq": self.seq, "epoch": self.epoch}
            for _ in range(30):
                self.reconnect()
                if self.subscribe(since):
                    return
                time.sleep(0.3)


def live():
    return [n for n in nodes if n.alive()]


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
        if failed and os.environ.get("CLUSTER_HOLD"):
            print(f"holding the nodes for inspection: {[(n.name, n.proc.pid) for n in nodes]}", flush=True)
            time.sleep(float(os.environ["CLUSTER_HOLD"]))
        for n in nodes:
            n.stop()
    print(f"cluster: {passed} passed, {failed} failed", flush=True)
    if failed:
        for n in nodes:
            print(f"  log of {n.name}: {n.log.name}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
