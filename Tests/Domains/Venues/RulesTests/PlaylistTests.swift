import Venues
import XCTest

final class PlaylistTests: XCTestCase {
    func testSetPlaylistEntersTracksInListOrderWithNoVotesAndCollapsesDuplicates() throws {
        var j = Jukebox()
        var second = track("b")
        second.title = "second copy"
        let change = try j.setPlaylist(uri: "p1", creator: "Ana", tracks: [track("a"), track("b"), track("c"), second, track("a")], now: T0)
        XCTAssertEqual(change, .playlistSet)
        XCTAssertEqual(j.order, uris("a", "b", "c"))
        XCTAssertEqual(j.entry(uri("b"))?.track.title, "Song b", "the first copy wins")
        XCTAssertEqual(j.originalTracks, [track("a"), track("b"), track("c")])
        XCTAssertEqual(j.votes.values.reduce(0, +), 0)
        XCTAssertEqual(j.playlist, PlaylistInfo(uri: "p1", creator: "Ana", setAt: T0))
        XCTAssertTrue(j.hasPlaylist)
    }

    func testSettingThePlaylistAlreadySetIsAConflictAndChangesNothing() throws {
        var j = try jukebox(["a", "b"])
        _ = try j.vote(user: "u1", uri: uri("b"), now: T0)
        let before = j
        XCTAssertJukeboxError(try j.setPlaylist(uri: "spotify:playlist:friday", creator: "Someone", tracks: [track("z")], now: T0 + 1),
                              .conflict("this playlist is already set"))
        XCTAssertEqual(j, before)
        XCTAssertEqual(j.order, uris("b", "a"))
    }

    func testADifferentPlaylistReplacesQueueVotesAndNowPlaying() throws {
        var j = try jukebox(["a", "b"])
        _ = try j.vote(user: "u1", uri: uri("b"), now: T0)
        _ = try j.request(user: "u1", track: track("x"), now: T0)
        _ = try j.nowPlaying(uri: uri("a"))
        XCTAssertEqual(try j.setPlaylist(uri: "p2", creator: "Bo", tracks: [track("c"), track("b")], now: T0 + 1), .playlistSet)
        XCTAssertEqual(j.order, uris("c", "b"))
        XCTAssertEqual(j.votes, [uri("c"): 0, uri("b"): 0])
        XCTAssertNil(j.nowPlayingUri)
        XCTAssertNil(j.requester(of: uri("x")))
    }

    func testBadInputNamesTheField() throws {
        var j = Jukebox()
        XCTAssertJukeboxError(try j.setPlaylist(uri: "", creator: "c", tracks: [], now: T0),
                              .badRequest(field: "playlistUri", message: "playlistUri is empty"))
        XCTAssertJukeboxError(try j.setPlaylist(uri: "p", creator: "  ", tracks: [], now: T0),
                              .badRequest(field: "creator", message: "creator is empty"))
        var noUri = track("b")
        noUri.uri = ""
        XCTAssertJukeboxError(try j.setPlaylist(uri: "p", creator: "c", tracks: [track("a"), noUri], now: T0),
                              .badRequest(field: "tracks[1].uri", message: "tracks[1].uri is empty"))
        var noTitle = track("a")
        noTitle.title = " \n"
        XCTAssertJukeboxError(try j.setPlaylist(uri: "p", creator: "c", tracks: [noTitle], now: T0),
                              .badRequest(field: "tracks[0].title", message: "tracks[0].title is empty"))
        XCTAssertFalse(j.hasPlaylist, "a refused playlist is not set")

        _ = try j.setPlaylist(uri: "p", creator: "c", tracks: [], now: T0)
        XCTAssertJukeboxError(try j.request(user: "u1", track: noTitle, now: T0),
                              .badRequest(field: "track.title", message: "track.title is empty"))
        var negative = track("n")
        negative.durationMs = -1
        let e = jukeboxError(try j.request(user: "u1", track: negative, now: T0))
        guard case .badRequest(let field, _) = e else { return XCTFail("\(String(describing: e))") }
        XCTAssertEqual(field, "track.durationMs")
        XCTAssertEqual(e?.code, "bad_request")
        XCTAssertEqual(j.order, [], "an empty playlist is allowed; nothing was added")

        var tooMany = Jukebox(limits: JukeboxLimits(maxPlaylistTracks: 2))
        let e2 = jukeboxError(try tooMany.setPlaylist(uri: "p", creator: "c", tracks: [track("a"), track("b"), track("c")], now: T0))
        guard case .badRequest(let f2, _) = e2 else { return XCTFail("\(String(describing: e2))") }
        XCTAssertEqual(f2, "tracks")
    }

