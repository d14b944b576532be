import HubbubTestSupport
import Realtime
import VenueService
import XCTest

/// A vote costs the same whatever the queue's length: one small push, one small history entry.
final class VoteCostTests: XCTestCase {
    /// Sets up a venue with `tracks` tracks, one subscriber, and 20 votes; returns the votes' push
    /// sizes and the room history's bytes growth.
    func voteCost(tracks: Int) async throws -> (pushBytes: [Int], historyGrowth: Int, events: Set<String>) {
        let h = try DomainHarness.venues()
        let owner = h.connection(), guest = h.connection()
        let venue = try await h.call("venue.register", ["name": "Bar", "address": "1 St", "postcode": "1", "city": "C", "country": "X",
                                                        "lat": 1, "lon": 2], user: "owner", member: owner)["venue"]!["id"]!
        guard case .string(let id) = venue else { throw TestError("no venue id") }
        let list: [JSON] = (0..<tracks).map { ["uri": .string("t\($0)"), "title": "T", "artist": "A"] }
        try await h.call("venue.playlist.set", ["venue": venue, "playlistUri": "p", "creator": "dj", "tracks": .array(list)],
                         user: "owner", member: owner)
        try await h.subscribe(id, user: "guest", member: guest)
        let feed = h.domain.directory.feed
        let before = feed.historySize(of: "venue:\(id)").bytes
        let seen = try h.pushes(guest).count
        for i in 0..<20 {
            try await h.call("venue.vote", ["venue": venue, "track": .string("t\(tracks - 1 - i % 10)")], user: "g\(i)", member: guest)
        }
        let after = feed.historySize(of: "venue:\(id)").bytes
        let pushes = try h.pushes(guest).dropFirst(seen)
        return (pushes.map(\.bytes), after - before, Set(pushes.compactMap { $0.json["event"]?.stringValue }))
    }

    func testVotePushAndHistoryDoNotGrowWithTheQueue() async throws {
        let small = try await voteCost(tracks: 10)
        let large = try await voteCost(tracks: 3000)
        XCTAssertEqual(small.events, ["track.moved"])
        XCTAssertEqual(large.events, ["track.moved"])
        XCTAssertEqual(small.pushBytes.count, 20)
        XCTAssertEqual(large.pushBytes.count, 20)
        // Same shape, ids and counts of a few more digits at most.
        XCTAssertLessThanOrEqual(large.pushBytes.max()!, small.pushBytes.max()! + 8)
        XCTAssertLessThan(large.pushBytes.max()!, 200)
        XCTAssertLessThanOrEqual(large.historyGrowth, small.historyGrowth + 20 * 16)
    }
}

extension JSON {
    var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
}
