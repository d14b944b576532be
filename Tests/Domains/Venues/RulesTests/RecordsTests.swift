import Foundation
import Venues
import XCTest

final class RecordsTests: XCTestCase {
    /// A busy evening: every kind of state a restart must keep.
    private func busyJukebox() throws -> Jukebox {
        let settings = VenueSettings(explicitAllowed: false, votesPerUserPerHour: 3, requestsPerUserPerHour: 2, noRepeatHours: 3,
                                     fairMode: true, fairModeMaxPendingPerUser: 2)
        var j = Jukebox(settings: settings)
        _ = try j.setPlaylist(uri: "spotify:playlist:friday", creator: "DJ Ana",
                              tracks: ["a", "b", "c", "d", "b"].map { track($0) }, now: T0)
        _ = try j.vote(user: "u1", uri: uri("c"), now: T0 + 1)
        _ = try j.vote(user: "u2", uri: uri("c"), now: T0 + 2)
        _ = try j.vote(user: "u3", uri: uri("c"), now: T0 + 3)
        _ = try j.unvote(user: "u2", uri: uri("c"))
        _ = try j.request(user: "u1", track: track("x"), now: T0 + 4)
        _ = try j.request(user: "u1", track: track("y"), now: T0 + 5)
        _ = try j.request(user: "u2", track: track("z"), now: T0 + 6)
        _ = try j.vote(user: "u3", uri: uri("x"), now: T0 + 7)
        _ = try j.vote(user: "u2", uri: uri("x"), now: T0 + 8)
        _ = try j.nowPlaying(uri: uri("a"))
        _ = try j.trackEnded(uri: uri("a"), now: T0 + 180)
        _ = try j.nowPlaying(uri: uri("d"))
        return j
    }

    func testRestoringTheRecordsGivesTheSameJukebox() throws {
        let j = try busyJukebox()
        XCTAssertEqual(j.order, uris("d", "x", "c", "z", "y", "b"))
        let restored = Jukebox(restoring: j.records)
        XCTAssertEqual(restored.order, j.order)
        XCTAssertEqual(restored.votes, j.votes)
        for u in j.order {
            XCTAssertEqual(restored.voters(of: u), j.voters(of: u), u)
            XCTAssertEqual(restored.requester(of: u), j.requester(of: u), u)
        }
        XCTAssertEqual(restored.voters(of: uri("x")), ["u1", "u3", "u2"])
        XCTAssertEqual(restored.settings, j.settings)
        XCTAssertEqual(restored.playlist, j.playlist)
        XCTAssertEqual(restored.originalTracks, j.originalTracks)
        XCTAssertEqual(restored.nowPlayingUri, uri("d"))
        XCTAssertEqual(restored.entries, j.entries)
        XCTAssertEqual(restored.snapshot, j.snapshot)
        XCTAssertEqual(restored.lastPlayed(uri("a")), T0 + 180)
        XCTAssertEqual(restored.records, j.records)
        XCTAssertEqual(restored, j)
    }

    func testARestoredJukeboxBehavesLikeTheOriginal() throws {
        var j = try busyJukebox()
        var r = Jukebox(restoring: j.records)
        // Vote windows: u3 has 2 of 3 votes counted (+3 s, +7 s).
        _ = try j.vote(user: "u3", uri: uri("b"), now: T0 + 10)
        _ = try r.vote(user: "u3", uri: uri("b"), now: T0 + 10)
        XCTAssertJukeboxError(try r.vote(user: "u3", uri: uri("z"), now: T0 + 11), .rateLimited(retryAfterMs: 3_592_000))
        // Fair mode's cap: u1 has x and y waiting.
        XCTAssertJukeboxError(try r.request(user: "u1", track: track("w"), now: T0 + 11),
                              .conflict("fair mode: you already have 2 requested tracks waiting; request again once one has played"))
        // No-repeat memory and explicit refusal.
        XCTAssertEqual(jukeboxError(try r.request(user: "u4", track: track("a"), now: T0 + 200))?.code, "conflict")
        XCTAssertEqual(jukeboxError(try r.request(user: "u4", track: track("e", explicit: true), now: T0 + 13)), .explicitNotAllowed)
        // The entry counter continues: a new request ranks after older ones with equal votes.
        _ = try j.request(user: "u4", track: track("w"), now: T0 + 12)
        _ = try r.request(user: "u4", track: track("w"), now: T0 + 12)
        XCTAssertEqual(r.order, uris("d", "x", "c", "b", "z", "w", "y"), "b (playlist) keeps its place; z and w (1 waiting) before y (2)")
        XCTAssertEqual(r.order, j.order)
        XCTAssertEqual(r, j)
        // Request windows: u1 made 2 of 2 requests (+4 s, +5 s).
        var settings = r.settings
        settings.fairMode = false
        _ = try r.setSettings(settings)
        XCTAssertJukeboxError(try r.request(user: "u1", track: track("v"), now: T0 + 14), .rateLimited(retryAfterMs: 3_590_000))
    }

