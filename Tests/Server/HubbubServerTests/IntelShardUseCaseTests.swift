import Foundation
import HubbubServer
import HubbubTestSupport
import Realtime
import RoomLog
import RouteService
import Routes
import Storage
import XCTest

/// The intel split into shards (`routes.shardDegrees`, 0.05°: latitude 41.0° is a border), each
/// change written once to its shard's log, and each corridor making its pushes from the logs of
/// the shards its band reaches: an item reaches every corridor containing it once, wherever the
/// borders fall, and a corridor's snapshot and its pushes meet exactly.
final class IntelShardUseCaseTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func point(_ lat: Double, _ lon: Double) -> JSON { ["lat": .double(lat), "lon": .double(lon)] }
    private func route(_ from: (Double, Double), _ to: (Double, Double), width: Double) -> JSON {
        ["from": point(from.0, from.1), "to": point(to.0, to.1), "widthMeters": .double(width)]
    }

    private func post(_ c: ProtocolClient, at p: (Double, Double), body: String) async throws -> String {
        let item = try await c.ok("intel.post", ["lat": .double(p.0), "lon": .double(p.1), "kind": "disruption", "body": .string(body)])["item"]
        return try XCTUnwrap(item?["id"]?.string)
    }

    /// Each push as `event item` (a link as `intel.linked item>to`).
    private func events(_ pushes: [JSON]) -> [String] {
        pushes.map { p in
            let data = p["data"]
            let id = data?["item"]?["id"]?.string ?? data?["item"]?.string ?? "?"
            let to = data?["to"]?.string.map { ">" + $0 } ?? ""
            return "\(p["event"]?.string ?? "?") \(id)\(to)"
        }
    }

    func testAnItemOnAShardBorderReachesEveryCorridorContainingItOnce() async throws {
        let shards = IntelShards()
        XCTAssertNotEqual(shards.shard(of: GeoPoint(40.9999, 28.99)), shards.shard(of: GeoPoint(41.0001, 28.99)), "41.0° is a border")
        let (alice, _) = try await server.user("alice")
        var watchers: [ProtocolClient] = []
        // North of the border, south of it, across it: each band holds the border's point.
        for (i, r) in [route((41.0015, 28.98), (41.0015, 29.00), width: 500), route((40.9985, 28.98), (40.9985, 29.00), width: 500),
                       route((40.99, 28.99), (41.01, 28.99), width: 300)].enumerated() {
            let (c, _) = try await server.user("watcher\(i)")
            _ = try await c.ok("route.subscribe", r)
            watchers.append(c)
        }
        let onBorder = try await post(alice, at: (41.0, 28.99), body: "on the border")
        let north = try await post(alice, at: (41.0001, 28.99), body: "just north")
        let south = try await post(alice, at: (40.9999, 28.99), body: "just south")
        for (i, c) in watchers.enumerated() {
            let got = events(try await c.waitForPushes(3))
            XCTAssertEqual(got, ["intel.added \(onBorder)", "intel.added \(north)", "intel.added \(south)"], "corridor \(i): each item once, in order")
        }
    }

    func testALinkBetweenTwoShardsReachesEachCorridorHoldingEitherItemOnce() async throws {
        let (alice, _) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        let a = (41.02, 28.97), b = (40.98, 28.97) // 4.4 km apart, either side of the border
        let (x, _) = try await server.user("xavier"), (y, _) = try await server.user("yusuf"), (z, _) = try await server.user("zeynep")
        _ = try await x.ok("route.subscribe", route((41.019, 28.965), (41.021, 28.975), width: 300))
        _ = try await y.ok("route.subscribe", route((40.979, 28.965), (40.981, 28.975), width: 300))
        _ = try await z.ok("route.subscribe", route((40.975, 28.97), (41.025, 28.97), width: 300))
        let itemA = try await post(alice, at: a, body: "north of the border")
        let itemB = try await post(alice, at: b, body: "south of the border")
        _ = try await bob.ok("intel.link", ["item": .string(itemA), "to": .string(itemB)])
        _ = try await bob.ok("intel.like", ["item": .string(itemA)])
        _ = try await bob.ok("intel.like", ["item": .string(itemB)])
        let link = "intel.linked \(itemA)>\(itemB)"
        let toX = events(try await x.waitForPushes(3)), toY = events(try await y.waitForPushes(3))
        XCTAssertEqual(toX, ["intel.added \(itemA)", link, "intel.updated \(itemA)"])
        XCTAssertEqual(toY, ["intel.added \(itemB)", link, "intel.updated \(itemB)"])
        let both = events(try await z.waitForPushes(5))
        XCTAssertEqual(both.sorted(), ["intel.added \(itemA)", "intel.added \(itemB)", link, "intel.updated \(itemA)", "intel.updated \(itemB)"].sorted(),
                       "the corridor holding both hears of the link once: \(both)")
        // Nothing more: a last item inside all three bands' shared shard would be the 6th push.
        let last = try await post(alice, at: (41.02, 28.97), body: "last")
        let lastToZ = events(try await z.waitForPushes(6)).last, lastToX = events(try await x.waitForPushes(4)).last
        XCTAssertEqual(lastToZ, "intel.added \(last)")
        XCTAssertEqual(lastToX, "intel.added \(last)")
        let linkedA = try await bob.ok("intel.get", ["item": .string(itemA)])
        XCTAssertEqual(linkedA["item"]?["links"], [.string(itemB)])
    }

    /// A link between two shards whose first half was written and whose second was not (its
    /// node died between them), attempted again the other way round: the corridor holding both
    /// items hears of it, once, as does the one holding the item whose half was missing.
    func testALinkCompletedTheOtherWayRoundReachesTheCorridorHoldingBoth() async throws {
        let (alice, _) = try await server.user("alice")
        let itemA = try await post(alice, at: (41.02, 28.97), body: "north of the border")
        let itemB = try await post(alice, at: (40.98, 28.97), body: "south of the border")
        // An attempt `intel.link {item: b, to: a}` wrote a's half, then its node died.
        let dir = server.configuration.dataDir, url = server.configuration.database.url
        server.stop()
        var storage = Store.Configuration(directory: dir)
        storage.postgresURL = url
        let store = try Store(configuration: storage, migrations: SQLMigrations())
        try await store.write { db in try db.execute(sql: "INSERT INTO intel_link (item, other, at) VALUES (?, ?, ?)", arguments: [itemA, itemB, 1.0]) }
        store.close()
        server = try TestServer(dataDir: dir)
        let (bob, _) = try await server.user("bob")
        let (y, _) = try await server.user("yusuf"), (z, _) = try await server.user("zeynep")
        _ = try await y.ok("route.subscribe", route((40.979, 28.965), (40.981, 28.975), width: 300))
        _ = try await z.ok("route.subscribe", route((40.975, 28.97), (41.025, 28.97), width: 300))
        _ = try await bob.ok("intel.link", ["item": .string(itemA), "to": .string(itemB)])
        let again = try await bob.errorCode("intel.link", ["item": .string(itemB), "to": .string(itemA)])
        XCTAssertEqual(again, "conflict", "both halves are made now")
        let last = try await post(bob, at: (40.98, 28.97), body: "last")
        // The push names the item whose half was made now first: b, linked to a.
        let link = "intel.linked \(itemB)>\(itemA)"
        let toZ = events(try await z.waitForPushes(2)), toY = events(try await y.waitForPushes(2))
        XCTAssertEqual(toZ, [link, "intel.added \(last)"], "the corridor holding both hears of it once")
        XCTAssertEqual(toY, [link, "intel.added \(last)"])
    }

    /// Ten posts along the corridor of the test below, one after another; their ids.
    private static func tenItems(_ c: ProtocolClient, _ i: Int) async throws -> [String] {
        var ids: [String] = []
        for n in 0..<10 {
            let item = try await c.ok("intel.post", ["lat": .double(41.012 + Double(n) * 0.0015), "lon": .double(28.962 + Double(n) * 0.0025),
                                                     "kind": "disruption", "body": .string("p\(i) #\(n)")])["item"]
            ids.append(item?["id"]?.string ?? "?")
        }
        return ids
    }

    func testASnapshotAndThePushesAfterItMeetExactlyWhileItemsArrive() async throws {
        let corridor = route((41.01, 28.96), (41.03, 28.99), width: 600)
        let p0 = try await server.user("poster0").0, p1 = try await server.user("poster1").0, p2 = try await server.user("poster2").0
        let (watcher, _) = try await server.user("watcher")
        // Three posters post ten items each along the corridor while the watcher subscribes.
        async let first = Self.tenItems(p0, 0)
        async let second = Self.tenItems(p1, 1)
        async let third = Self.tenItems(p2, 2)
        try await Task.sleep(for: .milliseconds(30))
        let snapshot = try await watcher.ok("route.subscribe", corridor)
        let posted = try await first + second + third
        let sentinel = try await post(p0, at: (41.02, 28.975), body: "the last")
        var pushed: [String] = []
        while pushed.last != sentinel {
            pushed = try await watcher.waitForPushes(pushed.count + 1).compactMap { $0["event"]?.string == "intel.added" ? $0["data"]?["item"]?["id"]?.string : nil }
        }
        pushed.removeLast()
        guard case .array(let listed)? = snapshot["items"] else { return XCTFail("no items in \(snapshot.encoded)") }
        let shown = listed.compactMap { $0["id"]?.string }
        XCTAssertEqual(Set(shown).intersection(pushed), [], "no item both in the snapshot and pushed after it")
        XCTAssertEqual(pushed.count, Set(pushed).count, "no item pushed twice")
        XCTAssertEqual(Set(shown).union(pushed), Set(posted), "every item in the snapshot or pushed after it")
    }

    /// The ops one node asks of another (`cluster.intel.*`) are nobody else's: a client asking for
    /// one, with arguments a node would send, is told the op is unknown, and nothing is posted.
    func testAClientCannotCallTheShardsNodeOps() async throws {
        let (c, _) = try await server.user("sneaky")
        let shard = IntelShards().shard(of: GeoPoint(41.0205, 28.9735))
        let asks: [(String, JSON)] = [
            ("cluster.intel.post", ["shard": .string(shard), "now": 1000,
                                    "drafts": [["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "forged", "tags": [], "modes": [], "source": "metro"]]]),
            ("cluster.intel.linkHalf", ["item": "ix", "to": ["id": "iy"], "side": "item", "by": "sneaky", "now": 1000]),
            ("cluster.intel.apply", ["scope": "city", "now": 1000, "items": [], "ending": ["allOthersBut": []]]),
        ]
        for (op, args) in asks {
            let answer = try await c.call(op, args)
            XCTAssertEqual(answer["error"]?["code"]?.string, "bad_request", op)
            XCTAssertEqual(answer["error"]?["message"]?.string, "unknown op \(op)")
        }
        let found = try await c.ok("intel.query", ["minLat": 41, "minLon": 28.9, "maxLat": 41.1, "maxLon": 29])
        XCTAssertEqual(found["items"]?.items.count, 0, "nothing was posted")
    }

    /// The server stopped and started again on the same data, with `configure`; the client
    /// returned is `name`, logged in again.
    private func restart(_ configure: @escaping (inout HubbubConfiguration) -> Void = { _ in }) throws {
        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir, configure)
    }

    /// The rows the room log holds for `room` (heads and pushes), read once the server stopped.
    private func storedRows(of room: String) async throws -> Int {
        let dir = server.configuration.dataDir, url = server.configuration.database.url
        server.stop()
        var storage = Store.Configuration(directory: dir)
        storage.postgresURL = url
        let store = try Store(configuration: storage, migrations: SQLMigrations())
        defer { store.close() }
        return try await store.read { db in
            var n = 0
            for table in ["room_head", "room_log"] {
                if let row = try db.fetchOne(sql: "SELECT count(*) AS n FROM \(table) WHERE room = ?", arguments: [room]) { n += Int(row["n"] as Int64) }
            }
            return n
        }
    }

    private func login(_ name: String) async throws -> ProtocolClient {
        let c = try await ProtocolClient(url: server.url)
        _ = try await c.ok("account.login", ["login": .string(name), "password": "secret123"])
        return c
    }

    /// A corridor whose band spans two shards (41.0° is a border), a watcher's place in its room
    /// after one item, and then a restart: nothing is live, and two more items (one in each shard)
    /// are written to their shards' logs while the corridor is not. Returns the three items' ids.
    private func missedWhileNotLive() async throws -> (sub: JSON, seq: Int, items: [String]) {
        let across = route((40.995, 28.97), (41.005, 28.97), width: 400)
        let (watcher, _) = try await server.user("watcher")
        let (poster, _) = try await server.user("poster")
        let sub = try await watcher.ok("route.subscribe", across)
        let one = try await post(poster, at: (41.001, 28.97), body: "one")
        let first = try await watcher.waitForPushes(1)
        let seq = try XCTUnwrap(first.first?["seq"]?.int)
        watcher.close()
        try restart()
        let again = try await login("poster")
        let two = try await post(again, at: (41.002, 28.97), body: "two")
        let three = try await post(again, at: (40.998, 28.97), body: "three")
        return (sub, seq, [one, two, three])
    }

    /// A corridor's room is made on each node that watches it, never written: loaded again after a
    /// restart it starts a new epoch, and a watcher resuming with `since` takes a snapshot holding
    /// every item, those posted while nothing was live included; what follows comes once, in order.
    func testACorridorLoadedAfterARestartStartsANewEpochWithEverythingInItsSnapshot() async throws {
        let (sub, seq, items) = try await missedWhileNotLive()
        let back = try await login("watcher")
        let since: JSON = ["room": sub["room"] ?? .null, "since": ["seq": .int(seq), "epoch": sub["epoch"] ?? .null]]
        let resumed = try await back.ok("subscribe", since)
        XCTAssertEqual(resumed["recovered"], .bool(false), resumed.encoded)
        XCTAssertNotEqual(resumed["epoch"], sub["epoch"], "a new load, a new epoch")
        let shown = (resumed["snapshot"]?["items"]?.items ?? []).compactMap { $0["id"]?.string }
        XCTAssertEqual(shown.sorted(), items.sorted(), "every item once, those posted while nothing was live included")
        let poster = try await login("poster")
        let four = try await post(poster, at: (41.003, 28.97), body: "four")
        let next = try await back.waitForPushes(1)
        XCTAssertEqual(next.first?["seq"]?.int, (resumed["seq"]?.int ?? -1) + 1)
        XCTAssertEqual(next.first?["epoch"], resumed["epoch"])
        XCTAssertEqual(events(next), ["intel.added \(four)"])
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(back.pushes.count, 1, "nothing replayed: \(back.pushes)")
        let rows = try await storedRows(of: sub["room"]?.string ?? "?")
        XCTAssertEqual(rows, 0, "a corridor's room is never written")
    }
}
