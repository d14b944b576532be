import Foundation
import GRDB
import HubbubTestSupport
import Realtime
import RouteService
import XCTest

/// `route.track` end to end (seed 003 UC1): the next corridor to the destination from near the
/// recorded start follows the recorded path; it is the traveller's alone; it goes with the
/// destination and with the account, and survives a restart.
final class RecordedPathUseCaseTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func point(_ lat: Double, _ lon: Double) -> JSON { ["lat": .double(lat), "lon": .double(lon)] }
    /// Home to work in Amsterdam, 2 km east and 2 km north: the straight route cuts the corner.
    private var commute: JSON { ["from": point(52.3500, 4.8500), "to": point(52.3680, 4.8795), "widthMeters": 200, "label": "work"] }
    /// Where the traveller actually turns: far from the straight line.
    private let corner = (52.3500, 4.8795)

    /// The walk along the corner, as fixes a minute apart ending now.
    private func walk() -> [JSON] {
        let now = Date().timeIntervalSince1970
        var fixes: [(Double, Double)] = (0...20).map { (52.3500, 4.8500 + Double($0) * 0.001475) }
        fixes += (1...20).map { (52.3500 + Double($0) * 0.0009, 4.8795) }
        return fixes.enumerated().map { i, p in ["lat": .double(p.0), "lon": .double(p.1), "at": .double(now - Double(fixes.count - i) * 60)] }
    }

    private func postAtCorner(_ c: ProtocolClient) async throws -> JSON {
        try await c.ok("intel.post", ["lat": .double(corner.0), "lon": .double(corner.1), "kind": "poi", "body": "Coffee at the corner"])["item"] ?? .null
    }

    func testTheNextCorridorFollowsTheRecordedPathAndIsPrivate() async throws {
        let (alice, _) = try await server.user("alice")
        let (bob, _) = try await server.user("bob")
        let straight = try await alice.ok("route.subscribe", commute)
        XCTAssertEqual(straight["corridor"]?["recorded"], false)
        let destinations = try await alice.ok("destinations.list")
        let destination = try XCTUnwrap(destinations["destinations"]?.items.first?["destination"])
        let tracked = try await alice.ok("route.track", ["destination": destination, "points": .array(walk())])
        XCTAssertEqual(tracked["recorded"], 41)

        let along = try await alice.ok("route.subscribe", commute)
        XCTAssertEqual(along["corridor"]?["recorded"], true)
        XCTAssertFalse(along["corridor"]?["via"]?.items.isEmpty ?? true, "the recording's shape is in via")
        XCTAssertNotEqual(along["room"], straight["room"], "a corridor of its own")
        let bobs = try await bob.ok("route.subscribe", commute)
        XCTAssertEqual(bobs["room"], straight["room"], "others get the straight route: the recording is alice's")
        XCTAssertEqual(bobs["corridor"]?["recorded"], false)
        let peek = try await bob.errorCode("subscribe", ["room": along["room"] ?? .null])
        XCTAssertEqual(peek, "not_found", "nobody else may watch (or learn of) alice's recorded corridor")

        // An item at the corner: inside the recorded corridor, outside the straight one.
        alice.clearPushes()
        let item = try await postAtCorner(bob)
        let pushes = try await alice.waitForPushes(1)
        XCTAssertEqual(pushes.first?["room"], along["room"])
        XCTAssertEqual(pushes.first?["data"]?["item"]?["id"], item["id"])
        XCTAssertTrue(pushes.allSatisfy { $0["room"] != straight["room"] }, "the straight corridor does not contain the corner")

        // From elsewhere, or with explicit via, the recording is not used.
        var fromElsewhere = commute
        if case .object(var fields) = fromElsewhere {
            fields.removeAll { $0.0 == "from" }
            fields.append(("from", point(52.3400, 4.8300)))
            fromElsewhere = .object(fields)
        }
        let other = try await alice.ok("route.subscribe", fromElsewhere)
        XCTAssertEqual(other["corridor"]?["recorded"], false)
    }

    func testTrackRefusals() async throws {
        let (alice, _) = try await server.user("alice")
        _ = try await alice.ok("route.subscribe", commute)
        let destinations = try await alice.ok("destinations.list")
        let destination = try XCTUnwrap(destinations["destinations"]?.items.first?["destination"])
        let now = Date().timeIntervalSince1970
        func message(_ args: JSON) async throws -> (String?, String?) {
            let r = try await alice.call("route.track", args)
            return (r["error"]?["code"]?.string, r["error"]?["message"]?.string)
        }
        let unknown = try await message(["destination": "dnope", "points": [["lat": 52.35, "lon": 4.85, "at": .double(now)]]])
        XCTAssertEqual(unknown.0, "not_found")
        let backwards = try await message(["destination": destination, "points": [["lat": 52.35, "lon": 4.85, "at": .double(now)],
                                                                                 ["lat": 52.35, "lon": 4.86, "at": .double(now - 10)]]])
        XCTAssertEqual(backwards.0, "bad_request")
        XCTAssertTrue(backwards.1?.contains("points[1].at") ?? false, backwards.1 ?? "")
        let badPoint = try await message(["destination": destination, "points": [["lat": 95, "lon": 4.85, "at": .double(now)]]])
        XCTAssertTrue(badPoint.1?.contains("points[0]") ?? false, badPoint.1 ?? "")
        let future = try await message(["destination": destination, "points": [["lat": 52.35, "lon": 4.85, "at": .double(now + 3600)]]])
        XCTAssertTrue(future.1?.contains("points[0].at") ?? false, future.1 ?? "")
        let empty = try await message(["destination": destination, "points": []])
        XCTAssertEqual(empty.0, "bad_request")
        let many = (0...500).map { i -> JSON in ["lat": 52.35, "lon": 4.85, "at": .double(now - 600 + Double(i))] }
        let tooMany = try await message(["destination": destination, "points": .array(many)])
        XCTAssertEqual(tooMany.0, "too_large")
    }

    func testTheRecordingGoesWithTheDestinationAndSurvivesARestart() async throws {
        let (alice, _) = try await server.user("alice")
        _ = try await alice.ok("route.subscribe", commute)
        let destinations = try await alice.ok("destinations.list")
        let destination = try XCTUnwrap(destinations["destinations"]?.items.first?["destination"])
        _ = try await alice.ok("route.track", ["destination": destination, "points": .array(walk())])
        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir)
        let again = try await ProtocolClient(url: server.url)
        _ = try await again.ok("account.login", ["login": "alice", "password": "secret123"])
        let along = try await again.ok("route.subscribe", commute)
        XCTAssertEqual(along["corridor"]?["recorded"], true, "the recording survived the restart")
        let room = along["room"] ?? .null

        _ = try await again.ok("destination.forget", ["destination": destination])
        let afterForget = try await again.ok("route.subscribe", commute)
        XCTAssertEqual(afterForget["corridor"]?["recorded"], false, "forgetting the destination forgot its recording")
        let gone = try await again.errorCode("subscribe", ["room": room])
        XCTAssertEqual(gone, "not_found", "and the corridor that followed it")
    }

    func testDeletingTheAccountErasesDestinationsAndRecordings() async throws {
        let (alice, aliceID) = try await server.user("alice")
        _ = try await alice.ok("route.subscribe", commute)
        let destinations = try await alice.ok("destinations.list")
        let destination = try XCTUnwrap(destinations["destinations"]?.items.first?["destination"])
        _ = try await alice.ok("route.track", ["destination": destination, "points": .array(walk())])
        _ = try await alice.ok("route.subscribe", commute)
        let item = try await postAtCorner(alice)
        _ = try await alice.ok("account.delete")
        let dir = server.configuration.dataDir
        server.stop()

        let db = try sideDatabase(dir + "/hubbub.sqlite")
        let left = try await db.read { db in
            try ["destination WHERE user", "recorded_path WHERE user", "corridor WHERE owner", "karma WHERE user"].map { table in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table) = ?", arguments: [aliceID]) ?? -1
            }
        }
        XCTAssertEqual(left, [0, 0, 0, 0], "destinations, recordings, private corridors and karma are gone with the account")
        let kept = try await db.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM intel_item WHERE id = ?", arguments: [item["id"]?.string]) }
        XCTAssertEqual(kept, 1, "the items stay, shown as a deleted user's")
        server = try TestServer(dataDir: dir)
    }
}
