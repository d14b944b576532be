import HubbubClient
import HubbubTestSupport
import Realtime
import XCTest

/// UC5–UC24 end to end over `/ws`, with their error extensions.
final class VenueUseCaseTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func user(_ name: String) async throws -> (ProtocolClient, String) { try await server.user(name) }

    private let bar: JSON = ["name": "Café Åland", "address": "Storgatan 1", "postcode": "22100", "city": "Mariehamn",
                             "country": "FI", "lat": 60.1, "lon": 19.94]

    private func track(_ n: Int, explicit: Bool = false) -> JSON {
        ["uri": .string("spotify:track:\(n)"), "title": .string("Song \(n)"), "artist": "Band", "explicit": .bool(explicit)]
    }

    private func venueWithPlaylist(_ owner: ProtocolClient) async throws -> String {
        let v = try await owner.ok("venue.register", bar)["venue"]?["id"]?.string ?? ""
        _ = try await owner.ok("venue.playlist.set", ["venue": .string(v), "playlistUri": "spotify:playlist:1", "creator": "dj",
                                                      "tracks": [track(1), track(2), track(3)]])
        return v
    }

    func testUC16RegisterUC17EditUC5MapUC6SearchUC18Remove() async throws {
        let (owner, ownerID) = try await user("owner")
        let registered = try await owner.ok("venue.register", bar)
        let id = registered["venue"]?["id"]?.string ?? ""
        XCTAssertEqual(registered["venue"]?["owner"]?.string, ownerID)
        var blank = bar
        if case .object(var pairs) = blank { pairs[0] = ("name", "  "); blank = .object(pairs) }
        let missing = try await owner.call("venue.register", blank)
        XCTAssertTrue(missing["error"]?["message"]?.string?.contains("all fields have to be filled in") ?? false, "UC16 6a")
        let edited = try await owner.ok("venue.update", ["venue": .string(id), "name": "Café Åland Bar"])
        XCTAssertEqual(edited["venue"]?["name"]?.string, "Café Åland Bar")
        let (patron, _) = try await user("patron")
        let found = try await patron.ok("venue.search", ["q": "CAFE ALAND"])
        XCTAssertEqual(found["venues"], [edited["venue"] ?? .null], "UC6: case- and accent-insensitive")
        let byAddress = try await patron.ok("venue.search", ["q": "storgatan"])
        XCTAssertEqual((byAddress["venues"]?.items ?? []).count, 1)
        let inBox = try await patron.ok("venue.nearby", ["minLat": 60, "minLon": 19, "maxLat": 61, "maxLon": 21])
        XCTAssertEqual((inBox["venues"]?.items ?? []).count, 1)
        let outside = try await patron.ok("venue.nearby", ["minLat": 10, "minLon": 10, "maxLat": 11, "maxLon": 11])
        XCTAssertEqual(outside["venues"], [])
        let notOwner = try await patron.errorCode("venue.update", ["venue": .string(id), "name": "Mine"])
        XCTAssertEqual(notOwner, "forbidden")
        let removeByPatron = try await patron.errorCode("venue.remove", ["venue": .string(id)])
        XCTAssertEqual(removeByPatron, "forbidden")
        _ = try await owner.ok("venue.remove", ["venue": .string(id)])
        let gone = try await patron.errorCode("venue.get", ["venue": .string(id)])
        XCTAssertEqual(gone, "not_found")
        let hidden = try await patron.ok("venue.search", ["q": "aland"])
        XCTAssertEqual(hidden["venues"], [], "removed venues are hidden")
    }

    func testUC7CheckInPushesPresenceAndUC13ListsCheckIns() async throws {
        let (owner, _) = try await user("owner")
        let id = try await owner.ok("venue.register", bar)["venue"]?["id"]?.string ?? ""
        let sub = try await owner.ok("subscribe", ["room": .string("venue:\(id)")])
        XCTAssertEqual(sub["snapshot"]?["checkedIn"]?.int, 0)
        let (patron, patronID) = try await user("patron")
        let n = try await patron.ok("venue.checkin", ["venue": .string(id)])
        XCTAssertEqual(n["checkedIn"]?.int, 1)
        let pushes = try await owner.waitForPushes(1)
        XCTAssertEqual(pushes.last?["event"]?.string, "presence.changed")
        XCTAssertEqual(pushes.last?["data"]?["checkedIn"]?.int, 1)
        let list = try await owner.ok("user.checkins", ["user": .string(patronID)])
        XCTAssertEqual((list["checkins"]?.items ?? []).first?["venue"]?.string, id)
    }

    func testUC8VoteUC9RequestUC10VotersAndThreeClientsAgree() async throws {
        let (owner, _) = try await user("owner")
        let v = try await venueWithPlaylist(owner)
        var clients: [(ProtocolClient, String)] = []
        for name in ["ann", "ben", "cat"] { clients.append(try await user(name)) }
        var queues: [VenueQueue] = []
        for (c, _) in clients {
            let sub = try await c.ok("subscribe", ["room": .string("venue:\(v)")])
            queues.append(VenueQueue(playlist: sub["snapshot"]?["playlist"] ?? .null))
        }
        // Concurrent votes from all three.
        let c0 = clients[0].0, c1 = clients[1].0, c2 = clients[2].0
        async let a = c0.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:3"])
        async let b = c1.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:3"])
        async let c = c2.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:2"])
        _ = try await (a, b, c)
        let twice = try await clients[0].0.errorCode("venue.vote", ["venue": .string(v), "track": "spotify:track:3"])
        XCTAssertEqual(twice, "conflict", "one vote per user per track")
        var finals: [JSON] = []
        for (i, (client, _)) in clients.enumerated() {
            let pushes = try await client.waitForPushes(3)
            XCTAssertEqual(Set(pushes.compactMap { $0["event"]?.string }), ["track.moved"], "a vote is one track.moved")
            for p in pushes { queues[i].apply(push: p) }
            finals.append(.array(queues[i].order.map { .string($0) }))
            let seqs = pushes.compactMap { $0["seq"]?.int }
            XCTAssertEqual(seqs, Array((seqs.first ?? 1)...(seqs.first ?? 1) + seqs.count - 1), "no gap, no duplicate")
        }
        XCTAssertEqual(Set(finals.map(\.encoded)).count, 1, "everyone sees the same final order")
        XCTAssertEqual(finals.first, ["spotify:track:3", "spotify:track:2", "spotify:track:1"])
        // UC9: a request carries the requester's vote; 8a: explicit refused when disallowed.
        _ = try await owner.ok("venue.explicit.set", ["venue": .string(v), "allowed": false])
        let explicit = try await clients[0].0.call("venue.request", ["venue": .string(v), "track": track(9, explicit: true)])
        XCTAssertEqual(explicit["error"]?["code"]?.string, "forbidden")
        XCTAssertTrue(explicit["error"]?["message"]?.string?.contains("explicit") ?? false)
        let req = try await clients[0].0.ok("venue.request", ["venue": .string(v), "track": track(7)])
        XCTAssertEqual(req["votes"]?.int, 1)
        let voters = try await clients[1].0.ok("venue.track.voters", ["venue": .string(v), "track": "spotify:track:7"])
        XCTAssertEqual(voters["requester"]?.string, clients[0].1)
        XCTAssertEqual(voters["voters"], [.string(clients[0].1)])
        // UC14/UC15 from the history.
        let votes = try await clients[1].0.ok("user.votes", ["user": .string(clients[0].1)])
        let requests = try await clients[1].0.ok("user.requests", ["user": .string(clients[0].1)])
        XCTAssertEqual((votes["votes"]?.items ?? []).count, 2)
        XCTAssertEqual((requests["requests"]?.items ?? []).first?["title"]?.string,
                       "Song 7")
    }

    func testOwnerOnlyOpsUC20ConflictUC21ResetUC22ClearUC23Remove() async throws {
        let (owner, _) = try await user("owner")
        let v = try await venueWithPlaylist(owner)
        let (patron, _) = try await user("patron")
        for (op, extra) in [("venue.playlist.set", ["playlistUri": JSON("x"), "creator": "me", "tracks": []]),
                            ("venue.playlist.reset", [:]), ("venue.playlist.clearVotes", [:]), ("venue.playlist.remove", [:]),
                            ("venue.explicit.set", ["allowed": true]), ("venue.nowPlaying", ["track": "spotify:track:1"]),
                            ("venue.track.ended", ["track": "spotify:track:1"]), ("venue.remove", [:]),
                            ("venue.update", ["name": "Mine"])] as [(String, [String: JSON])] {
            var args: [(String, JSON)] = [("venue", .string(v))]
            args += extra.map { ($0.key, $0.value) }
            let code = try await patron.errorCode(op, .object(args))
            XCTAssertEqual(code, "forbidden", op)
        }
        let same = try await owner.call("venue.playlist.set", ["venue": .string(v), "playlistUri": "spotify:playlist:1", "creator": "dj",
                                                               "tracks": [track(1)]])
        XCTAssertEqual(same["error"]?["code"]?.string, "conflict", "UC20 8a")
        _ = try await patron.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:3"])
        _ = try await patron.ok("venue.request", ["venue": .string(v), "track": track(5)])
        let cleared = try await owner.ok("venue.playlist.clearVotes", ["venue": .string(v)])
        XCTAssertEqual((cleared["playlist"]?["tracks"]?.items ?? []).allSatisfy { $0["votes"]?.int == 0 }, true)
        let reset = try await owner.ok("venue.playlist.reset", ["venue": .string(v)])
        XCTAssertEqual((reset["playlist"]?["tracks"]?.items ?? []).map { $0["track"]?["uri"]?.string ?? "" },
                       ["spotify:track:1", "spotify:track:2", "spotify:track:3"], "UC21: the original tracks, no request")
        _ = try await owner.ok("venue.nowPlaying", ["venue": .string(v), "track": "spotify:track:2"])
        _ = try await owner.ok("venue.track.ended", ["venue": .string(v), "track": "spotify:track:2"])
        let after = try await patron.ok("venue.playlist.get", ["venue": .string(v)])
        XCTAssertEqual((after["playlist"]?["tracks"]?.items ?? []).count, 2,
                       "a track that ended leaves the queue")
        _ = try await owner.ok("venue.playlist.remove", ["venue": .string(v)])
        let none = try await patron.errorCode("venue.vote", ["venue": .string(v), "track": "spotify:track:1"])
        XCTAssertEqual(none, "not_found")
    }

    func testRecoveryAfterReconnectGivesExactlyTheMissedPushes() async throws {
        let (owner, _) = try await user("owner")
        let v = try await venueWithPlaylist(owner)
        let (patron, _) = try await user("patron")
        let first = try await patron.ok("subscribe", ["room": .string("venue:\(v)")])
        let seq = first["seq"]?.int ?? -1
        let epoch = first["epoch"] ?? .null
        patron.close()
        let (voter, _) = try await user("voter")
        for n in 1...3 { _ = try await voter.ok("venue.vote", ["venue": .string(v), "track": .string("spotify:track:\(n)")]) }
        let back = try await ProtocolClient(url: server.url)
        _ = try await back.ok("account.login", ["login": "patron", "password": "secret123"])
        let resumed = try await back.ok("subscribe", ["room": .string("venue:\(v)"), "since": ["seq": .int(seq), "epoch": epoch]])
        XCTAssertEqual(resumed["recovered"], true)
        let pushes = try await back.waitForPushes(3)
        XCTAssertEqual(pushes.compactMap { $0["seq"]?.int }, [seq + 1, seq + 2, seq + 3])
        let stale = try await back.ok("subscribe", ["room": .string("venue:\(v)"), "since": ["seq": .int(seq), "epoch": "nope"]])
        XCTAssertEqual(stale["recovered"], false)
        XCTAssertNotNil(stale["snapshot"]?["playlist"])
    }

    func testRestartKeepsTheRoomLogSoAClientRecoversWhatItMissed() async throws {
        let (owner, _) = try await user("owner")
        let v = try await venueWithPlaylist(owner)
        let (patron, _) = try await user("patron")
        let before = try await patron.ok("subscribe", ["room": .string("venue:\(v)")])
        _ = try await patron.ok("unsubscribe", ["room": .string("venue:\(v)")])
        _ = try await patron.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:2"])
        _ = try await patron.ok("venue.checkin", ["venue": .string(v)])
        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir)
        let again = try await ProtocolClient(url: server.url)
        _ = try await again.ok("account.login", ["login": "patron", "password": "secret123"])
        // The memory history went with the process; the room log in the store did not.
        let after = try await again.ok("subscribe", ["room": .string("venue:\(v)"), "since": ["seq": before["seq"] ?? 0, "epoch": before["epoch"] ?? ""]])
        XCTAssertEqual(after["recovered"], true, "the log kept what the client missed")
        XCTAssertEqual(after["epoch"], before["epoch"])
        let seq = before["seq"]?.int ?? -1
        let missed = try await again.waitForPushes(2)
        XCTAssertEqual(missed.compactMap { $0["seq"]?.int }, [seq + 1, seq + 2])
        XCTAssertEqual(missed.compactMap { $0["event"]?.string }, ["track.moved", "presence.changed"])
        XCTAssertEqual(missed.last?["data"]?["checkedIn"]?.int, 1)
        let twice = try await again.errorCode("venue.vote", ["venue": .string(v), "track": "spotify:track:2"])
        XCTAssertEqual(twice, "conflict", "the vote came back and still counts once")
        // The next push continues the same sequence.
        _ = try await again.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:3"])
        let next = try await again.waitForPushes(3)
        XCTAssertEqual(next.last?["seq"]?.int, seq + 3)
        XCTAssertEqual(next.last?["epoch"], before["epoch"])
    }

    func testVenueSettingsLimitVotesPerHourAndCoOwnersMayManage() async throws {
        let (owner, _) = try await user("owner")
        let v = try await venueWithPlaylist(owner)
        let (patron, patronID) = try await user("patron")
        let refused = try await patron.errorCode("venue.settings.set", ["venue": .string(v), "votesPerUserPerHour": 2])
        XCTAssertEqual(refused, "forbidden")
        let set = try await owner.ok("venue.settings.set", ["venue": .string(v), "votesPerUserPerHour": 2])
        XCTAssertEqual(set["settings"]?["votesPerUserPerHour"]?.int, 2)
        _ = try await patron.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:1"])
        _ = try await patron.ok("venue.vote", ["venue": .string(v), "track": "spotify:track:2"])
        let third = try await patron.call("venue.vote", ["venue": .string(v), "track": "spotify:track:3"])
        XCTAssertEqual(third["error"]?["code"]?.string, "rate_limited")
        XCTAssertGreaterThan(third["error"]?["retryAfterMs"]?.int ?? 0, 3_500_000 - 60_000, "the window is one hour")
        let notYet = try await patron.errorCode("venue.owner.add", ["venue": .string(v), "user": .string(patronID)])
        XCTAssertEqual(notYet, "forbidden")
        _ = try await owner.ok("venue.owner.add", ["venue": .string(v), "user": .string(patronID)])
        _ = try await patron.ok("venue.playlist.clearVotes", ["venue": .string(v)])
    }

    func testUC17EditIsPushedAndShowsInLaterSnapshots() async throws {
        let (owner, _) = try await user("owner")
        let v = try await venueWithPlaylist(owner)
        _ = try await owner.ok("subscribe", ["room": .string("venue:\(v)")])
        _ = try await owner.ok("venue.update", ["venue": .string(v), "name": "Renamed Bar"])
        let pushes = try await owner.waitForPushes(1)
        XCTAssertEqual(pushes.last?["event"]?.string, "venue.updated")
        XCTAssertEqual(pushes.last?["data"]?["venue"]?["name"]?.string, "Renamed Bar")
        let blank = try await owner.call("venue.update", ["venue": .string(v), "city": " "])
        XCTAssertTrue(blank["error"]?["message"]?.string?.contains("all fields have to be filled in") ?? false, "UC17 8a")
        let (patron, _) = try await user("patron")
        let sub = try await patron.ok("subscribe", ["room": .string("venue:\(v)")])
        XCTAssertEqual(sub["snapshot"]?["venue"]?["name"]?.string, "Renamed Bar", "the live venue sees the edit")
        let missing = try await patron.call("venue.request", ["venue": .string(v), "track": ["title": "x", "artist": "y"]])
        XCTAssertEqual(missing["error"]?["message"]?.string, "missing field track.uri")
    }
}
