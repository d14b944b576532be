"""What the kill -9 tests (test-crash.py, test-crash-routes.py) share: a free port, a server started
with limits that let a storm through, kill -9 once enough writes are acknowledged, and a client."""
import asyncio
import json
import signal
import socket
import subprocess
import time

from websockets.asyncio.client import connect


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(bin, port, data):
    """hubbub on 127.0.0.1:port over data, once it accepts connections. Cheap password hashing and
    rate limits out of the way: the storm, and the checks after it, are never refused."""
    proc = subprocess.Popen([bin, "--host", "127.0.0.1", "--port", str(port), "--data-dir", data, "--log-level", "warning",
                             "--auth-kdf-iterations", "1000", "--auth-kdf-max-queued", "100000", "--auth-signups-per-address-per-hour", "100000000", "--rate-limits-write-burst", "100000",
                             "--rate-limits-write-per-second", "100000", "--rate-limits-auth-burst", "1000",
                             "--rate-limits-read-burst", "100000", "--rate-limits-read-per-second", "100000"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(300):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("hubbub exited at start: " + proc.stderr.read().decode())
            time.sleep(0.1)
    raise SystemExit("hubbub did not start")


async def kill_when(proc, acked, target, timeout=60):
    """SIGKILL proc once acked() reaches target (or after timeout seconds): well inside the storm,
    whatever the machine's speed."""
    deadline = time.monotonic() + timeout
    while acked() < target and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


class Client:
    """One connection. call() sends a request and returns its reply; the room pushes that arrive
    meanwhile are kept in pushes, in arrival order."""

    def __init__(self, ws):
        self.ws, self.next, self.pushes = ws, 1, []

    async def call(self, op, **args):
        rid = self.next
        self.next += 1
        await self.ws.send(json.dumps({"id": rid, "op": op, "args": args}))
        while True:
            m = json.loads(await self.ws.recv())
            if m.get("id") == rid:
                return m
            if "room" in m and "event" in m:
                self.pushes.append(m)

    async def listen(self):
        """Keeps every push until the connection ends (e.g. the server is killed)."""
        try:
            async for raw in self.ws:
                m = json.loads(raw)
                if "room" in m and "event" in m:
                    self.pushes.append(m)
        except Exception:
            pass


async def session(url, name):
    """A logged-in Client for user name (signed up, or logged in if it exists) and the user's id."""
    ws = await connect(url + "/ws", max_size=None)
    c = Client(ws)
    r = await c.call("account.signup", username=name, email=f"{name}@example.com", password="secret123")
    if not r.get("ok"):
        r = await c.call("account.login", login=name, password="secret123")
    await c.call("auth", token=r["result"]["token"])
    return c, r["result"]["user"]["id"]


async def venue_with_playlist(owner, name, tracks):
    """A venue registered by owner (a Client) with a playlist of tracks t0...t<tracks-1>; its id."""
    venue = (await owner.call("venue.register", name=name, address="1 Main St", postcode="1",
                              city="Town", country="X", lat=1.0, lon=1.0))["result"]["venue"]["id"]
    playlist = [{"uri": f"t{i}", "title": f"T{i}", "artist": "A", "explicit": False} for i in range(tracks)]
    r = await owner.call("venue.playlist.set", venue=venue, playlistUri="p", creator="c", tracks=playlist)
    assert r["ok"], r
    return venue


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, problems=()):
        """One check: passes when ok; otherwise prints what and the first few problems."""
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            problems = list(problems)
            print(f"FAIL {what}" + (f" ({len(problems)}), e.g. {problems[:5]}" if problems else ""))
