import Foundation
import GRDB
import HubbubTestSupport
import Realtime
import RouteService
import XCTest

/// Travellers end to end over `/ws` (seed 003): corridors, posts reaching exactly the corridors
/// that contain them, likes, recovery, expiry, restart.
final class RouteUseCaseTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func point(_ lat: Double, _ lon: Double) -> JSON { ["lat": .double(lat), "lon": .double(lon)] }

    /// Istanbul: Eminönü to Karaköy over the Galata bridge, and a second route that shares the bridge.
    private var bridgeRoute: JSON { ["from": point(41.0170, 28.9700), "to": point(41.0245, 28.9770), "widthMeters": 300] }
    private var otherBridgeRoute: JSON { ["from": point(41.0140, 28.9760), "to": point(41.0290, 28.9730), "widthMeters": 400] }
    private var farRoute: JSON { ["from": point(41.0800, 29.0300), "to": point(41.0900, 29.0400)] }
    /// On the bridge, inside both bridge corridors.
    private let onBridge: (Double, Double) = (41.0205, 28.9735)

    private func post(_ c: ProtocolClient, at p: (Double, Double), body: String = "Bridge closed to cars #köprü") async throws -> JSON {
        try await c.ok("intel.post", ["lat": .double(p.0), "lon": .double(p.1), "kind": "disruption", "modes": ["car"], "body": .string(body)])["item"] ?? .null
    }

    func testRefusedCorridorsNameTheField() async throws {
        let (c, _) = try await server.user("alice")
        for (args, field) in [(["from": point(41, 29), "to": point(41.01, 29), "widthMeters": 0] as JSON, "widthMeters"),
                              (["from": point(41, 29), "to": point(41.01, 29), "widthMeters": 1e6], "widthMeters"),
                              (["from": point(41, 29), "to": point(-33.9, 151.2)], "to"),
                              (["from": point(95, 29), "to": point(41.01, 29)], "from"),
                              (["from": point(41, 29)], "to"),
                              (["from": ["lat": 41], "to": point(41.01, 29)], "from"),
                              (["from": point(41, 29), "to": point(41.01, 29), "via": [["lon": 29]]], "via[0]"),
                              (["from": point(41, 29), "to": point(41.01, 29), "sort": "random"], "sort"),
                              (["from": point(41, 29), "to": point(41.01, 29), "filter": ["kinds": ["party"]]], "kinds")] {
            let r = try await c.call("route.subscribe", args)
            XCTAssertEqual(r["error"]?["code"]?.string, "bad_request", "\(args.encoded)")
            XCTAssertTrue(r["error"]?["message"]?.string?.contains(field) ?? false, "\(r.encoded) should name \(field)")
        }
        let badPost = try await c.call("intel.post", ["lat": 41.0, "lon": 29.0, "kind": "rumour", "body": "x"])
        XCTAssertTrue(badPost["error"]?["message"]?.string?.contains("kind") ?? false, badPost.encoded)
        let empty = try await c.call("intel.post", ["lat": 41.0, "lon": 29.0, "kind": "poi", "body": "  "])
        XCTAssertTrue(empty["error"]?["message"]?.string?.contains("body") ?? false, empty.encoded)
        let future = try await c.call("intel.post", ["lat": 41.0, "lon": 29.0, "kind": "poi", "body": "x",
                                                     "at": .double(Date().timeIntervalSince1970 + 3600)])
        XCTAssertTrue(future["error"]?["message"]?.string?.hasPrefix("field at") ?? false, future.encoded)
    }

    func testAPostReachesEveryCorridorContainingItOnceAndNoOther() async throws {
        let (alice, aliceID) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        let (carol, _) = try await server.user("carol")
        let (dave, _) = try await server.user("dave")
        let a = try await bob.ok("route.subscribe", bridgeRoute)
        let b = try await carol.ok("route.subscribe", otherBridgeRoute)
        _ = try await dave.ok("route.subscribe", farRoute)
        XCTAssertNotEqual(a["room"], b["room"])
        let same = try await alice.ok("route.subscribe", bridgeRoute)
        XCTAssertEqual(same["room"], a["room"], "an equal route is the same room")

        let item = try await post(alice, at: onBridge)
        XCTAssertEqual(item["tags"], ["köprü"])
        XCTAssertEqual(item["by"]?["user"]?.string, aliceID)
        XCTAssertEqual(item["by"]?["alias"]?.string, "alice", "the alias defaults to the username")
        let toBob = try await bob.waitForPushes(1)
        let toCarol = try await carol.waitForPushes(1)
        XCTAssertEqual(toBob.first?["event"]?.string, "intel.added")
        XCTAssertEqual(toBob.first?["room"], a["room"])
        XCTAssertEqual(toBob.first?["data"]?["item"]?["id"], item["id"])
        XCTAssertNotNil(toBob.first?["data"]?["item"]?["distanceToDestinationMeters"]?.int)
        XCTAssertEqual(toCarol.first?["data"]?["item"]?["id"], item["id"])
        // Outside every corridor but the far one's box: nobody is told. Then one item for the far
        // corridor; dave's first push must be that one, so the bridge item never reached him.
        _ = try await post(alice, at: (41.0500, 29.0000), body: "between the corridors")
        let far = try await post(alice, at: (41.0850, 29.0350), body: "on the far route")
        let toDave = try await dave.waitForPushes(1)
        XCTAssertEqual(toDave.map { $0["data"]?["item"]?["id"] }, [far["id"]])
        // A newcomer's list holds what is inside, with its distance to the destination.
        let (erin, _) = try await server.user("erin")
        let list = try await erin.ok("route.subscribe", bridgeRoute.merging(["sort": "distance"]))
        XCTAssertEqual(list["items"]?.items.map { $0["id"] }, [item["id"]])
        let filtered = try await erin.ok("route.subscribe", bridgeRoute.merging(["filter": ["kinds": ["poi"]]]))
        XCTAssertEqual(filtered["items"]?.items.count, 0, "the filter applies to the list")
    }

    func testLikesAndRecoveryOnARouteRoom() async throws {
        let (alice, _) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        let sub = try await bob.ok("route.subscribe", bridgeRoute)
        let item = try await post(alice, at: onBridge)
        let id = item["id"] ?? .null
        let selfLike = try await alice.errorCode("intel.like", ["item": id])
        XCTAssertEqual(selfLike, "forbidden")
        let liked = try await bob.ok("intel.like", ["item": id])
        XCTAssertEqual(liked["item"]?["likes"]?.int, 1)
        let secondLike = try await bob.errorCode("intel.like", ["item": id])
        XCTAssertEqual(secondLike, "conflict")
        let missingLike = try await bob.errorCode("intel.like", ["item": "inope"])
        XCTAssertEqual(missingLike, "not_found")
        let pushes = try await bob.waitForPushes(2)
        XCTAssertEqual(pushes.map { $0["event"]?.string ?? "" }, ["intel.added", "intel.updated"])
        XCTAssertEqual(pushes[1]["data"]?["item"]?["likes"]?.int, 1)

        // Bob drops off after the first push; a second post comes; he resumes from his seq.
        let seq = pushes[0]["seq"]?.int ?? 0
        bob.close()
        let second = try await post(alice, at: onBridge, body: "now open again")
        let back = try await ProtocolClient(url: server.url)
        _ = try await back.ok("account.login", ["login": "bob", "password": "secret123"])
        let resumed = try await back.ok("subscribe", ["room": sub["room"] ?? .null, "since": ["seq": .int(seq), "epoch": sub["epoch"] ?? .null]])
        XCTAssertEqual(resumed["recovered"], .bool(true))
        let missed = try await back.waitForPushes(2)
        XCTAssertEqual(missed.map { $0["seq"]?.int ?? 0 }, [seq + 1, seq + 2])
        XCTAssertEqual(missed[1]["data"]?["item"]?["id"], second["id"])
    }

    /// A corridor nobody watches on a node is retired there after `routes.retireAfterSeconds` (its
    /// memory given back); a post meanwhile is in the snapshot a watcher coming back then takes,
    /// in the corridor's next epoch there.
    func testACorridorNobodyWatchesIsRetiredAndComesBackInANewEpochWithItsItems() async throws {
        server.stop()
        server = try TestServer {
            $0.domainSettings[RoutesDomain.sweepSeconds] = 1
            $0.domainSettings[RoutesDomain.retireAfterSeconds] = 1
        }
        let (alice, _) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        let sub = try await bob.ok("route.subscribe", bridgeRoute)
        let first = try await post(alice, at: onBridge, body: "first")
        let seen = try await bob.waitForPushes(1)
        bob.close()
        // Swept every second: retired within about two once its watcher left.
        try await Task.sleep(for: .seconds(5))
        let second = try await post(alice, at: onBridge, body: "while retired")
        let back = try await ProtocolClient(url: server.url)
        _ = try await back.ok("account.login", ["login": "bob", "password": "secret123"])
        let resumed = try await back.ok("subscribe", ["room": sub["room"] ?? .null,
                                                      "since": ["seq": seen[0]["seq"] ?? 0, "epoch": sub["epoch"] ?? .null]])
        XCTAssertEqual(resumed["recovered"], .bool(false), "retired: \(resumed.encoded)")
        XCTAssertNotEqual(resumed["epoch"], sub["epoch"])
        XCTAssertEqual(Set((resumed["snapshot"]?["items"]?.items ?? []).compactMap { $0["id"]?.string }),
                       Set([first["id"], second["id"]].compactMap { $0?.string }))
    }

    func testCommentsLinksQueriesAndKarma() async throws {
        let (alice, aliceID) = try await server.user("alice")
        let (bob, bobID) = try await server.user("bob")
        let (carol, _) = try await server.user("carol")
        let (dave, _) = try await server.user("dave")
        _ = try await carol.ok("route.subscribe", bridgeRoute)
        _ = try await dave.ok("route.subscribe", farRoute)
        let a = try await post(alice, at: onBridge)
        let b = try await post(bob, at: (41.0850, 29.0350), body: "ferry late #vapur")
        _ = try await carol.waitForPushes(1)
        _ = try await dave.waitForPushes(1)
        carol.clearPushes()
        dave.clearPushes()

        let commented = try await bob.ok("intel.comment", ["item": a["id"] ?? .null, "text": "still closed at 9"])
        XCTAssertEqual(commented["item"]?["comments"]?.int, 1)
        let updated = try await carol.waitForPushes(1)
        XCTAssertEqual(updated.first?["event"]?.string, "intel.updated")
        XCTAssertEqual(updated.first?["data"]?["item"]?["comments"]?.int, 1)
        let blank = try await bob.call("intel.comment", ["item": a["id"] ?? .null, "text": " "])
        XCTAssertTrue(blank["error"]?["message"]?.string?.contains("text") ?? false, blank.encoded)

        let linked = try await carol.ok("intel.link", ["item": a["id"] ?? .null, "to": b["id"] ?? .null])
        XCTAssertEqual(linked["item"]?["links"], [b["id"] ?? .null])
        XCTAssertEqual(linked["to"]?["links"], [a["id"] ?? .null])
        let toCarol = try await carol.waitForPushes(2)
        let toDave = try await dave.waitForPushes(1)
        XCTAssertEqual(toCarol[1]["event"]?.string, "intel.linked")
        XCTAssertEqual(toCarol[1]["data"]?["to"], b["id"])
        XCTAssertEqual(toDave.first?["event"]?.string, "intel.linked", "both items' corridors hear of the link")
        let again = try await carol.errorCode("intel.link", ["item": b["id"] ?? .null, "to": a["id"] ?? .null])
        XCTAssertEqual(again, "conflict")
        let toItself = try await carol.errorCode("intel.link", ["item": a["id"] ?? .null, "to": a["id"] ?? .null])
        XCTAssertEqual(toItself, "bad_request")
        let toNothing = try await carol.errorCode("intel.link", ["item": a["id"] ?? .null, "to": "inope"])
        XCTAssertEqual(toNothing, "not_found")

        let got = try await dave.ok("intel.get", ["item": a["id"] ?? .null])
        XCTAssertEqual(got["comments"]?.items.map { $0["text"]?.string ?? "" }, ["still closed at 9"])
        XCTAssertEqual(got["comments"]?.items.first?["by"]?["user"]?.string, bobID)
        XCTAssertEqual(got["linked"]?.items.map { $0["id"] }, [b["id"]])

        let bridgeBox: JSON = ["minLat": 41.01, "minLon": 28.96, "maxLat": 41.03, "maxLon": 28.99]
        let inBridgeBox = try await dave.ok("intel.query", bridgeBox)["items"]?.items.map { $0["id"] }
        XCTAssertEqual(inBridgeBox, [a["id"]])
        let poi = try await dave.ok("intel.query", bridgeBox.merging(["filter": ["kinds": ["poi"]]]))
        XCTAssertEqual(poi["items"]?.items.count, 0)
        let later = try await dave.ok("intel.query", bridgeBox.merging(["since": .double(Date().timeIntervalSince1970 + 60)]))
        XCTAssertEqual(later["items"]?.items.count, 0)
        let everywhere = try await dave.ok("intel.query", ["minLat": 40.5, "minLon": 28, "maxLat": 41.5, "maxLon": 30])
        XCTAssertEqual(everywhere["items"]?.items.map { $0["id"] }, [b["id"], a["id"]], "newest first")
        let upsideDown = try await dave.call("intel.query", ["minLat": 42, "minLon": 28, "maxLat": 41, "maxLon": 30])
        XCTAssertTrue(upsideDown["error"]?["message"]?.string?.contains("minLat") ?? false, upsideDown.encoded)
        let world = try await dave.call("intel.query", ["minLat": -80, "minLon": -180, "maxLat": 80, "maxLon": 180])
        XCTAssertTrue(world["error"]?["message"]?.string?.contains("at most 2.0°") ?? false, world.encoded)
        let nobody = try await dave.errorCode("user.karma", ["user": "unobody"])
        XCTAssertEqual(nobody, "not_found")

        // Karma: 1 for sharing, 2 for each like or link received (not for linking oneself).
        _ = try await dave.ok("intel.like", ["item": a["id"] ?? .null])
        let aliceKarma = try await bob.ok("user.karma", ["user": .string(aliceID)])
        XCTAssertEqual(aliceKarma["karma"]?.int, 1 + 2 + 2)
        XCTAssertEqual(aliceKarma["level"]?.string, "newcomer")
        let bobKarma = try await bob.ok("user.karma")["karma"]?.int
        XCTAssertEqual(bobKarma, 1 + 2)
    }

    func testDestinationsAreRememberedMostRecentFirstAndForgotten() async throws {
        let (alice, _) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        _ = try await alice.ok("route.subscribe", bridgeRoute.merging(["label": "work", "filter": ["kinds": ["disruption"]]]))
        _ = try await alice.ok("route.subscribe", farRoute)
        // The same destination again, from elsewhere and without a label: refreshed, label kept.
        _ = try await alice.ok("route.subscribe", ["from": point(41.0100, 28.9600), "to": point(41.0245, 28.9770)])
        let list = try await alice.ok("destinations.list")["destinations"]?.items ?? []
        XCTAssertEqual(list.count, 2)
        XCTAssertEqual(list.first?["label"]?.string, "work", "most recent first, the label kept")
        XCTAssertEqual(list.first?["to"]?["lat"], .double(41.0245))
        XCTAssertEqual(list.first?["filter"], [:], "the filter last used")
        XCTAssertEqual(list.last?["label"], .null)
        let others = try await bob.ok("destinations.list")["destinations"]?.items.count
        XCTAssertEqual(others, 0, "destinations are their traveller's own")
        let id = list.first?["destination"] ?? .null
        let notBobs = try await bob.errorCode("destination.forget", ["destination": id])
        XCTAssertEqual(notBobs, "not_found")
        _ = try await alice.ok("destination.forget", ["destination": id])
        let left = try await alice.ok("destinations.list")["destinations"]?.items.map { $0["destination"] }
        XCTAssertEqual(left, [list.last?["destination"] ?? .null])
    }

    func testItemsShowTheAliasAndForgetADeletedPoster() async throws {
        let (alice, aliceID) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        _ = try await alice.ok("profile.update", ["alias": "Road Runner"])
        let item = try await post(alice, at: onBridge)
        XCTAssertEqual(item["by"], ["user": .string(aliceID), "alias": "Road Runner"])
        _ = try await alice.ok("intel.comment", ["item": item["id"] ?? .null, "text": "my own note"])
        _ = try await alice.ok("account.delete")
        let got = try await bob.ok("intel.get", ["item": item["id"] ?? .null])
        XCTAssertEqual(got["item"]?["by"], ["alias": "deleted user"], "the item stays, the person is gone from it")
        XCTAssertEqual(got["comments"]?.items.first?["by"], ["alias": "deleted user"])
        XCTAssertFalse(got.encoded.contains(aliceID))
    }

    func testItemsExpireOnTimeAndSurviveARestartUntilThen() async throws {
        server.stop()
        server = try TestServer { $0.domainSettings[RoutesDomain.intelTtlSeconds] = 2 }
        let (alice, _) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        let sub = try await bob.ok("route.subscribe", bridgeRoute)
        let item = try await post(alice, at: onBridge)
        let pushes = try await bob.waitForPushes(2) // intel.added, then intel.expired about 2 s later
        XCTAssertEqual(pushes.map { $0["event"]?.string ?? "" }, ["intel.added", "intel.expired"])
        XCTAssertEqual(pushes[1]["data"]?["item"], item["id"])
        let afterExpiry = try await alice.errorCode("intel.get", ["item": item["id"] ?? .null])
        XCTAssertEqual(afterExpiry, "not_found")

        // A fresh item survives a restart; the corridor's room is found again by its id, in a new
        // epoch (it is made on each node that watches it, never stored): a resume from before the
        // restart takes a snapshot holding the durable item, not the expired one.
        let kept = try await post(alice, at: onBridge, body: "durable")
        _ = try await bob.waitForPushes(3)
        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir) { $0.domainSettings[RoutesDomain.intelTtlSeconds] = 60 }
        let (carol, _) = try await server.user("carol")
        let got = try await carol.ok("intel.get", ["item": kept["id"] ?? .null])
        XCTAssertEqual(got["item"]?["body"]?.string, "durable")
        let again = try await carol.ok("subscribe", ["room": sub["room"] ?? .null, "since": ["seq": 1, "epoch": sub["epoch"] ?? .null]])
        XCTAssertEqual(again["recovered"], .bool(false), again.encoded)
        XCTAssertNotEqual(again["epoch"], sub["epoch"])
        XCTAssertEqual(again["snapshot"]?["items"]?.items.map { $0["id"] }, [kept["id"]])
        let later = try await post(carol, at: onBridge, body: "after")
        let next = try await carol.waitForPushes(1)
        XCTAssertEqual(next.first?["seq"]?.int, (again["seq"]?.int ?? -1) + 1)
        XCTAssertEqual(next.first?["epoch"], again["epoch"])
        XCTAssertEqual(next.first?["data"]?["item"]?["id"], later["id"])
        let list = try await carol.ok("route.subscribe", bridgeRoute)
        XCTAssertEqual(Set(list["items"]?.items.compactMap { $0["id"]?.string } ?? []), Set([kept["id"], later["id"]].compactMap { $0?.string }),
                       "the expired item is gone, the durable one back")
    }
}

