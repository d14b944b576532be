import Venues
import XCTest

final class FairModeTests: XCTestCase {
    private let fair = VenueSettings(fairMode: true, fairModeMaxPendingPerUser: 2)

    func testAUserMayHaveAtMostTheCapOfRequestsWaiting() throws {
        var j = try jukebox(["a"], settings: fair)
        _ = try j.request(user: "u1", track: track("x1"), now: T0)
        _ = try j.request(user: "u1", track: track("x2"), now: T0 + 1)
        XCTAssertEqual(j.pendingRequests(of: "u1"), 2)
        let e = jukeboxError(try j.request(user: "u1", track: track("x3"), now: T0 + 2))
        guard case .conflict(let message) = e else { return XCTFail("expected a conflict, got \(String(describing: e))") }
        XCTAssertTrue(message.hasPrefix("fair mode"), message)
        XCTAssertFalse(j.contains(uri("x3")))
        XCTAssertRequested(try j.request(user: "u2", track: track("x3"), now: T0 + 3), track("x3"), by: "u2",
                       "another guest is not affected")
        XCTAssertMoved(try j.request(user: "u1", track: track("a"), now: T0 + 4),
                       "requesting a queued track is a vote, not a pending request")

        // The playing track is no longer waiting; a played one is gone.
        _ = try j.nowPlaying(uri: uri("x1"))
        XCTAssertEqual(j.pendingRequests(of: "u1"), 1)
        XCTAssertRequested(try j.request(user: "u1", track: track("x4"), now: T0 + 5), track("x4"), by: "u1")
        XCTAssertJukeboxError(try j.request(user: "u1", track: track("x5"), now: T0 + 6),
                              .conflict("fair mode: you already have 2 requested tracks waiting; request again once one has played"))
        _ = try j.trackEnded(uri: uri("x2"), now: T0 + 200)
        XCTAssertRequested(try j.request(user: "u1", track: track("x5"), now: T0 + 201), track("x5"), by: "u1")
    }

    func testWithoutFairModeThereIsNoCap() throws {
        var j = try jukebox(["a"])
        for i in 0..<5 { _ = try j.request(user: "u1", track: track("x\(i)"), now: T0 + Double(i)) }
        XCTAssertEqual(j.pendingRequests(of: "u1"), 5)
    }

    /// Equal votes: requests sort by their requester's pending count (fewest first), then entry;
    /// playlist tracks keep their places; votes still come first.
    func testAmongEqualVotesAGuestWithFewerPendingRequestsComesFirst() throws {
        var j = try jukebox(["p1", "p2"], settings: VenueSettings(fairMode: true, fairModeMaxPendingPerUser: 3))
        _ = try j.vote(user: "u9", uri: uri("p1"), now: T0)
        _ = try j.request(user: "u1", track: track("x1"), now: T0 + 1)
        _ = try j.request(user: "u1", track: track("x2"), now: T0 + 2)
        _ = try j.request(user: "u2", track: track("y1"), now: T0 + 3)
        XCTAssertEqual(j.order, uris("p1", "y1", "x1", "x2", "p2"), "u2 has 1 waiting, u1 has 2")

        var unfair = j
        XCTAssertEqual(try unfair.setSettings(VenueSettings(fairMode: false, fairModeMaxPendingPerUser: 3)),
                       .settingsChanged(VenueSettings(fairMode: false, fairModeMaxPendingPerUser: 3), reordered: true))
        XCTAssertEqual(unfair.order, uris("p1", "x1", "x2", "y1", "p2"), "plain time of entry without fair mode")

        // The playing track does not count as pending: u1 then has 1 waiting, like u2.
        var playing = j
        _ = try playing.nowPlaying(uri: uri("x1"))
        XCTAssertEqual(playing.order, uris("x1", "p1", "x2", "y1", "p2"))

        // Votes first: fairness only orders equal votes.
        _ = try j.vote(user: "u3", uri: uri("x2"), now: T0 + 4)
        XCTAssertEqual(j.order, uris("x2", "p1", "y1", "x1", "p2"))
        // u2 now has 2 waiting like u1; u4 has 1.
        _ = try j.request(user: "u2", track: track("y2"), now: T0 + 5)
        _ = try j.request(user: "u4", track: track("z1"), now: T0 + 6)
        XCTAssertEqual(j.order, uris("x2", "p1", "z1", "x1", "y1", "y2", "p2"),
                       "z1 (u4: 1 waiting) first; then u1's and u2's (2 each) by entry")
    }
}
