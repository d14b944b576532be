import Foundation
import HubbubServer
import HubbubTestSupport
import Realtime
import RouteService
import Routes
import SwiftProtobuf
import TransitFeeds
import XCTest

/// Travellers on three nodes: each intel shard is one node's (its `intel:<shard>` lease's
/// holder), written once to its log, which reaches every node; each node makes the corridors its
/// own travellers watch from those logs (`route:` rooms are local: no lease, never written).
extension ClusterTests {
    private static let route: JSON = ["from": ["lat": 41.0170, "lon": 28.9700], "to": ["lat": 41.0245, "lon": 28.9770], "widthMeters": 400]
    private static let inside: JSON = ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "a fountain"]

    /// The node holding the lease of item `id`'s shard now (among the running ones, all but `stopped`).
    private func shardOwner(of id: JSON?, stopped: Int? = nil) throws -> Int {
        let lease = "intel:" + (IntelShards.shard(ofID: id?.string ?? "") ?? "?")
        let holder = try TestPostgres.query(nodes[0].configuration.database.url, "SELECT node FROM cluster_lease WHERE shard = '\(lease)'")
        for (i, n) in nodes.enumerated() where i != stopped {
            if try n.api("GET", "/healthz", key: nil).json?["node"]?.string == holder.first { return i }
        }
        throw TestError("no node holds \(lease) (\(holder))")
    }

    private func traveller(_ name: String, on node: Int) async throws -> (ProtocolClient, JSON) {
        _ = try await nodes[node].user(name)
        let c = try await login(name, on: node)
        return (c, try await c.ok("route.subscribe", Self.route))
    }

    /// A post through A reaches travellers on B and C in their corridor's order; two likes through
    /// two nodes at once count twice; the same user's like through two nodes at once counts once.
    func testIntelReachesTravellersOnEveryNodeAndLikesThroughTwoNodesCountTwice() async throws {
        let (onB, subB) = try await traveller("tbee", on: 1)
        let (onC, subC) = try await traveller("tcee", on: 2)
        XCTAssertEqual(subB["room"], subC["room"], "one corridor, one room")
        XCTAssertNotEqual(subB["epoch"], subC["epoch"], "each node makes its own")
        _ = try await nodes[0].user("poster")
        let poster = try await login("poster", on: 0)
        let posted = try await poster.ok("intel.post", Self.inside)
        let item = try XCTUnwrap(posted["item"]?["id"])

        _ = try await nodes[1].user("liker1")
        _ = try await nodes[2].user("liker2")
        let l1 = try await login("liker1", on: 1), l2 = try await login("liker2", on: 2)
        async let like1 = l1.call("intel.like", ["item": item])
        async let like2 = l2.call("intel.like", ["item": item])
        let likes = try await [like1, like2]
        XCTAssertEqual(likes.filter { $0["ok"] == .bool(true) }.count, 2, "\(likes.map(\.encoded))")
        let twiceA = try await login("liker1", on: 0), twiceB = try await login("liker1", on: 2)
        async let again1 = twiceA.call("intel.like", ["item": item])
        async let again2 = twiceB.call("intel.like", ["item": item])
        let again = try await [again1, again2]
        XCTAssertEqual(again.compactMap { $0["error"]?["code"]?.string }, ["conflict", "conflict"], "liker1 liked it already")

        for (c, sub) in [(onB, subB), (onC, subC)] {
            let pushes = try await c.waitForPushes(3)
            let start = try XCTUnwrap(sub["seq"]?.int)
            XCTAssertEqual(pushes.compactMap { $0["seq"]?.int }, [start + 1, start + 2, start + 3], "every push once, in order")
            XCTAssertEqual(Set(pushes.compactMap { $0["epoch"]?.string }), [sub["epoch"]?.string ?? "?"], "in its node's epoch")
            XCTAssertEqual(pushes.map { $0["event"]?.string ?? "" }, ["intel.added", "intel.updated", "intel.updated"])
            XCTAssertEqual(pushes.last?["data"]?["item"]?["likes"]?.int, 2)
        }
        for n in 0..<3 {
            let c = try await login("poster", on: n)
            let got = try await c.ok("intel.get", ["item": item])
            XCTAssertEqual(got["item"]?["likes"]?.int, 2, "node \(n)")
        }
    }

    /// A provider's items posted to any node (`POST /api/intel`) go to their shard's owner:
    /// travellers on every node hear of them, and every node finds them.
    func testProviderIntelPostedToAnyNodeReachesItsShardsOwner() async throws {
        let (onB, sub) = try await traveller("watcher", on: 1)
        var ids: [JSON] = []
        for n in 0..<3 {
            let body = #"{"items": [{"lat": 41.0205, "lon": 28.9735, "kind": "disruption", "body": "lift out of order \#(n)", "source": "metro"}]}"#
            let r = try nodes[n].api("POST", "/api/intel", body: Array(body.utf8))
            XCTAssertEqual(r.status, 200, "node \(n): \(r.json?.encoded ?? "")")
            ids += r.json?["ids"]?.items ?? []
        }
        XCTAssertEqual(ids.count, 3)
        let pushes = try await onB.waitForPushes(3)
        let start = try XCTUnwrap(sub["seq"]?.int)
        XCTAssertEqual(pushes.compactMap { $0["seq"]?.int }, [start + 1, start + 2, start + 3])
        XCTAssertEqual(pushes.map { $0["data"]?["item"]?["id"] ?? .null }, ids)
        for n in 0..<3 {
            let c = try await login("watcher", on: n)
            let found = try await c.ok("intel.query", ["minLat": 41, "minLon": 28.9, "maxLat": 41.1, "maxLon": 29])
            XCTAssertEqual(Set((found["items"]?.items ?? []).compactMap { $0["id"]?.string }), Set(ids.compactMap(\.string)), "node \(n)")
        }
    }

    /// A traveller leaves node B and comes back on node C with `since`: C makes its own corridor
    /// (another epoch), so it takes a snapshot, holding what it missed; what follows comes once.
    func testATravellerMovesBetweenNodesWithSinceAndMissesNothing() async throws {
        let (onB, sub) = try await traveller("mover", on: 1)
        _ = try await nodes[0].user("poster")
        let poster = try await login("poster", on: 0)
        let first = try await poster.ok("intel.post", Self.inside)["item"]?["id"]
        let seen = try await onB.waitForPushes(1)
        let last = try XCTUnwrap(seen.last?["seq"]?.int)
        onB.close()
        let missed1 = try await poster.ok("intel.post", Self.inside)["item"]?["id"]
        let missed2 = try await poster.ok("intel.post", Self.inside)["item"]?["id"]
        let onC = try await login("mover", on: 2)
        let back = try await onC.ok("subscribe", ["room": sub["room"]!, "since": ["seq": .int(last), "epoch": sub["epoch"]!]])
        XCTAssertEqual(back["recovered"], .bool(false), back.encoded)
        XCTAssertNotEqual(back["epoch"], sub["epoch"])
        let shown = Set((back["snapshot"]?["items"]?.items ?? []).compactMap { $0["id"]?.string })
        XCTAssertEqual(shown, Set([first, missed1, missed2].compactMap { $0?.string }))
        let next = try await poster.ok("intel.post", Self.inside)["item"]?["id"]
        let pushes = try await onC.waitForPushes(1)
        XCTAssertEqual(pushes.first?["seq"]?.int, (back["seq"]?.int ?? -1) + 1)
        XCTAssertEqual(pushes.first?["data"]?["item"]?["id"], next)
    }

    /// Items expire once, pushed once to watchers on every node; when the node running the timer
    /// stops, another takes the shard's lease and the timer.
    func testIntelExpiresOnceEverywhereAndTheTimerMovesWithItsOwner() async throws {
        for n in nodes { n.stop() }
        nodes = try await startNodes { $0.domainSettings[RoutesDomain.intelTtlSeconds] = 2 }
        let (onB, _) = try await traveller("tbee", on: 1)
        let (onC, _) = try await traveller("tcee", on: 2)
        _ = try await nodes[0].user("poster")
        let poster = try await login("poster", on: 0)
        let first = try await poster.ok("intel.post", Self.inside)["item"]?["id"]
        for c in [onB, onC] {
            let pushes = try await c.waitForPushes(2)
            XCTAssertEqual(pushes.map { $0["event"]?.string ?? "" }, ["intel.added", "intel.expired"])
            XCTAssertEqual(pushes.last?["data"]?["item"], first)
        }
        try await Task.sleep(for: .seconds(1.5))
        for c in [onB, onC] {
            _ = try await c.ok("intel.query", ["minLat": 41, "minLon": 28.9, "maxLat": 41.1, "maxLon": 29])
            XCTAssertEqual(c.pushes.count, 2, "one expiry, once: \(c.pushes.map(\.encoded))")
        }

        // The timer's node stops; a traveller on a node still running hears the next expiry.
        let owner = try shardOwner(of: first)
        let survivor = (owner + 1) % 3, watching = owner == 1 ? onC : onB // onB is on node 1, onC on node 2
        nodes[owner].stop()
        let other = try await login("poster", on: survivor)
        // The first try may go to the stopped node, as this one last knew it: `unavailable`, try again.
        var reply = try await other.call("intel.post", Self.inside)
        for _ in 0..<50 where reply["error"]?["code"]?.string == "unavailable" {
            try await Task.sleep(for: .milliseconds(100))
            reply = try await other.call("intel.post", Self.inside)
        }
        let second = reply["result"]?["item"]?["id"]
        XCTAssertNotNil(second, reply.encoded)
        let pushes = try await watching.waitForPushes(4)
        XCTAssertEqual(pushes.suffix(2).map { $0["event"]?.string ?? "" }, ["intel.added", "intel.expired"])
        XCTAssertEqual(pushes.suffix(2).map { $0["data"]?["item"]?["id"] ?? $0["data"]?["item"] }, [second, second])
        XCTAssertNotEqual(try shardOwner(of: second, stopped: owner), owner)
    }

    /// An item on the border of two shards (41.0° of latitude is one) reaches each corridor whose
    /// band holds it exactly once: corridors north, south and across, watched on three nodes.
    func testAnItemOnAShardBorderReachesEveryCorridorHoldingItOnce() async throws {
        let routes: [JSON] = [
            ["from": ["lat": 41.002, "lon": 28.960], "to": ["lat": 41.002, "lon": 28.985], "widthMeters": 600], // north of the border
            ["from": ["lat": 40.998, "lon": 28.960], "to": ["lat": 40.998, "lon": 28.985], "widthMeters": 600], // south
            ["from": ["lat": 40.990, "lon": 28.9735], "to": ["lat": 41.010, "lon": 28.9735], "widthMeters": 300], // across
        ]
        var watchers: [(ProtocolClient, Int)] = []
        for (n, route) in routes.enumerated() {
            _ = try await nodes[n].user("watcher\(n)")
            let c = try await login("watcher\(n)", on: n)
            let subscribed = try await c.ok("route.subscribe", route)
            watchers.append((c, try XCTUnwrap(subscribed["seq"]?.int)))
        }
        _ = try await nodes[0].user("poster")
        let poster = try await login("poster", on: 1)
        let id = try await poster.ok("intel.post", ["lat": 41.0, "lon": 28.9735, "kind": "poi", "body": "on the line"])["item"]?["id"]
        // And one far from every band, after it: the last push any corridor could get.
        _ = try await poster.ok("intel.post", ["lat": 41.03, "lon": 28.90, "kind": "poi", "body": "elsewhere"])
        for (c, start) in watchers {
            let pushes = try await c.waitForPushes(1)
            XCTAssertEqual(pushes.map { $0["seq"]?.int }, [start + 1])
            XCTAssertEqual(pushes.map { $0["data"]?["item"]?["id"] }, [id])
        }
        try await Task.sleep(for: .milliseconds(500))
        for (c, _) in watchers { XCTAssertEqual(c.pushes.count, 1, "once: \(c.pushes.map(\.encoded))") }
    }

    /// Two items of two shards owned by two nodes, linked through a third: each half is made by
    /// its shard's owner; the link is shown on both items everywhere and pushed once to a corridor
    /// holding both; linking them again, either way, is a conflict; karma is given once per item.
    func testALinkBetweenShardsOnTwoNodesIsMadeOnceInTwoHalves() async throws {
        _ = try await nodes[2].user("watcher")
        let watcher = try await login("watcher", on: 2)
        let across: JSON = ["from": ["lat": 40.975, "lon": 28.9735], "to": ["lat": 41.025, "lon": 28.9735], "widthMeters": 400]
        let subscribed = try await watcher.ok("route.subscribe", across)
        let start = try XCTUnwrap(subscribed["seq"]?.int)
        let (_, northID) = try await nodes[0].user("north")
        let (_, southID) = try await nodes[1].user("south")
        _ = try await nodes[2].user("linker")
        let north = try await login("north", on: 0), south = try await login("south", on: 1)
        let a = try await north.ok("intel.post", ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "north"])["item"]?["id"]
        let b = try await south.ok("intel.post", ["lat": 40.9800, "lon": 28.9735, "kind": "poi", "body": "south"])["item"]?["id"]
        XCTAssertNotEqual(IntelShards.shard(ofID: a?.string ?? ""), IntelShards.shard(ofID: b?.string ?? ""))
        XCTAssertEqual(try shardOwner(of: a), 0, "the first to ask for a shard holds it")
        XCTAssertEqual(try shardOwner(of: b), 1)

        let linker = try await login("linker", on: 2)
        let linked = try await linker.ok("intel.link", ["item": a ?? .null, "to": b ?? .null])
        XCTAssertEqual(linked["item"]?["links"], .array([b ?? .null]))
        XCTAssertEqual(linked["to"]?["links"], .array([a ?? .null]))
        for order in [(a, b), (b, a)] {
            let again = try await linker.errorCode("intel.link", ["item": order.0 ?? .null, "to": order.1 ?? .null])
            XCTAssertEqual(again, "conflict")
        }
        for n in 0..<3 {
            let c = try await login("linker", on: n)
            for (item, other) in [(a, b), (b, a)] {
                let got = try await c.ok("intel.get", ["item": item ?? .null])
                XCTAssertEqual(got["item"]?["links"], .array([other ?? .null]), "node \(n)")
                XCTAssertEqual(got["linked"]?.items.map { $0["id"] }, [other], "node \(n)")
            }
        }
        // The corridor holds both: added, added, then the link once.
        let pushes = try await watcher.waitForPushes(3)
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(pushes.count, 3)
        let mine = watcher.pushes
        XCTAssertEqual(mine.map { $0["event"]?.string ?? "" }, ["intel.added", "intel.added", "intel.linked"])
        XCTAssertEqual(mine.compactMap { $0["seq"]?.int }, [start + 1, start + 2, start + 3])
        for user in [northID, southID] {
            let karma = try await linker.ok("user.karma", ["user": .string(user)])["karma"]?.int
            XCTAssertEqual(karma, 1 + 2, "\(user): sharing, and one link received")
        }
    }

    /// A shard moving between nodes while items arrive: its owner stops in the middle of a run of
    /// posts through another node (they answer `unavailable` until the lease runs out, and are
    /// sent again); the watcher, on a third node, hears of every acknowledged post once, in seq
    /// order, in its first epoch (its node's corridor did not move: only the shard did).
    func testAShardMovingBetweenNodesWhileItemsArriveLosesAndRepeatsNothing() async throws {
        let (watcher, sub) = try await traveller("watcher", on: 2)
        _ = try await nodes[0].user("poster")
        let first = try await login("poster", on: 0).ok("intel.post", Self.inside)["item"]?["id"]
        XCTAssertEqual(try shardOwner(of: first), 0, "the first post's node holds the shard")
        let poster = try await login("poster", on: 1)
        var acked: [JSON] = [first ?? .null]
        for n in 0..<24 {
            if n == 8 { nodes[0].stop() }
            var reply = try await poster.call("intel.post", Self.inside)
            for _ in 0..<100 where reply["error"]?["code"]?.string == "unavailable" {
                try await Task.sleep(for: .milliseconds(100))
                reply = try await poster.call("intel.post", Self.inside)
            }
            acked.append(try XCTUnwrap(reply["result"]?["item"]?["id"], reply.encoded))
        }
        XCTAssertEqual(try shardOwner(of: acked.last, stopped: 0), 1, "the shard moved to the node its posts came through")
        let pushes = try await watcher.waitForPushes(acked.count, within: 20)
        let start = try XCTUnwrap(sub["seq"]?.int)
        XCTAssertEqual(pushes.compactMap { $0["seq"]?.int }, Array(start + 1...start + acked.count), "every push once, in order")
        XCTAssertEqual(Set(pushes.compactMap { $0["epoch"]?.string }), [sub["epoch"]?.string ?? "?"], "in the corridor's first epoch")
        XCTAssertEqual(pushes.map { $0["data"]?["item"]?["id"] ?? .null }, acked, "each acknowledged post, in the order acknowledged")
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(watcher.pushes.count, acked.count, "and nothing more")
    }

    /// A corridor watched on two nodes is made on each, with no lease: when one of them stops, the
    /// watcher on the other goes on untouched (its node's epoch, every item once, in order), and
    /// the opener, back on a third node with `since`, takes a snapshot holding everything.
    func testACorridorWatchedOnTwoNodesGoesOnWhenOneStops() async throws {
        let (opener, sub) = try await traveller("opener", on: 0)
        let room = try XCTUnwrap(sub["room"]?.string)
        _ = try await nodes[1].user("watcher")
        let watcher = try await login("watcher", on: 1)
        let watching = try await watcher.ok("subscribe", ["room": .string(room)])
        XCTAssertNotEqual(watching["epoch"], sub["epoch"], "each node makes its own")
        _ = try await nodes[2].user("poster")
        let poster = try await login("poster", on: 2)
        let first = try await poster.ok("intel.post", Self.inside)["item"]?["id"]
        var posted: [JSON] = [try XCTUnwrap(first)]
        _ = try await watcher.waitForPushes(1)
        let seen = try await opener.waitForPushes(1).last
        opener.close()
        nodes[0].stop()
        for i in 0..<4 {
            let body: JSON = ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": .string("after node 0 stopped \(i)")]
            var reply = try await poster.call("intel.post", body)
            for _ in 0..<100 where reply["error"]?["code"]?.string == "unavailable" {
                try await Task.sleep(for: .milliseconds(100))
                reply = try await poster.call("intel.post", body)
            }
            posted.append(try XCTUnwrap(reply["result"]?["item"]?["id"], reply.encoded))
        }
        let pushes = try await watcher.waitForPushes(5, within: 20)
        let start = try XCTUnwrap(watching["seq"]?.int)
        XCTAssertEqual(pushes.compactMap { $0["seq"]?.int }, Array(start + 1...start + 5), "each once, in order")
        XCTAssertEqual(Set(pushes.compactMap { $0["epoch"]?.string }), [watching["epoch"]?.string ?? "?"], "its node's epoch throughout")
        XCTAssertEqual(pushes.map { $0["data"]?["item"]?["id"] ?? .null }, posted)
        let url = nodes[1].configuration.database.url
        XCTAssertEqual(try TestPostgres.query(url, "SELECT count(*) FROM cluster_lease WHERE shard LIKE 'route:%'"), ["0"], "no corridor lease")
        let back = try await login("opener", on: 2)
        let resumed = try await back.ok("subscribe", ["room": .string(room), "since": ["seq": seen?["seq"] ?? 0, "epoch": sub["epoch"]!]])
        XCTAssertEqual(resumed["recovered"], .bool(false), resumed.encoded)
        XCTAssertEqual(Set((resumed["snapshot"]?["items"]?.items ?? []).compactMap { $0["id"]?.string }), Set(posted.compactMap(\.string)))
    }

    /// A GTFS-Realtime message (a full dataset) of alerts on `(entity, route, text)`.
    private func alerts(_ entities: [(String, String, String)]) throws -> [UInt8] {
        var m = TransitRealtime_FeedMessage()
        m.header.gtfsRealtimeVersion = "2.0"
        m.entity = entities.map { id, route, text in
            var e = TransitRealtime_FeedEntity()
            e.id = id
            var selector = TransitRealtime_EntitySelector()
            selector.routeID = route
            e.alert.informedEntity = [selector]
            var t = TransitRealtime_TranslatedString.Translation()
            t.text = text
            e.alert.headerText.translation = [t]
            return e
        }
        return try m.serializedBytes()
    }

    /// GTFS-Realtime alerts are read and placed on whichever node receives them; only their items
    /// go to the owner of the `named` shard, which decides them: messages posted to the two other
    /// nodes are applied there in full (added, revised, ended by a full dataset leaving them out),
    /// the shard stays where it is, and a traveller on a third node hears of each change once, in order.
    func testTransitAlertsPostedToAnyNodeAreDecidedByTheNamedShardsOwner() async throws {
        XCTAssertEqual(try nodes[0].api("POST", "/api/feeds/gtfs?feed=city", body: try makeZip(TransitFixture.smallCity())).status, 200)
        _ = try await nodes[1].user("rider")
        let rider = try await login("rider", on: 1)
        // Across stop s5, served by both routes.
        let sub = try await rider.ok("route.subscribe", ["from": ["lat": 52.355, "lon": 4.85], "to": ["lat": 52.365, "lon": 4.85], "widthMeters": 200])
        var r = try nodes[0].api("POST", "/api/feeds/gtfs-rt?feed=city", body: try alerts([("tram5", "r1", "Tram 5 delayed")]))
        XCTAssertEqual(r.status, 200, r.json?.encoded ?? "")
        XCTAssertEqual(r.json?["added"]?.int, 1)
        let url = nodes[0].configuration.database.url
        let holder = try TestPostgres.query(url, "SELECT node FROM cluster_lease WHERE shard = 'intel:named'")
        XCTAssertEqual(holder.count, 1)
        var others: [Int] = []
        for n in 0..<3 where try nodes[n].api("GET", "/healthz", key: nil).json?["node"]?.string != holder.first { others.append(n) }
        XCTAssertEqual(others.count, 2, "one node holds the named shard")

        r = try nodes[others[0]].api("POST", "/api/feeds/gtfs-rt?feed=city",
                                     body: try alerts([("tram5", "r1", "Tram 5 diverted"), ("bus22", "r2", "Bus 22 cancelled")]))
        XCTAssertEqual(r.status, 200, r.json?.encoded ?? "")
        XCTAssertEqual([r.json?["added"]?.int, r.json?["changed"]?.int], [1, 1], r.json?.encoded ?? "")
        r = try nodes[others[1]].api("POST", "/api/feeds/gtfs-rt?feed=city", body: try alerts([]))
        XCTAssertEqual(r.status, 200, r.json?.encoded ?? "")
        XCTAssertEqual(r.json?["ended"]?.int, 2, "a full dataset of nothing ends both")
        XCTAssertEqual(try TestPostgres.query(url, "SELECT node FROM cluster_lease WHERE shard = 'intel:named'"), holder, "the shard did not move")

        let pushes = try await rider.waitForPushes(5)
        let start = try XCTUnwrap(sub["seq"]?.int)
        XCTAssertEqual(pushes.compactMap { $0["seq"]?.int }, Array(start + 1...start + 5), "every change once, in order")
        XCTAssertEqual(pushes.map { $0["event"]?.string ?? "" }, ["intel.added", "intel.updated", "intel.added", "intel.expired", "intel.expired"])
        XCTAssertEqual(pushes[1]["data"]?["item"]?["body"]?.string, "Tram 5 diverted")
    }
}