    func testRecordsAreRowsInCanonicalOrder() throws {
        let rec = try busyJukebox().records
        XCTAssertEqual(rec.playlist?.uri, "spotify:playlist:friday")
        XCTAssertEqual(rec.playlist?.creator, "DJ Ana")
        XCTAssertEqual(rec.playlist?.nowPlaying, uri("d"))
        XCTAssertEqual(rec.originalTracks.map(\.position), [0, 1, 2, 3])
        XCTAssertEqual(rec.originalTracks.map(\.track), ["a", "b", "c", "d"].map { track($0) })
        XCTAssertEqual(rec.queue.map(\.uri), uris("b", "c", "d", "x", "y", "z"), "by time of entry")
        XCTAssertEqual(rec.queue.map(\.seq), rec.queue.map(\.seq).sorted())
        XCTAssertEqual(rec.queue.first { $0.uri == uri("z") }?.requester, "u2")
        XCTAssertEqual(rec.queue.first { $0.uri == uri("z") }?.requestedAt, T0 + 6)
        XCTAssertEqual(rec.votes.map(\.seq), rec.votes.map(\.seq).sorted())
        XCTAssertEqual(rec.votes.filter { $0.uri == uri("c") }.map(\.user), ["u1", "u3"])
        XCTAssertEqual(rec.votes.first { $0.uri == uri("c") }?.at, T0 + 1)
        let maxSeq = (rec.queue.map(\.seq) + rec.votes.map(\.seq)).max()!
        XCTAssertGreaterThan(rec.playlist!.nextSeq, maxSeq)
        XCTAssertEqual(rec.plays, [PlayRecord(uri: uri("a"), endedAt: T0 + 180)])
        XCTAssertEqual(rec.actions.filter { $0.kind == .request }.map(\.user), ["u1", "u1", "u2"])
        XCTAssertEqual(rec.actions.filter { $0.user == "u3" }, [ActionRecord(user: "u3", kind: .vote, at: T0 + 3),
                                                              ActionRecord(user: "u3", kind: .vote, at: T0 + 7)])
        var busy = try busyJukebox()
        XCTAssertEqual(busy.voteRecord(user: "u3", uri: uri("x")), rec.votes.first { $0.uri == uri("x") && $0.user == "u3" })
        XCTAssertEqual(busy.queueRecord(of: uri("x")), rec.queue.first { $0.uri == uri("x") })
        _ = try busy.removePlaylist()
        XCTAssertNil(busy.records.playlist)
        XCTAssertEqual(busy.records.queue, [])
        XCTAssertEqual(busy.records.votes, [])
        XCTAssertEqual(Jukebox(restoring: busy.records), busy)
    }

    func testRestoringRepairsInconsistentRows() {
        var rec = JukeboxRecord(settings: VenueSettings(votesPerUserPerHour: 0, noRepeatHours: -4))
        rec.playlist = PlaylistRecord(uri: "p", creator: "c", setAt: T0, nowPlaying: uri("gone"), nextSeq: 2)
        rec.queue = [QueueRecord(track: track("a"), seq: 5, requester: nil, requestedAt: nil),
                     QueueRecord(track: track("b"), seq: 9, requester: "u1", requestedAt: T0),
                     QueueRecord(track: track("a"), seq: 11, requester: "u2", requestedAt: T0)]
        rec.votes = [VoteRecord(uri: uri("b"), user: "u1", at: T0, seq: 10),
                     VoteRecord(uri: uri("b"), user: "u1", at: T0, seq: 12),
                     VoteRecord(uri: uri("nope"), user: "u2", at: T0, seq: 13)]
        let j = Jukebox(restoring: rec)
        XCTAssertEqual(j.order, uris("b", "a"))
        XCTAssertNil(j.requester(of: uri("a")), "the first row for a uri wins")
        XCTAssertEqual(j.voters(of: uri("b")), ["u1"])
        XCTAssertNil(j.nowPlayingUri)
        XCTAssertEqual(j.settings.votesPerUserPerHour, 1)
        XCTAssertEqual(j.settings.noRepeatHours, 0)
        XCTAssertGreaterThan(j.records.playlist!.nextSeq, 10)
    }

    func testSnapshotAndSettingsAreCodable() throws {
        let j = try busyJukebox()
        let data = try JSONEncoder().encode(j.snapshot)
        XCTAssertEqual(try JSONDecoder().decode(JukeboxSnapshot.self, from: data), j.snapshot)
        let recData = try JSONEncoder().encode(j.records)
        XCTAssertEqual(Jukebox(restoring: try JSONDecoder().decode(JukeboxRecord.self, from: recData)), j)

        let partial = try JSONDecoder().decode(VenueSettings.self, from: Data(#"{"fairMode": true, "noRepeatHours": 4}"#.utf8))
        XCTAssertEqual(partial, VenueSettings(noRepeatHours: 4, fairMode: true), "missing keys take their defaults")
        XCTAssertEqual(VenueSettings(), VenueSettings(explicitAllowed: true, votesPerUserPerHour: 60, requestsPerUserPerHour: 10,
                                                      noRepeatHours: 0, fairMode: false, fairModeMaxPendingPerUser: 2))
        let t = try JSONDecoder().decode(Track.self, from: Data(#"{"uri":"u","title":"T","artist":"A","explicit":true}"#.utf8))
        XCTAssertEqual(t, Track(uri: "u", title: "T", artist: "A", explicit: true))
    }
}