    func testResetRestoresTheOriginalTracksWithNoVotes() throws {
        var j = try jukebox(["a", "b", "c"])
        _ = try j.vote(user: "u1", uri: uri("c"), now: T0)
        _ = try j.request(user: "u2", track: track("x"), now: T0)
        _ = try j.nowPlaying(uri: uri("b"))
        _ = try j.trackEnded(uri: uri("a"), now: T0 + 180)
        XCTAssertEqual(j.order, uris("b", "c", "x"))

        let change = try j.reset()
        XCTAssertEqual(change, .reset)
        XCTAssertEqual(j.order, uris("a", "b", "c"), "the played track is back, the request is gone")
        XCTAssertEqual(j.votes, [uri("a"): 0, uri("b"): 0, uri("c"): 0])
        XCTAssertEqual(j.voters(of: uri("c")), [])
        XCTAssertNil(j.nowPlayingUri)
        XCTAssertFalse(j.contains(uri("x")))
        XCTAssertEqual(j.pendingRequests(of: "u2"), 0)
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("c"), now: T0 + 200), "old votes do not block new ones")
    }

    func testClearVotesKeepsTheQueueAndRequesters() throws {
        var j = try jukebox(["a", "b"])
        _ = try j.vote(user: "u1", uri: uri("b"), now: T0)
        _ = try j.request(user: "u2", track: track("x"), now: T0)
        _ = try j.vote(user: "u3", uri: uri("x"), now: T0)
        XCTAssertEqual(j.order, uris("x", "b", "a"))
        let change = try j.clearVotes()
        XCTAssertEqual(change, .votesCleared)
        XCTAssertEqual(j.order, uris("a", "b", "x"), "by time of entry when nobody has votes")
        XCTAssertEqual(j.votes, [uri("a"): 0, uri("b"): 0, uri("x"): 0])
        XCTAssertEqual(j.requester(of: uri("x")), "u2")
        XCTAssertEqual(j.voters(of: uri("x")), [])
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("b"), now: T0 + 1))
    }

    func testRemovePlaylist() throws {
        var j = try jukebox(["a", "b"])
        _ = try j.vote(user: "u1", uri: uri("b"), now: T0)
        let change = try j.removePlaylist()
        XCTAssertEqual(change, .removed)
        XCTAssertFalse(j.hasPlaylist)
        XCTAssertNil(j.playlist)
        XCTAssertEqual(j.order, [])
        XCTAssertEqual(j.votes, [:])
        XCTAssertEqual(j.originalTracks, [])
        XCTAssertEqual(j.snapshot.tracks, [])
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("a"), now: T0), .notFound("no playlist is set"))
        XCTAssertEqual(try j.setPlaylist(uri: "spotify:playlist:friday", creator: "Ana", tracks: [track("a")], now: T0 + 1),
                       .playlistSet, "a removed playlist may be set again")
    }

    func testWithoutAPlaylistOwnerAndGuestOperationsAreNotFound() {
        var j = Jukebox()
        let none = JukeboxError.notFound("no playlist is set")
        XCTAssertJukeboxError(try j.reset(), none)
        XCTAssertJukeboxError(try j.clearVotes(), none)
        XCTAssertJukeboxError(try j.removePlaylist(), none)
        XCTAssertJukeboxError(try j.nowPlaying(uri: uri("a")), none)
        XCTAssertJukeboxError(try j.trackEnded(uri: uri("a"), now: T0), none)
        XCTAssertJukeboxError(try j.request(user: "u1", track: track("a"), now: T0), none)
        XCTAssertJukeboxError(try j.unvote(user: "u1", uri: uri("a")), none)
        XCTAssertEqual(none.code, "not_found")
        XCTAssertEqual(none.message, "no playlist is set")
    }

    func testTrackEndedLeavesTheQueueWithItsVotes() throws {
        var j = try jukebox(["a", "b", "c"])
        _ = try j.vote(user: "u1", uri: uri("a"), now: T0)
        _ = try j.vote(user: "u2", uri: uri("a"), now: T0)
        _ = try j.vote(user: "u1", uri: uri("c"), now: T0)
        _ = try j.nowPlaying(uri: uri("a"))
        let change = try j.trackEnded(uri: uri("a"), now: T0 + 200)
        XCTAssertEqual(change, .ended(uri("a"), clearedNowPlaying: true))
        XCTAssertNil(j.nowPlayingUri, "nothing pinned after the playing track ended")
        XCTAssertEqual(j.order, uris("c", "b"))
        XCTAssertNil(j.votes[uri("a")])
        XCTAssertEqual(j.voters(of: uri("a")), [])
        XCTAssertFalse(j.contains(uri("a")))
        XCTAssertEqual(j.lastPlayed(uri("a")), T0 + 200)
        XCTAssertJukeboxError(try j.trackEnded(uri: uri("a"), now: T0 + 201), .notFound("track \(uri("a")) is not in the playlist"))

        _ = try j.nowPlaying(uri: uri("b"))
        XCTAssertEqual(try j.trackEnded(uri: uri("c"), now: T0 + 300), .ended(uri("c"), clearedNowPlaying: false))
        XCTAssertEqual(j.nowPlayingUri, uri("b"), "another track ending leaves the pin alone")

        _ = try j.reset()
        XCTAssertEqual(j.votes[uri("a")], 0, "back after a reset, with no votes")
    }
}
