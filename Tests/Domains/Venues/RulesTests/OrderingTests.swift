import SeededRandom
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
        XCTAssertMoved(try j.vote(user: "u3", uri: uri("a"), now: T0 + 3))
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

    /// Random votes, unvotes, requests, plays and settings changes; after each, `order` must equal
    /// the documented rule computed here from the public records alone.
    func testRandomEveningMatchesTheReferenceOrdering() throws {
        for fairMode in [false, true] {
            var rng = SplitMix64(seed: fairMode ? 7 : 3)
            var j = try jukebox((0..<30).map { "p\($0)" },
                                settings: VenueSettings(votesPerUserPerHour: 10_000, requestsPerUserPerHour: 10_000,
                                                        fairMode: fairMode, fairModeMaxPendingPerUser: 3))
            var now = T0
            var applied = 0
            for step in 0..<1_200 {
                now += 10
                let user = "u\(rng.next() % 25)"
                let queued = j.order
                switch rng.next() % 10 {
                case 0..<5:
                    if !queued.isEmpty, (try? j.vote(user: user, uri: queued[Int(rng.next() % UInt64(queued.count))], now: now)) != nil {
                        applied += 1
                    }
                case 5..<7: if !queued.isEmpty { _ = try? j.unvote(user: user, uri: queued[Int(rng.next() % UInt64(queued.count))]) }
                case 7: _ = try? j.request(user: user, track: track("r\(rng.next() % 60)"), now: now)
                case 8:
                    if let playing = j.nowPlayingUri, rng.next() % 2 == 0 { _ = try j.trackEnded(uri: playing, now: now) }
                    else if !queued.isEmpty { _ = try j.nowPlaying(uri: queued[Int(rng.next() % UInt64(queued.count))]) }
                default:
                    if rng.next() % 20 == 0 { _ = try j.clearVotes() }
                }
                let expected = referenceOrder(j.records)
                if j.order != expected { return XCTAssertEqual(j.order, expected, "step \(step), fair mode \(fairMode)") }
            }
            XCTAssertGreaterThan(applied, 300, "the evening had votes")
        }
    }

    /// The rule of `Jukebox`'s documentation, from rows: pinned first; votes desc; in fair mode
    /// playlist tracks, then requests by their requester's pending count; then time of entry.
    private func referenceOrder(_ r: JukeboxRecord) -> [String] {
        let pinned = r.playlist?.nowPlaying
        var votes: [String: Int] = [:]
        for v in r.votes { votes[v.uri, default: 0] += 1 }
        var pending: [String: Int] = [:]
        for q in r.queue where q.uri != pinned { if let u = q.requester { pending[u, default: 0] += 1 } }
        let fair = r.settings.fairMode
        func key(_ q: QueueRecord) -> (Int, Int, Int, Int64) {
            (-(votes[q.uri] ?? 0), fair && q.requester != nil ? 1 : 0, fair ? q.requester.map { pending[$0]! } ?? 0 : 0, q.seq)
        }
        let rest = r.queue.filter { $0.uri != pinned }.map { (key($0), $0.uri) }.sorted { $0.0 < $1.0 }.map(\.1)
        return (pinned.map { [$0] } ?? []) + rest
    }
}
