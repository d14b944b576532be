import Venues
import XCTest

final class VotingTests: XCTestCase {
    func testOneVotePerUserPerTrack() throws {
        var j = try jukebox(["a", "b"])
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("a"), now: T0))
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("a"), now: T0 + 1), .conflict("you already voted for this track"))
        XCTAssertEqual(j.votes[uri("a")], 1)
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("b"), now: T0 + 2), "one vote per track, not per venue")
        XCTAssertMoved(try j.vote(user: "u2", uri: uri("a"), now: T0 + 3))
        XCTAssertEqual(j.votes, [uri("a"): 2, uri("b"): 1])
        XCTAssertTrue(j.hasVoted(user: "u1", uri: uri("a")))
        XCTAssertFalse(j.hasVoted(user: "u3", uri: uri("a")))
    }

    func testVotersInVoteOrderAndUnvote() throws {
        var j = try jukebox(["a", "b"])
        for (i, u) in ["u3", "u1", "u2"].enumerated() { _ = try j.vote(user: u, uri: uri("b"), now: T0 + Double(i)) }
        XCTAssertEqual(j.voters(of: uri("b")), ["u3", "u1", "u2"])
        XCTAssertEqual(j.order, uris("b", "a"))
        XCTAssertMoved(try j.unvote(user: "u1", uri: uri("b")))
        XCTAssertEqual(j.voters(of: uri("b")), ["u3", "u2"])
        XCTAssertJukeboxError(try j.unvote(user: "u1", uri: uri("b")), .notFound("you have not voted for this track"))
        _ = try j.unvote(user: "u3", uri: uri("b"))
        _ = try j.unvote(user: "u2", uri: uri("b"))
        XCTAssertEqual(j.order, uris("a", "b"), "back to entry order with no votes")
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("b"), now: T0 + 9), "after unvoting one may vote again")
        XCTAssertEqual(j.voters(of: uri("b")), ["u1"])
        XCTAssertEqual(j.voters(of: uri("nope")), [])
    }

    func testVoteForUnknownTrackOrWithoutPlaylistIsNotFound() throws {
        var empty = Jukebox()
        XCTAssertJukeboxError(try empty.vote(user: "u1", uri: uri("a"), now: T0), .notFound("no playlist is set"))
        var j = try jukebox(["a"])
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("zz"), now: T0), .notFound("track \(uri("zz")) is not in the playlist"))
        XCTAssertJukeboxError(try j.unvote(user: "u1", uri: uri("zz")), .notFound("track \(uri("zz")) is not in the playlist"))
        XCTAssertJukeboxError(try j.vote(user: " ", uri: uri("a"), now: T0), .badRequest(field: "user", message: "user is empty"))
    }

    func testRequestAddsTrackWithRequestersVote() throws {
        var j = try jukebox(["a", "b"])
        let change = try j.request(user: "u1", track: track("x"), now: T0 + 5)
        XCTAssertRequested(change, track("x"), by: "u1")
        guard case .requested(let r) = change else { return XCTFail("not a new track: \(change)") }
        XCTAssertEqual(r.index, 0, "one vote ranks it above the unvoted tracks")
        XCTAssertEqual(r.queued, j.queueRecord(of: uri("x")), "what the store keeps is the jukebox's own row")
        XCTAssertEqual(r.vote, j.voteRecord(user: "u1", uri: uri("x")))
        XCTAssertEqual(r.nextSeq, j.nextCounter)
        XCTAssertEqual(j.order, uris("x", "a", "b"))
        XCTAssertEqual(j.votes[uri("x")], 1)
        XCTAssertEqual(j.voters(of: uri("x")), ["u1"])
        XCTAssertEqual(j.requester(of: uri("x")), "u1")
        XCTAssertNil(j.requester(of: uri("a")), "playlist tracks have no requester")
        XCTAssertEqual(j.entry(uri("x"))?.track, track("x"))
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("x"), now: T0 + 6), .conflict("you already voted for this track"))
    }

    func testRequestingAQueuedTrackCountsAsAVote() throws {
        var j = try jukebox(["a", "b"])
        XCTAssertMoved(try j.request(user: "u1", track: track("b"), now: T0))
        XCTAssertEqual(j.votes[uri("b")], 1)
        XCTAssertNil(j.requester(of: uri("b")), "a vote does not make u1 the requester")
        XCTAssertEqual(j.order, uris("b", "a"))
        XCTAssertEqual(j.snapshot.tracks.count, 2, "the uri appears once")
        XCTAssertJukeboxError(try j.request(user: "u1", track: track("b"), now: T0 + 1), .conflict("you already voted for this track"))
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("b"), now: T0 + 1), .conflict("you already voted for this track"))

        _ = try j.request(user: "u1", track: track("x"), now: T0 + 2)
        XCTAssertMoved(try j.request(user: "u2", track: track("x"), now: T0 + 3))
        XCTAssertEqual(j.voters(of: uri("x")), ["u1", "u2"])
        XCTAssertEqual(j.requester(of: uri("x")), "u1", "the first requester stays")
        XCTAssertJukeboxError(try j.request(user: "u2", track: track("x"), now: T0 + 4), .conflict("you already voted for this track"))
    }

    func testRequestOfQueuedTrackIsCountedAsAVoteNotARequest() throws {
        var j = try jukebox(["a", "b"], settings: VenueSettings(votesPerUserPerHour: 1, requestsPerUserPerHour: 1))
        _ = try j.request(user: "u1", track: track("x"), now: T0)
        XCTAssertMoved(try j.request(user: "u1", track: track("a"), now: T0 + 1), "a vote: the request quota is not used")
        XCTAssertJukeboxError(try j.request(user: "u1", track: track("b"), now: T0 + 2), .rateLimited(retryAfterMs: 3_599_000),
                              "the second vote of the hour")
        XCTAssertJukeboxError(try j.request(user: "u1", track: track("y"), now: T0 + 2), .rateLimited(retryAfterMs: 3_598_000),
                              "the second request of the hour")
    }

    func testExplicitTracksRefusedWhenTheVenueDisallowsThem() throws {
        var j = try jukebox(["a"])
        XCTAssertEqual(j.setExplicitAllowed(false), .settingsChanged(VenueSettings(explicitAllowed: false), reordered: false))
        XCTAssertFalse(j.explicitAllowed)
        let e = jukeboxError(try j.request(user: "u1", track: track("x", explicit: true), now: T0))
        XCTAssertEqual(e, .explicitNotAllowed)
        XCTAssertEqual(e?.code, "forbidden")
        XCTAssertTrue(e?.message.contains("explicit") ?? false)
        XCTAssertFalse(j.contains(uri("x")))
        XCTAssertRequested(try j.request(user: "u1", track: track("y"), now: T0 + 1), track("y"), by: "u1")
        _ = j.setExplicitAllowed(true)
        XCTAssertRequested(try j.request(user: "u2", track: track("x", explicit: true), now: T0 + 2),
                           track("x", explicit: true), by: "u2")
    }

    func testExplicitTrackAlreadyInTheOwnersPlaylistCanStillBeVotedFor() throws {
        var j = Jukebox(settings: VenueSettings(explicitAllowed: false))
        _ = try j.setPlaylist(uri: "p", creator: "c", tracks: [track("e", explicit: true)], now: T0)
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("e"), now: T0))
        XCTAssertMoved(try j.request(user: "u2", track: track("e", explicit: true), now: T0))
        XCTAssertEqual(j.votes[uri("e")], 2)
    }

    /// Ownership is the caller's business: the playlist's creator or an owner is a guest like any
    /// other here (one vote per track, same rate limits), and owner operations take no user.
    func testOwnerFreeRules() throws {
        var j = Jukebox(settings: VenueSettings(votesPerUserPerHour: 1))
        _ = try j.setPlaylist(uri: "p", creator: "owner", tracks: [track("a"), track("b")], now: T0)
        XCTAssertEqual(j.playlist?.creator, "owner")
        _ = try j.vote(user: "owner", uri: uri("a"), now: T0)
        XCTAssertJukeboxError(try j.vote(user: "owner", uri: uri("a"), now: T0 + 1), .conflict("you already voted for this track"))
        XCTAssertJukeboxError(try j.vote(user: "owner", uri: uri("b"), now: T0 + 1), .rateLimited(retryAfterMs: 3_599_000))
        XCTAssertEqual(try j.clearVotes(), .votesCleared)
        XCTAssertEqual(try j.reset(), .reset)
    }
}
