"""What the three-process cluster tests (test-cluster.py, test-cluster-routes.py) share: nodes on
one PostgreSQL that can be killed with SIGKILL, a client that follows a node's death to the next
live node, and PASS/FAIL counting. Call configure() first."""
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

from websockets.sync.client import connect

BIN, DB_URL, LEASE_S = None, None, 3
EXTRA_ARGS = []
nodes = []
counts = {"passed": 0, "failed": 0}


def configure(bin, db_url, lease_s=3, extra_args=(), names=("A", "B", "C")):
    """The server binary, the database, the lease time, extra server arguments; makes the nodes."""
    global BIN, DB_URL, LEASE_S, EXTRA_ARGS
    BIN, DB_URL, LEASE_S, EXTRA_ARGS = bin, db_url, lease_s, list(extra_args)
    nodes[:] = [Node(n) for n in names]
    return nodes


def check(ok, what):
    counts["passed" if ok else "failed"] += 1
    print(f"{'PASS' if ok else 'FAIL'} {what}", flush=True)


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
                                      "--log-level", os.environ.get("CLUSTER_LOG_LEVEL", "info")] + EXTRA_ARGS,
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
                        m["_pushes_before"] = len(self.pushes)  # pushes that came before this reply
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


class Watcher(Client):
    """Watches one room (`room`, set by the subclass before its first subscribe): checks seq order
    per epoch as pushes come (`violations`), hands each push of the room to `saw`, and resumes with
    since on another node when its connection breaks."""

    def __init__(self, name, node_index, signup=False):
        super().__init__(name, node_index, signup=signup)
        self.room, self.violations, self.recoveries, self.snapshots = None, [], 0, 0
        self.epoch, self.seq, self.checked = None, None, 0

    def saw(self, push):
        """A push of the room, in order (the lock held): for a subclass's own checks."""

    def subscribe(self, since):
        args = {"room": self.room}
        if since:
            args["since"] = since
        r = self.call("subscribe", **args)
        if not r.get("ok"):
            return False
        self.joined(r, since)
        return True

    def joined(self, r, since=None):
        """The reply of a (re)subscribe: pushes before it are checked against what came before;
        those after it follow the answer (a recovery goes on from `since`, a snapshot from its head)."""
        res = r["result"]
        with self.cond:
            self.absorb(upto=r["_pushes_before"])
            if since and res.get("recovered"):
                self.recoveries += 1
            else:
                if since:
                    self.snapshots += 1
                self.epoch, self.seq = res["epoch"], res["seq"]
            self.checked = r["_pushes_before"]
            self.absorb()

    def absorb(self, upto=None):
        """Checks pushes not yet checked, up to `upto` (call with the lock held)."""
        upto = len(self.pushes) if upto is None else upto
        for p in self.pushes[self.checked:upto]:
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
            self.saw(p)
        self.checked = max(self.checked, upto)

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


def dig(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def live():
    return [n for n in nodes if n.alive()]


def finish(label):
    """Stops the nodes, prints the count (and the logs' paths on a failure); the exit status."""
    for n in nodes:
        n.stop()
    print(f"{label}: {counts['passed']} passed, {counts['failed']} failed", flush=True)
    if counts["failed"]:
        for n in nodes:
            print(f"  log of {n.name}: {n.log.name}", flush=True)
    return 1 if counts["failed"] else 0