extension JSON {
    /// This object with `other`'s fields added (tests build variants of one request).
    func merging(_ other: JSON) -> JSON {
        guard case .object(let mine) = self, case .object(let theirs) = other else { return self }
        return .object(mine.filter { field in !theirs.contains { $0.0 == field.0 } } + theirs)
    }
}

/// The disk stays bounded by what is recent: expired items and unused corridors are pruned, and
/// `intel.get` shows the newest comments with a flag when there are more.
final class RoutePruningTests: XCTestCase {
    func testExpiredItemsAndUnusedCorridorsArePrunedButLiveOnesStay() async throws {
        let server = try TestServer {
            $0.domainSettings[RoutesDomain.intelTtlSeconds] = 1
            $0.domainSettings[RoutesDomain.keepExpiredSeconds] = 0
            $0.domainSettings[RoutesDomain.keepCorridorSeconds] = 0
            $0.domainSettings[RoutesDomain.pruneSeconds] = 1
            $0.domainSettings[RoutesDomain.sweepSeconds] = 1
            $0.domainSettings[RoutesDomain.retireAfterSeconds] = 1
        }
        defer { server.stop() }
        let (alice, _) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        let route: JSON = ["from": ["lat": 41.0170, "lon": 28.9700], "to": ["lat": 41.0245, "lon": 28.9770], "widthMeters": 300]
        let room = try await alice.ok("route.subscribe", route)["room"] ?? .null
        let item = try await alice.ok("intel.post", ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "soon gone"])["item"]?["id"] ?? .null
        _ = try await bob.ok("intel.like", ["item": item])
        _ = try await bob.ok("intel.comment", ["item": item, "text": "thanks"])
        let db = try sideDatabase(server.configuration.dataDir + "/hubbub.sqlite")
        func count(_ sql: String) async throws -> Int {
            try await db.read { db in try Int.fetchOne(db, sql: sql, arguments: [item.string]) ?? -1 }
        }
        // The like postponed expiry by a second; then a prune pass (every second) deletes it all.
        var left = -1
        try await eventually(timeout: 15, every: .milliseconds(100)) {
            left = try await count("SELECT (SELECT count(*) FROM intel_item WHERE id = ?1) + (SELECT count(*) FROM intel_like WHERE item = ?1) + (SELECT count(*) FROM intel_comment WHERE item = ?1)")
            return left == 0
        }
        XCTAssertEqual(left, 0, "the expired item went from the disk with its like and comment")
        let watched = try await bob.ok("subscribe", ["room": room])
        XCTAssertNotNil(watched["epoch"], "a corridor someone watches is never pruned, however old its row")

