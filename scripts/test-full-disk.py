#!/usr/bin/env python3
"""A full disk while patrons vote: every vote is answered, /healthz says 503 with a reason while the
store cannot commit and 200 again by itself once space returns (no restart), votes are taken again,
and after a kill -9 and a restart nothing acknowledged is lost.

The data directory is a small tmpfs mounted for the test (the suite runs as root; without the
right to mount, the test fails and says so). Prints `full disk: N passed, M failed` last.
Usage: test-full-disk.py HB_BIN
"""
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
from crashlib import Results, free_port, session, start, venue_with_playlist

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/release/hubbub"
USERS, TRACKS = 20, 400
SIZE_MB = 48


def health(port):
    """(status, body) of GET /healthz."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def fill(path):
    """Writes to path until the file system is full; returns the bytes written."""
    written = 0
    chunk = b"\0" * (1 << 20)
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
                written += len(chunk)
            except OSError:
                break
        # The last partial megabyte too, byte runs of 4 KiB.
        small = b"\0" * 4096
        while True:
            try:
                f.write(small)
                written += len(small)
            except OSError:
                break
    return written


async def main():
    results = Results()
    data = tempfile.mkdtemp(prefix="hubbub-full-disk-")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m", "tmpfs", data], capture_output=True, text=True)
    if mounted.returncode != 0:
        raise SystemExit(f"full disk: cannot mount a tmpfs at {data} ({mounted.stderr.strip()}): this test needs root "
                         "(CAP_SYS_ADMIN) to make a small file system it can fill")
    proc = None
    try:
        port = free_port()
        url = f"ws://127.0.0.1:{port}"
        proc = start(BIN, port, data)
        owner, _ = await session(url, "owner")
        venue = await venue_with_playlist(owner, "Full Bar", TRACKS)
        # The storm runs as long as the test needs (a slow machine takes longer to fill the disk), so
        # no patron may run out of the hour's votes.
        r = await owner.call("venue.settings.set", venue=venue, votesPerUserPerHour=10_000)
        assert r["ok"], r
        voters = [await session(url, f"user{i}") for i in range(USERS)]
        # acked: (user, track) whose last acknowledged change was a vote (an acknowledged unvote takes it out).
        acked, ever_acked, refused, unanswered, others = set(), 0, [], [], []
        phase = {"name": "before"}
        after_recovery = []
        in_flight = {}  # user → the track of the change sent and not yet answered (its outcome is unknown)

        async def storm(c, uid):
            nonlocal ever_acked
            order = [f"t{i}" for i in range(TRACKS)]
            random.shuffle(order)
            voting = True
            # Ended by the flag, not only by cancelling: Python 3.11's wait_for can swallow a
            # cancellation that lands as its call completes, and the storm would then run forever.
            while phase["name"] != "done":
                # Vote for every track, then take every vote back, and again: each change a write.
                for uri in order:
                    if phase["name"] == "done":
                        return
                    op = "venue.vote" if voting else "venue.unvote"
                    if not voting and (uid, uri) not in acked:
                        continue
                    in_flight[uid] = uri
                    try:
                        m = await asyncio.wait_for(c.call(op, venue=venue, track=uri), 10)
                    except asyncio.TimeoutError:
                        unanswered.append((uid, op, uri))
                        return
                    del in_flight[uid]
                    if m.get("ok"):
                        (acked.add if voting else acked.discard)((uid, uri))
                        ever_acked += 1
                        if phase["name"] == "recovered":
                            after_recovery.append(uri)
                    elif m["error"]["code"] == "unavailable":
                        refused.append(m["error"]["message"])
                    elif not (voting and m["error"]["code"] == "conflict"):  # its unvote was refused while full: the vote stood
                        others.append((op, m["error"]))
                    # A steady trickle, not a flood.
                    await asyncio.sleep(0.02)
                voting = not voting

        tasks = [asyncio.create_task(storm(c, uid)) for c, uid in voters]
        while ever_acked < 200:
            await asyncio.sleep(0.05)
        status, body = health(port)
        results.check(status == 200 and body["status"] == "ok", f"healthy before the disk fills: {status} {body}")

        filler = os.path.join(data, "filler")
        phase["name"] = "full"
        written = fill(filler)
        print(f"full disk: filled {written >> 20} MB of {SIZE_MB} MB", flush=True)
        deadline = time.monotonic() + 30
        status, body = health(port)
        while (status != 503 or not refused) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            fill(filler + "2")  # whatever the server freed (a checkpoint) is taken again
            status, body = health(port)
        print(f"full disk: /healthz {status} {body}", flush=True)
        results.check(status == 503 and body.get("status") == "unavailable" and "store" in body.get("reason", ""),
                      f"/healthz answers 503 with a reason while the store cannot commit: {status} {body}")
        refused_when_full = len(refused)
        results.check(refused_when_full > 0, "votes are refused (unavailable) while the disk is full")

        os.remove(filler)
        if os.path.exists(filler + "2"):
            os.remove(filler + "2")
        phase["name"] = "freed"
        deadline = time.monotonic() + 15
        status, body = health(port)
        while status != 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            status, body = health(port)
        results.check(status == 200, f"/healthz is 200 again by itself once space returns: {status} {body}")
        phase["name"] = "recovered"
        deadline = time.monotonic() + 15
        while len(after_recovery) < 20 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        results.check(len(after_recovery) >= 20, f"votes are taken again without a restart ({len(after_recovery)} after recovery)")

        phase["name"] = "done"
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        results.check(not unanswered, "every vote is answered", unanswered)
        results.check(not others, "votes fail only as unavailable", others)

        proc.kill()
        proc.wait()
        proc = start(BIN, port, data)
        checker, _ = await session(url, "owner")
        found = set()
        ids = {uid for _, uid in voters}
        for i in range(TRACKS):
            m = await checker.call("venue.track.voters", venue=venue, track=f"t{i}")
            for v in m["result"]["voters"]:
                vid = v["id"] if isinstance(v, dict) else v
                if vid in ids:
                    found.add((vid, f"t{i}"))
        # An unvote cut short when the storm stopped may have been saved: it proves nothing either way.
        lost = acked - found - set(in_flight.items())
        results.check(not lost, f"nothing acknowledged is lost after kill -9 and a restart ({len(acked)} votes standing)", sorted(lost))
        print(f"full disk: {ever_acked} changes acknowledged, {refused_when_full} refused while full; e.g. {refused[:1]}")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["umount", data])
        os.rmdir(data)
    print(f"full disk: {results.passed} passed, {results.failed} failed")
    return results.failed == 0


if __name__ == "__main__":
    sys.exit(0 if asyncio.run(main()) else 1)
