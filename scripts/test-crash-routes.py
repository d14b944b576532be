#!/usr/bin/env python3
"""kill -9 in the middle of a burst of intel posts, likes, comments and links loses nothing acknowledged.

Starts hubbub, signs up 30 travellers; two of them subscribe to a corridor (one each way, so two
`route:` rooms) and keep every push. Then every traveller posts items inside the corridor as fast as
it can, likes other travellers' acknowledged items, comments on them and links pairs of them. Once
about a third of the planned operations are acknowledged the server gets SIGKILL; it is restarted
on the same data directory and checked:
  - every acknowledged item is back (`intel.get`, `intel.query` over a box around the corridor, a
    fresh `route.subscribe`'s items, the snapshot of a `subscribe` with `since`), and no post is
    stored twice;
  - each item's `likes` is at least its acknowledged likes and at most the travellers who tried to
    like it (nobody counted twice); every acknowledged liker liking it again is `conflict`;
  - every acknowledged comment is in `intel.get`'s `comments`, none twice; every acknowledged link is
    in both items' `links`, none twice;
  - each poster's `user.karma` is at least 1 per acknowledged post + 2 per acknowledged like received
    + 2 per acknowledged link credit, and at most the same counted over what was attempted;
  - what the rooms pushed before the kill (pushes are sent once durable) is all there;
  - each subscriber's `destinations.list` still has its destination; `subscribe {room, since}` on
    each room gives a new epoch (a corridor's room is made by the node that watches it, never
    stored) with `recovered: false` and a snapshot holding every acknowledged item, each once; the
    next item posted then arrives once, at the seq after the snapshot's, in that epoch.
Prints `crash-routes: N passed, M failed` last. Usage: test-crash-routes.py HB_BIN
"""
import asyncio
import json
import random
import shutil
import sys
import tempfile
from collections import defaultdict

from websockets.exceptions import ConnectionClosed

sys.dont_write_bytecode = True  # no __pycache__ in scripts/
from crashlib import Results, free_port, kill_when, session, start

BIN = sys.argv[1] if len(sys.argv) > 1 else ".build/release/hubbub"
USERS = 30
POSTS, LIKES, COMMENTS, LINKS = 8, 8, 5, 3  # each traveller's plan
PLANNED = USERS * (POSTS + LIKES + COMMENTS + LINKS)
A, B, WIDTH = {"lat": 52.35, "lon": 4.85}, {"lat": 52.40, "lon": 4.95}, 2000
BOX = {"minLat": 52.33, "minLon": 4.83, "maxLat": 52.42, "maxLon": 4.97}  # the corridor and more
KARMA_ITEM, KARMA_LIKE, KARMA_LINK = 1, 2, 2  # routes.karmaPerItem, karmaPerLike, karmaPerLink defaults


def spot():
    """A point within 300 m of the path from A to B: well inside the 2 km band."""
    t = random.uniform(0.05, 0.95)
    return (A["lat"] + (B["lat"] - A["lat"]) * t + random.uniform(-0.002, 0.002),
            A["lon"] + (B["lon"] - A["lon"]) * t + random.uniform(-0.002, 0.002))