        // Nobody watches it: retired, then pruned; its room id is then unknown.
        alice.close()
        _ = try await bob.ok("unsubscribe", ["room": room])
        let corridorID = String(room.string?.dropFirst("route:".count) ?? "")
        var rows = -1
        try await eventually(timeout: 15, every: .milliseconds(100)) {
            rows = try await db.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM corridor WHERE id = ?", arguments: [corridorID]) ?? -1 }
            return rows == 0
        }
        XCTAssertEqual(rows, 0, "the unused corridor's row was pruned")
        let code = try await bob.errorCode("subscribe", ["room": room])
        XCTAssertEqual(code, "not_found")
    }

    func testIntelGetShowsTheNewestCommentsAndSaysWhenThereAreMore() async throws {
        let server = try TestServer { $0.domainSettings[RoutesDomain.commentsShown] = 3 }
        defer { server.stop() }
        let (alice, _) = try await server.user("alice")
        let item = try await alice.ok("intel.post", ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "talk"])["item"]?["id"] ?? .null
        for i in 1...3 { _ = try await alice.ok("intel.comment", ["item": item, "text": .string("c\(i)")]) }
        let three = try await alice.ok("intel.get", ["item": item])
        XCTAssertEqual(three["comments"]?.items.map { $0["text"]?.string }, ["c1", "c2", "c3"])
        XCTAssertEqual(three["commentsTruncated"], false)
        _ = try await alice.ok("intel.comment", ["item": item, "text": "c4"])
        let four = try await alice.ok("intel.get", ["item": item])
        XCTAssertEqual(four["comments"]?.items.map { $0["text"]?.string }, ["c2", "c3", "c4"], "the newest, oldest first")
        XCTAssertEqual(four["commentsTruncated"], true)
        XCTAssertEqual(four["item"]?["comments"], 4, "the item still counts them all")
    }
}
