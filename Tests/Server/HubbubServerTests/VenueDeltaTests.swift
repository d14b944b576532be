import HubbubClient
import HubbubTestSupport
import Realtime
import XCTest

/// Delta pushes end to end: a client that applies a venue room's pushes to its snapshot holds
/// exactly the server's queue, after any sequence of votes, unvotes, requests, resets and track
/// ends, across a reconnect with `since`, and the queue survives a restart (stored row by row).
final class VenueDeltaTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func user(_ name: String) async throws -> (ProtocolClient, String) { try await server.user(name) }

    private func track(_ n: Int) -> JSON {
        ["uri": .string("spotify:track:\(n)"), "title": .string("Song \(n)"), "artist": "Band"]
    }

    /// The server's queue, from `venue.playlist.get`.
    private func serverQueue(_ c: ProtocolClient, _ v: String) async throws -> VenueQueue {
        VenueQueue(playlist: try await c.ok("venue.playlist.get", ["venue": .string(v)])["playlist"] ?? .null)
    }

    /// Reads pushes until the one with `seq` has arrived.
    private func pushes(_ c: ProtocolClient, through seq: Int) async throws -> [JSON] {
        var all = c.pushes
        while (all.last?["seq"]?.int ?? 0) < seq {
            all = try await c.waitForPushes(all.count + 1)
        }
        c.clearPushes()
        return all
    }

    func testAClientApplyingPushesHoldsTheServersQueue() async throws {
        let (owner, _) = try await user("owner")
        let v = try await owner.ok("venue.register", ["name": "Bar", "address": "1 Street", "postcode": "1", "city": "C", "country": "X",
                                                       "lat": 1, "lon": 2])["venue"]?["id"]?.string ?? ""
        _ = try await owner.ok("venue.settings.set", ["venue": .string(v), "votesPerUserPerHour": 1000, "requestsPerUserPerHour": 1000])
        _ = try await owner.ok("venue.playlist.set", ["venue": .string(v), "playlistUri": "p", "creator": "dj",
                                                      "tracks": .array((0..<12).map(track))])
        var guests: [ProtocolClient] = []
        for i in 0..<4 { guests.append(try await user("guest\(i)").0) }
        var (watcher, _) = try await user("watcher")
        var sub = try await watcher.ok("subscribe", ["room": .string("venue:\(v)")])
        var mirror = VenueQueue(playlist: sub["snapshot"]?["playlist"] ?? .null)
        var seq = sub["seq"]?.int ?? 0
        let epoch = sub["epoch"] ?? ""
        var rng = SystemRandomNumberGenerator()
        for step in 0..<150 {
            let queue = try await serverQueue(owner, v)
            let uri = queue.order.randomElement(using: &rng)
            let guest = guests.randomElement(using: &rng)!
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<50: if let uri { _ = try await guest.call("venue.vote", ["venue": .string(v), "track": .string(uri)]) }
            case 50..<70: if let uri { _ = try await guest.call("venue.unvote", ["venue": .string(v), "track": .string(uri)]) }
            case 70..<88: _ = try await guest.call("venue.request", ["venue": .string(v), "track": track(Int.random(in: 0..<30, using: &rng))])
            case 88..<95: if let uri { _ = try await owner.call("venue.track.ended", ["venue": .string(v), "track": .string(uri)]) }
            case 95..<97: if let uri { _ = try await owner.call("venue.nowPlaying", ["venue": .string(v), "track": .string(uri)]) }
            case 97..<98: _ = try await owner.call("venue.playlist.clearVotes", ["venue": .string(v)])
            default: _ = try await owner.call("venue.playlist.reset", ["venue": .string(v)])
            }
            if step == 75 {
                // Drop the connection mid-way and come back with `since`: the missed pushes follow.
                watcher.close()
                (watcher, _) = try await user("watcher-again-\(step)")
                _ = try await guests[0].call("venue.vote", ["venue": .string(v), "track": .string(queue.order.last ?? "")])
                sub = try await watcher.ok("subscribe", ["room": .string("venue:\(v)"), "since": ["seq": .int(seq), "epoch": epoch]])
                XCTAssertEqual(sub["recovered"], true)
            }
            // The room's current seq: a subscribe of the owner's (recovered, nothing missed) tells it.
            let now = try await owner.ok("subscribe", ["room": .string("venue:\(v)"), "since": ["seq": .int(seq), "epoch": epoch]])
            let current = now["seq"]?.int ?? 0
            if current > seq {
                for p in try await pushes(watcher, through: current) { mirror.apply(push: p) }
                seq = current
            }
            owner.clearPushes()
            let truth = try await serverQueue(owner, v)
            XCTAssertEqual(mirror.order, truth.order, "step \(step)")
            XCTAssertEqual(mirror.votes, truth.votes, "step \(step)")
            if mirror != truth { return }
        }
        // Stored row by row, the same queue comes back after a restart.
        let before = try await serverQueue(owner, v)
        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir)
        let again = try await ProtocolClient(url: server.url)
        _ = try await again.ok("account.login", ["login": "owner", "password": "secret123"])
        let after = try await serverQueue(again, v)
        XCTAssertEqual(after, before)
    }

    /// Two owners change different settings at once: both changes stay (the settings are read and
    /// written in one step inside the venue, not read by one request and written by another).
    func testConcurrentSettingsChangesAreNotLost() async throws {
        let (owner, _) = try await user("owner")
        let v = try await owner.ok("venue.register", ["name": "Bar", "address": "1 Street", "postcode": "1", "city": "C", "country": "X",
                                                       "lat": 1, "lon": 2])["venue"]?["id"]?.string ?? ""
        let other = try await ProtocolClient(url: server.url)
        _ = try await other.ok("account.login", ["login": "owner", "password": "secret123"])
        for round in 1...30 {
            async let a = owner.ok("venue.settings.set", ["venue": .string(v), "votesPerUserPerHour": .int(100 + round)])
            async let b = other.ok("venue.settings.set", ["venue": .string(v), "noRepeatHours": .int(round % 12)])
            _ = try await (a, b)
            let settings = try await owner.ok("venue.playlist.get", ["venue": .string(v)])["playlist"]?["settings"]
            XCTAssertEqual(settings?["votesPerUserPerHour"]?.int, 100 + round, "round \(round)")
            XCTAssertEqual(settings?["noRepeatHours"]?.int, round % 12, "round \(round)")
        }
    }

    /// A subscribe racing the retirement of an idle venue still ends up in the live room: pushes
    /// after it arrive.
    func testSubscribeRacingRetirementStillGetsPushes() async throws {
        server.stop()
        server = try TestServer { c in
            c.domainSettings.set("venues.retireAfterSeconds", .int(1))
            c.domainSettings.set("venues.sweepSeconds", .int(1))
        }
        let (owner, _) = try await user("owner")
        let v = try await owner.ok("venue.register", ["name": "Bar", "address": "1 Street", "postcode": "1", "city": "C", "country": "X",
                                                       "lat": 1, "lon": 2])["venue"]?["id"]?.string ?? ""
        _ = try await owner.ok("venue.playlist.set", ["venue": .string(v), "playlistUri": "p", "creator": "dj", "tracks": [track(1), track(2)]])
        for round in 0..<6 {
            // Idle long enough to be retired at the next sweep; subscribe around that moment.
            try await Task.sleep(for: .milliseconds(1000 + 150 * round))
            let (watcher, _) = try await user("watch\(round)")
            _ = try await watcher.ok("subscribe", ["room": .string("venue:\(v)")])
            try await Task.sleep(for: .milliseconds(1300)) // a sweep passes; the watcher keeps the venue alive
            let uri = JSON.string("spotify:track:\(round % 2 + 1)")
            _ = try await owner.ok("venue.vote", ["venue": .string(v), "track": uri])
            // The push was queued to the watcher before the vote's reply; a request sent now is answered after it.
            _ = try await watcher.ok("venue.playlist.get", ["venue": .string(v)])
            XCTAssertEqual(watcher.pushes.first?["event"]?.string, "track.moved", "round \(round): the subscriber is in the live room")
            watcher.close()
            _ = try await owner.call("venue.unvote", ["venue": .string(v), "track": uri])
        }
    }
}