async def main():
    data = tempfile.mkdtemp(prefix="hubbub-crash-routes-")
    port = free_port()
    url = f"ws://127.0.0.1:{port}"
    proc = start(BIN, port, data)
    res = Results()
    travellers = [await session(url, f"traveller{i}") for i in range(USERS)]

    # Two subscribers, each on its own connection: traveller0 from A to B, traveller1 the way back
    # (another room). Both rooms hold every item.
    routes = [{"from": A, "to": B, "label": "work"}, {"from": B, "to": A, "label": "home"}]
    subs = []
    for i, route in enumerate(routes):
        c, uid = await session(url, f"traveller{i}")
        r = await c.call("route.subscribe", widthMeters=WIDTH, **route)
        assert r.get("ok"), r
        subs.append({"client": c, "uid": uid, "route": route, "room": r["result"]["room"],
                     "epoch": r["result"]["epoch"], "seq": r["result"]["seq"]})
    listeners = [asyncio.create_task(s["client"].listen()) for s in subs]
    assert subs[0]["room"] != subs[1]["room"], "the way back should be another room"

    poster = {}                       # acknowledged item id -> its poster
    pool = []                         # acknowledged item ids, to like, comment on and link
    posts_tried = defaultdict(int)    # poster -> posts sent
    posts_acked = defaultdict(int)
    bodies_tried = set()
    likers_tried = defaultdict(set)   # item -> users who sent a like of it
    likes_acked = set()               # (user, item)
    comments_tried = defaultdict(set) # item -> texts sent
    comments_acked = set()            # (user, item, text)
    links_tried = {}                  # frozenset({a, b}) -> the user who sent the link
    links_acked = set()               # (a, b)
    refused = []
    acked = [0]
    counts = defaultdict(int)

    def record(ok_reply, kind):
        if ok_reply:
            acked[0] += 1
            counts[kind] += 1

    async def burst(i, c, uid):
        plan = ["post"] * 2 + random.sample(["post"] * (POSTS - 2) + ["like"] * LIKES + ["comment"] * COMMENTS + ["link"] * LINKS,
                                            POSTS - 2 + LIKES + COMMENTS + LINKS)
        n = 0
        for op in plan:
            n += 1
            try:
                if op == "post":
                    lat, lon = spot()
                    body = f"traveller{i} item {n} #crash"
                    posts_tried[uid] += 1
                    bodies_tried.add(body)
                    m = await c.call("intel.post", lat=lat, lon=lon, kind=random.choice(["poi", "disruption"]), body=body,
                                     **({"tags": ["amsterdam"]} if n % 2 else {}))
                    if m.get("ok"):
                        item = m["result"]["item"]["id"]
                        poster[item] = uid
                        pool.append(item)
                        posts_acked[uid] += 1
                elif op == "like":
                    item = None
                    for _ in range(400):  # the others' first items arrive within moments
                        choices = [x for x in pool if poster[x] != uid and uid not in likers_tried[x]]
                        if choices:
                            item = random.choice(choices)
                            break
                        await asyncio.sleep(0.005)
                    if item is None:
                        continue
                    likers_tried[item].add(uid)
                    m = await c.call("intel.like", item=item)
                    if m.get("ok"):
                        likes_acked.add((uid, item))
                elif op == "comment":
                    item = random.choice(pool)
                    text = f"traveller{i} says {n}: still there"
                    comments_tried[item].add(text)
                    m = await c.call("intel.comment", item=item, text=text)
                    if m.get("ok"):
                        comments_acked.add((uid, item, text))
                else:
                    pair = None
                    for _ in range(50):
                        a, b = random.sample(pool, 2)
                        if frozenset((a, b)) not in links_tried:
                            pair = (a, b)
                            break
                    if pair is None:
                        continue
                    links_tried[frozenset(pair)] = uid
                    m = await c.call("intel.link", item=pair[0], to=pair[1])
                    if m.get("ok"):
                        links_acked.add((pair[0], pair[1], uid))
            except (ConnectionClosed, OSError):
                return  # the server is gone
            if not m.get("ok"):
                refused.append((op, m.get("error")))
            record(m.get("ok"), op)

    tasks = [asyncio.create_task(burst(i, c, uid)) for i, (c, uid) in enumerate(travellers)]
    await kill_when(proc, lambda: acked[0], PLANNED // 3)
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*listeners, return_exceptions=True)
    killed_with = acked[0]
    print(f"operations acknowledged before kill -9: {killed_with} of {PLANNED} planned "
          f"({counts['post']} posts, {counts['like']} likes, {counts['comment']} comments, {counts['link']} links)")
    res.check(0 < killed_with < PLANNED and all(counts[k] for k in ("post", "like", "comment", "link")),
              "the kill did not land in the middle of the burst (every kind acknowledged, not all done)")
    res.check(not refused, "operations refused during the burst", refused)

    # The pushes each subscriber got before the kill: one epoch, seq going on by one from the reply's.
    for s in subs:
        pushes = [p for p in s["client"].pushes if p["room"] == s["room"]]
        bad = [(p["epoch"], p["seq"]) for k, p in enumerate(pushes) if p["epoch"] != s["epoch"] or p["seq"] != s["seq"] + k + 1]
        res.check(not bad, f"{s['room']}: pushes before the kill out of sequence after seq {s['seq']}", bad)
        s["pushes"] = pushes
        s["last"] = pushes[-1]["seq"] if pushes else s["seq"]
    print(f"pushes received before the kill: " + ", ".join(f"{s['room']} {len(s['pushes'])} (last seq {s['last']})" for s in subs))

    proc = start(BIN, port, data)
    try:
        checker, _ = await session(url, "checker")
        acked_items = set(poster)

        # Every acknowledged item, with its likes, comments and links.
        got, missing = {}, []
        for item in sorted(acked_items):
            m = await checker.call("intel.get", item=item)
            if m.get("ok"):
                got[item] = m["result"]
            else:
                missing.append((item, m.get("error")))
        res.check(not missing, "acknowledged items lost (intel.get)", missing)

        likes_per = defaultdict(int)
        for _, item in likes_acked:
            likes_per[item] += 1
        bad_likes = [(i, g["item"]["likes"], likes_per[i], len(likers_tried[i])) for i, g in got.items()
                     if not likes_per[i] <= g["item"]["likes"] <= len(likers_tried[i])]
        res.check(not bad_likes, "likes outside [acknowledged, distinct likers tried] (item, likes, acked, tried)", bad_likes)

        lost_comments, bad_comments = [], []
        for user, item, text in comments_acked:
            if item in got and not any(c["text"] == text and c.get("by", {}).get("user") == user for c in got[item]["comments"]):
                lost_comments.append((item, text))
        for i, g in got.items():
            texts = [c["text"] for c in g["comments"]]
            acked_n = sum(1 for _, x, _ in comments_acked if x == i)
            if len(texts) != len(set(texts)) or not set(texts) <= comments_tried[i] or not acked_n <= g["item"]["comments"] <= len(comments_tried[i]):
                bad_comments.append((i, texts, g["item"]["comments"]))
        res.check(not lost_comments, "acknowledged comments lost", lost_comments)
        res.check(not bad_comments, "comments stored twice, never sent, or counted outside [acknowledged, sent]", bad_comments)

        lost_links, bad_links = [], []
        for a, b, _ in links_acked:
            if a in got and b in got and (b not in got[a]["item"]["links"] or a not in got[b]["item"]["links"]):
                lost_links.append((a, b))
        for i, g in got.items():
            links = g["item"]["links"]
            if len(links) != len(set(links)) or any(frozenset((i, x)) not in links_tried for x in links):
                bad_links.append((i, links))
        res.check(not lost_links, "acknowledged links lost (each item must list the other)", lost_links)
        res.check(not bad_links, "links stored twice or never sent", bad_links)

        # intel.query over a box around the corridor: every acknowledged item, no post stored twice.
        m = await checker.call("intel.query", **BOX)
        res.check(m.get("ok") and not m["result"]["truncated"], f"intel.query over the corridor's box: {m.get('error')}")
        queried = m["result"]["items"] if m.get("ok") else []
        found = {x["id"] for x in queried}
        res.check(acked_items <= found, "acknowledged items missing from intel.query", sorted(acked_items - found))
        bodies = [x["body"] for x in queried]
        res.check(len(bodies) == len(set(bodies)) and set(bodies) <= bodies_tried, "a post stored twice, or one never sent",
                  [b for b in bodies if bodies.count(b) > 1 or b not in bodies_tried])

        # Karma: at least what was acknowledged, at most what was tried.
        low, high = defaultdict(int), defaultdict(int)
        for uid in posts_tried:
            low[uid] += KARMA_ITEM * posts_acked[uid]
            high[uid] += KARMA_ITEM * posts_tried[uid]
        for _, item in likes_acked:
            low[poster[item]] += KARMA_LIKE
        for item, likers in likers_tried.items():
            high[poster[item]] += KARMA_LIKE * len(likers)
        for a, b, linker in links_acked:
            for x in (a, b):
                if poster[x] != linker:
                    low[poster[x]] += KARMA_LINK
        for pair, linker in links_tried.items():
            for x in pair:
                if poster[x] != linker:
                    high[poster[x]] += KARMA_LINK
        bad_karma = []
        for uid in posts_tried:
            m = await checker.call("user.karma", user=uid)
            k = m["result"]["karma"] if m.get("ok") else None
            if k is None or not low[uid] <= k <= high[uid]:
                bad_karma.append((uid, k, low[uid], high[uid]))
        res.check(not bad_karma, "karma outside [acknowledged, tried] (user, karma, low, high)", bad_karma)

        # What the rooms pushed before the kill was durable (its reply may have been lost): it is all there.
        pushed_ids = {p["data"]["item"]["id"] for s in subs for p in s["pushes"] if p["event"] in ("intel.added", "intel.updated")}
        pushed_ids |= {x for s in subs for p in s["pushes"] if p["event"] == "intel.linked" for x in (p["data"]["item"], p["data"]["to"])}
        seen = dict(got)
        for item in sorted(pushed_ids - set(seen)):
            m = await checker.call("intel.get", item=item)
            if m.get("ok"):
                seen[item] = m["result"]
        unpushed = []
        for s in subs:
            for p in s["pushes"]:
                d = p["data"]
                if p["event"] == "intel.added" and d["item"]["id"] not in seen:
                    unpushed.append(("added", d["item"]["id"]))
                elif p["event"] == "intel.updated":
                    g = seen.get(d["item"]["id"])
                    if g is None or g["item"]["likes"] < d["item"]["likes"] or g["item"]["comments"] < d["item"]["comments"]:
                        unpushed.append(("updated", d["item"]["id"], d["item"]["likes"], d["item"]["comments"]))
                elif p["event"] == "intel.linked":
                    g = seen.get(d["item"])
                    if g is None or d["to"] not in g["item"]["links"]:
                        unpushed.append(("linked", d["item"], d["to"]))
        res.check(not unpushed, "a change pushed before the kill (so durable) is missing", unpushed)

        # Each subscriber after the restart: its destination, the room with since, a fresh route.subscribe.
        for s in subs:
            c, _ = await session(url, f"traveller{subs.index(s)}")
            m = await c.call("destinations.list")
            dests = m["result"]["destinations"] if m.get("ok") else []
            to = s["route"]["to"]
            res.check(any(abs(d["to"]["lat"] - to["lat"]) < 1e-6 and abs(d["to"]["lon"] - to["lon"]) < 1e-6 and d.get("label") == s["route"]["label"]
                          for d in dests), f"{s['room']}: destinations.list lost the destination {to} {s['route']['label']!r}", dests)

            m = await c.call("subscribe", room=s["room"], since={"epoch": s["epoch"], "seq": s["last"]})
            r = m.get("result") or {}
            if not m.get("ok"):
                res.check(False, f"{s['room']}: subscribe with since refused: {m.get('error')}")
            else:
                listed = [x["id"] for x in (r.get("snapshot") or {}).get("items", [])]
                snap = set(listed)
                res.check(r["epoch"] != s["epoch"] and r.get("recovered") is False and "snapshot" in r and acked_items <= snap
                          and len(listed) == len(snap),
                          f"{s['room']}: after the restart not a new epoch with recovered false and a snapshot of every "
                          f"acknowledged item, each once (epoch {r['epoch']} was {s['epoch']}, recovered {r.get('recovered')}, "
                          f"{len(listed)} listed)", sorted(acked_items - snap))
                print(f"{s['room']} after restart: new epoch {r['epoch']} (was {s['epoch']} at seq {s['last']}), "
                      f"seq {r['seq']}, snapshot of {len(snap)} items")
                # What follows comes once, in that epoch, at the next seq.
                m = await c.call("intel.post", lat=s["route"]["from"]["lat"] + 0.0001, lon=s["route"]["from"]["lon"] + 0.0001,
                                 kind="poi", body="after the restart")
                new_id = (m.get("result") or {}).get("item", {}).get("id")
                got_push = next((p for p in c.pushes if p.get("room") == s["room"] and p.get("event") == "intel.added"), None)
                while new_id and got_push is None:
                    try:
                        raw = await asyncio.wait_for(c.ws.recv(), 5)
                    except asyncio.TimeoutError:
                        break
                    p = json.loads(raw)
                    if p.get("room") == s["room"] and p.get("event") == "intel.added":
                        got_push = p
                res.check(got_push is not None and got_push["seq"] == r["seq"] + 1 and got_push["epoch"] == r["epoch"]
                          and got_push["data"]["item"]["id"] == new_id,
                          f"{s['room']}: the item posted after the restart did not arrive next in the new epoch", got_push)

            m = await c.call("route.subscribe", widthMeters=WIDTH, **s["route"])
            items = {x["id"] for x in m["result"]["items"]} if m.get("ok") else set()
            res.check(m.get("ok") and m["result"]["room"] == s["room"] and acked_items <= items,
                      f"{s['room']}: a fresh route.subscribe misses acknowledged items (room {m.get('result', {}).get('room')})",
                      sorted(acked_items - items))

        # Last (it writes): each acknowledged liker liking again is refused as a repeat.
        sessions = {}
        for i in range(USERS):
            c, uid = await session(url, f"traveller{i}")
            sessions[uid] = c
        relike = []
        for user, item in sorted(likes_acked):
            m = await sessions[user].call("intel.like", item=item)
            if m.get("ok") or m["error"]["code"] != "conflict":
                relike.append((user, item, m.get("error") or "liked again"))
        res.check(not relike, "an acknowledged like forgotten (liking again was not conflict)", relike)

        print(f"after restart: {len(got)} of {len(acked_items)} acknowledged items, intel.query {len(found)} items; "
              f"likes {sum(g['item']['likes'] for g in got.values())} (acknowledged {len(likes_acked)}), "
              f"comments {sum(g['item']['comments'] for g in got.values())} (acknowledged {len(comments_acked)}), "
              f"link ends {sum(len(g['item']['links']) for g in got.values())} (acknowledged links {len(links_acked)})")
        print(f"crash-routes: {res.passed} passed, {res.failed} failed")
        if res.failed:
            print(f"data directory kept: {data}")
        return 1 if res.failed else 0
    finally:
        proc.terminate()
        proc.wait()
        if not res.failed:
            shutil.rmtree(data, ignore_errors=True)


sys.exit(asyncio.run(main()))
