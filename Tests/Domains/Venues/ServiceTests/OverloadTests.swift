import HubbubTestSupport
import Foundation
import Realtime
import VenueService
import WebSocket
import XCTest

/// Behind a stalled disk, a vote is refused before it changes anything: no push, no vote in
/// memory, the venue keeps serving its subscribers, and votes go through again once the disk moves.
final class OverloadTests: XCTestCase {
    func testAVoteBehindAFullWriteQueueIsRefusedAndChangesNothing() async throws {
        let h = try DomainHarness.venues(maxPendingWrites: 1)
        let owner = h.connection(), watcher = h.connection()
        let venue = try await h.call("venue.register", ["name": "Bar", "address": "1 St", "postcode": "1", "city": "C", "country": "X",
                                                        "lat": 1, "lon": 2], user: "owner", member: owner)["venue"]!["id"]!
        try await h.call("venue.playlist.set", ["venue": venue, "playlistUri": "p", "creator": "dj",
                                                "tracks": [["uri": "t1", "title": "T", "artist": "A"], ["uri": "t2", "title": "T", "artist": "A"]]],
                         user: "owner", member: owner)
        try await h.subscribe(venue.stringValue!, user: "watcher", member: watcher)

        // The writer stalls inside a transaction; one more change fills the queue.
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        h.store.submit({ _ in
            started.signal()
            release.wait()
        }) { _ in }
        started.wait()
        h.store.submit({ _ in }) { _ in }
        XCTAssertFalse(h.store.acceptsWrites)

        do {
            try await h.call("venue.vote", ["venue": venue, "track": "t2"], user: "guest", member: owner)
            XCTFail("the vote must be refused while the queue is full")
        } catch let failure as TestError {
            XCTAssertTrue(failure.description.contains("unavailable"), failure.description)
        }
        let tracks = try await h.call("venue.playlist.get", ["venue": venue], user: "owner", member: owner)["playlist"]?["tracks"]
        guard case .array(let list)? = tracks else { return XCTFail("no tracks") }
        XCTAssertEqual(list.map { $0["votes"] }, [.int(0), .int(0)], "the refused vote is not in memory")
        XCTAssertEqual(try h.pushes(watcher).filter { $0.json["event"]?.stringValue == "track.moved" }.count, 0, "nor pushed")

        release.signal()
        await eventually(timeout: 6, every: .milliseconds(10)) { h.store.acceptsWrites }
        try await h.call("venue.vote", ["venue": venue, "track": "t2"], user: "guest", member: owner)
        XCTAssertEqual(try h.pushes(watcher).filter { $0.json["event"]?.stringValue == "track.moved" }.count, 1,
                       "the same venue, with its subscriber, serves again")
    }
}
