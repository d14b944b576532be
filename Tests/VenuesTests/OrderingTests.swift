import Venues
import XCTest

final class OrderingTests: XCTestCase {
    func testVotesDescendingThenTimeOfEntry() throws {
        var j = try jukebox(["a", "b", "c", "d"])
        XCTAssertEqual(j.order, uris("a", "b", "c", "d"), "tracks enter in list order")
        _ = try j.vote(user: "u1", uri: uri("c"), now: T0 + 1)
        _ = try j.vote(user: "u2", uri: uri("c"), now: T0 + 2)
        _ = try j.vote(user: "u1", uri: uri("d"), now: T0 + 3)
        _ = try j.vote(user: "u3", uri: uri("b"), now: T0 + 4)
        XCTAssertEqual(j.order, uris("c", "b", "d", "a"), "c has 2; b and d have 1 and b entered first")
        XCTAssertEqual(j.votes, [uri("a"): 0, uri("b"): 1, uri("c"): 2, uri("d"): 1])
        XCTAssertEqual(j.entries.map(\.track.uri), j.order)
        XCTAssertEqual(j.entries.map(\.votes), [2, 1, 1, 0])
    }

    func testTiesAreBrokenByEntryNotByWhenTheVoteCame() throws {
        var j = try jukebox(["a", "b", "c"])
        _ = try j.vote(user: "u1", uri: uri("c"), now: T0 + 1)
        _ = try j.vote(user: "u2", uri: uri("a"), now: T0 + 2)
        XCTAssertEqual(j.order, uris("a", "c", "b"))
    }

    func testRequestedTrackRanksAfterTracksThatEnteredEarlierWithEqualVotes() throws {
        var j = try jukebox(["a", "b"])
        _ = try j.vote(user: "u1", uri: uri("a"), now: T0 + 1)
        _ = try j.request(user: "u2", track: track("x"), now: T0 + 2)
        XCTAssertEqual(j.order, uris("a", "x", "b"))
        _ = try j.vote(user: "u3", uri: uri("b"), now: T0 + 3)
        _ = try j.vote(user: "u4", uri: uri("b"), now: T0 + 4)
        XCTAssertEqual(j.order, uris("b", "a", "x"))
    }

    func testNowPlayingIsPinnedFirstWhateverItsVotes() throws {
        var j = try jukebox(["a", "b", "c"])
        _ = try j.vote(user: "u1", uri: uri("c"), now: T0 + 1)
        _ = try j.vote(user: "u2", uri: uri("c"), now: T0 + 2)
        XCTAssertEqual(try j.nowPlaying(uri: uri("a")), .nowPlaying(uri("a")))
        XCTAssertEqual(j.order, uris("a", "c", "b"))
        XCTAssertEqual(j.nowPlayingUri, uri("a"))
        XCTAssertEqual(j.entries.map(\.nowPlaying), [true, false, false])

        // A vote for the playing track is allowed; it stays pinned even when outvoted.
        XCTAssertEqual(try j.vote(user: "u3", uri: uri("a"), now: T0 + 3), .reordered)
        _ = try j.vote(user: "u4", uri: uri("b"), now: T0 + 4)
        _ = try j.vote(user: "u5", uri: uri("b"), now: T0 + 5)
        _ = try j.vote(user: "u6", uri: uri("b"), now: T0 + 6)
        XCTAssertEqual(j.order, uris("a", "b", "c"))
        XCTAssertEqual(j.votes[uri("a")], 1)

        XCTAssertEqual(try j.nowPlaying(uri: nil), .nowPlaying(nil))
        XCTAssertEqual(j.order, uris("b", "c", "a"))
    }

    func testNowPlayingMustBeQueued() throws {
        var j = try jukebox(["a"])
        XCTAssertJukeboxError(try j.nowPlaying(uri: uri("zzz")), .notFound("track \(uri("zzz")) is not in the playlist"))
        XCTAssertNil(j.nowPlayingUri)
    }

    func testSnapshotCarriesOrderVotesVotersAndRequester() throws {
        var j = try jukebox(["a", "b"])
        _ = try j.request(user: "u1", track: track("x"), now: T0 + 1)
        _ = try j.vote(user: "u2", uri: uri("x"), now: T0 + 2)
        _ = try j.nowPlaying(uri: uri("b"))
        let s = j.snapshot
        XCTAssertEqual(s.order, uris("b", "x", "a"))
        XCTAssertEqual(s.votes, [uri("a"): 0, uri("b"): 0, uri("x"): 2])
        XCTAssertEqual(s.nowPlaying, uri("b"))
        XCTAssertEqual(s.playlist?.uri, "spotify:playlist:friday")
        XCTAssertEqual(s.playlist?.creator, "DJ Ana")
        XCTAssertEqual(s.tracks[1], QueueEntry(track: track("x"), votes: 2, voters: ["u1", "u2"], requester: "u1", nowPlaying: false))
    }
}
