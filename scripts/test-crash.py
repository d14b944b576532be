#!/usr/bin/env python3
"""kill -9 in the middle of a vote storm loses nothing acknowledged and counts nothing twice.

Starts hubbub, registers a venue with a playlist, has many clients vote as fast as they can,
kills the server with SIGKILL while votes are in flight, restarts it on the same data directory,
and checks every track's voters: each acknowledged vote is there, and no user appears twice.
Prints `crash: N passed, M failed` last. Usage: test-crash.py HB_BIN
"""
import asyncio
import random
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
from crashlib import free_port, kill_when, session, start, venue_with_playlist

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/release/hubbub"
USERS, TRACKS = 40, 40


async def main():
    data = tempfile.mkdtemp(prefix="hubbub-crash-")
    port = free_port()
    url = f"ws://127.0.0.1:{port}"
    proc = start(BIN, port, data)
    owner, _ = await session(url, "owner")
    venue = await venue_with_playlist(owner, "Crash Bar", TRACKS)
    voters = [await session(url, f"user{i}") for i in range(USERS)]
    acked = set()

    async def storm(c, uid):
        order = [f"t{i}" for i in range(TRACKS)]
        random.shuffle(order)
        for uri in order:
            try:
                m = await c.call("venue.vote", venue=venue, track=uri)
            except Exception:
                return  # the server is gone
            if m.get("ok"):
                acked.add((uid, uri))

    tasks = [asyncio.create_task(storm(c, uid)) for c, uid in voters]
    # Kill once about a third of the votes are acknowledged: well inside the storm, whatever
    # the machine's speed.
    await kill_when(proc, lambda: len(acked), USERS * TRACKS // 3)
    await asyncio.gather(*tasks, return_exceptions=True)
    killed_with = len(acked)

    proc = start(BIN, port, data)
    try:
        checker, _ = await session(url, "owner")
        failures = 0
        found = set()
        for i in range(TRACKS):
            m = await checker.call("venue.track.voters", venue=venue, track=f"t{i}")
            ids = m["result"]["voters"]
            if len(ids) != len(set(ids)):
                print(f"FAIL t{i}: a vote is counted twice: {ids}")
                failures += 1
            found.update((u, f"t{i}") for u in ids)
        lost = acked - found
        if lost:
            print(f"FAIL {len(lost)} acknowledged votes lost, e.g. {sorted(lost)[:5]}")
            failures += 1
        print(f"votes acknowledged before kill -9: {killed_with} of {USERS * TRACKS}; present after restart: {len(found)}")
        if killed_with == 0 or killed_with == USERS * TRACKS:
            print("FAIL the kill did not land in the middle of the storm")
            failures += 1
        checks = TRACKS + 2
        print(f"crash: {checks - failures} passed, {failures} failed")
        return 1 if failures else 0
    finally:
        proc.terminate()
        proc.wait()


sys.exit(asyncio.run(main()))
