import DomainSeam
import Foundation
import HubbubServer
import HubbubTestSupport
import Realtime
import TonightService
import XCTest

/// Event-goers on three nodes: the catalog, the goers and the clock are one node's (the `user:*`
/// lease's holder); `user:` and `event:` rooms reach watchers on every node from the log.
extension ClusterTests {
    private static let madrid: JSON = ["lat": 40.4168, "lon": -3.7038]
    private static let tonight = [("E1", "A1", "MAD", "2026-11-22", "21:00", "onsale", "25.00"),
                                  ("E2", "A2", "MAD", "2026-11-22", "22:00", "onsale", "20.00")]

    /// The `n`th push on `c` (counting from 1), waiting at most 10 s.
    private func push(_ c: ProtocolClient, _ n: Int) async throws -> JSON { try await c.push(n) }

    private func ingest(_ events: [(String, String, String, String, String, String, String)], on node: Int) throws {
        let r = try nodes[node].api("POST", "/api/feeds/events", body: TonightFeed.xml(events))
        XCTAssertEqual(r.status, 200, "node \(node): \(r.json?.encoded ?? "")")
    }

    /// A suggestion reaches the user's connections on two nodes once; a feed posted to another
    /// node changes a followed event: its followers and its room hear it on every node; a live
    /// update posted anywhere reaches the room; the reminder comes once.
    func testTonightAcrossNodes() async throws {
        for n in nodes { n.stop() }
        let clock = FakeClock(TonightFeed.start)
        nodes = try await startNodes(clock: clock.clock) {
            $0.domainSettings[TonightDomain.tickSeconds] = 1
        }
        try ingest(Self.tonight, on: 1)
        let (ana, id) = try await nodes[0].user("ana")
        _ = try await ana.ok("prefs.set", ["location": Self.madrid, "radiusKm": 10])
        let onB = try await login("ana", on: 1), onC = try await login("ana", on: 2)
        let subB = try await onB.ok("subscribe", ["room": .string("user:\(id)")])
        let subC = try await onC.ok("subscribe", ["room": .string("user:\(id)")])
        XCTAssertEqual(subB["epoch"], subC["epoch"], "one stream")
        let start = try XCTUnwrap(subB["seq"]?.int)

        _ = try await ana.ok("artist.favorite", ["artist": "A1"])
        for c in [onB, onC] {
            let p = try await push(c, 1)
            XCTAssertEqual(p["event"]?.string, "tonight.suggested")
            XCTAssertEqual(p["data"]?["event"]?["id"]?.string, "E1")
            XCTAssertEqual(p["seq"]?.int, start + 1)
        }
        // The same favourite again, through another node: nothing is suggested twice.
        _ = try await onC.ok("artist.unfavorite", ["artist": "A1"])
        _ = try await onB.ok("artist.favorite", ["artist": "A1"])

        _ = try await onB.ok("event.follow", ["event": "E1"])
        let (bo, _) = try await nodes[2].user("bob")
        let room = try await bo.ok("subscribe", ["room": "event:E1"])
        XCTAssertEqual(room["snapshot"]?["event"]?["id"]?.string, "E1")
        // Moved half an hour later, by a feed posted to node 0.
        try ingest(Self.tonight.map { $0.0 == "E1" ? ("E1", "A1", "MAD", "2026-11-22", "21:30", "onsale", "25.00") : $0 }, on: 0)
        for c in [onB, onC] {
            let p = try await push(c, 2)
            XCTAssertEqual(p["event"]?.string, "event.changed", "the suggestion was not made again: \(c.pushes.map(\.encoded))")
            XCTAssertEqual(p["data"]?["changed"], ["start"])
            XCTAssertEqual(p["seq"]?.int, start + 2)
        }
        let inRoom = try await push(bo, 1)
        XCTAssertEqual(inRoom["event"]?.string, "event.changed", "the event's room hears it on another node")
        let live = try nodes[1].api("POST", "/api/events/E1/live", body: Array(#"{"status": "doors open"}"#.utf8))
        XCTAssertEqual(live.status, 200, live.json?.encoded ?? "")
        let update = try await push(bo, 2)
        XCTAssertEqual(update["event"]?.string, "event.live")
        XCTAssertEqual(update["data"]?["status"]?.string, "doors open")

        // An hour before the new start (20:30 UTC): one reminder, on every connection, once.
        clock.now = TonightFeed.start + 2.6 * 3_600
        for c in [onB, onC] {
            let p = try await push(c, 3)
            XCTAssertEqual(p["event"]?.string, "event.reminder")
            XCTAssertEqual(p["seq"]?.int, start + 3)
        }
        try await Task.sleep(for: .seconds(2))
        for c in [onB, onC] {
            _ = try await c.ok("prefs.get")
            XCTAssertEqual(c.pushes.count, 3, "one reminder, once: \(c.pushes.map(\.encoded))")
        }
    }
}
