import Foundation
import LoadHarness
import Realtime
import Synchronization
import Transport
import Venues

/// Peak hours at venues: seeds an owner, venues and patron accounts through the protocol, then
/// plays the night: patrons arrive (connect, auth, check in, subscribe) and leave as the crowd
/// curve says, vote and request at their rates, owners play tracks, reconnect storms hit.
final class VenueRun: @unchecked Sendable {
    let scenario: Scenario
    let settings: Scenario.VenueSettings
    let fleet: ClientFleet
    let timing = ActionTiming()
    let runTag: String
    /// Patron i goes to venue i % count.
    private(set) var patrons: [SimClient] = []
    private(set) var owners: [SimClient] = []
    private(set) var venueIDs: [String] = []
    private let crowd: Mutex<CrowdState>
    /// Track uris by hash, for every uri the harness ever put in a playlist or requested.
    let catalog = Mutex<[UInt64: String]>([:])
    let requestCounter = Atomic<Int>(0)
    var connectFailures: [String: Int] = [:]

    init(scenario: Scenario, fleet: ClientFleet) {
        self.scenario = scenario
        settings = scenario.venues!
        self.fleet = fleet
        runTag = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        crowd = Mutex(CrowdState(count: scenario.venues!.count * scenario.venues!.patronsPerVenue))
    }

    var totalPatrons: Int { settings.count * settings.patronsPerVenue }

    // MARK: Seeding

    func seed() async throws {
        let n = settings.count
        // One owner account; each venue's staff device is its own connection (own rate limits).
        let first = SimClient(index: 0, fleet: fleet, timing: timing)
        try await first.connect()
        try await first.signup("own\(runTag)")
        owners = (0..<n).map { SimClient(index: $0, fleet: fleet, timing: timing) }
        let idsBox = Mutex(Array(repeating: "", count: n))
        let token = first.token, userID = first.userID
        let outcome = await runBounded(count: n, concurrency: fleet.settings.connectConcurrency, label: "venues") { v in
            let owner = self.owners[v]
            owner.token = token
            owner.userID = userID
            owner.userHash = nameHash(userID)
            do {
                try await owner.connect()
                try await owner.auth()
                let r = try await owner.ok("venue.register", ["name": .string("Load Bar \(v)"), "address": "1 Load St", "postcode": "1",
                                                               "city": "Loadville", "country": "XX", "lat": 1.0, "lon": 1.0])
                guard case .string(let id)? = r["venue"]?["id"] else { return "venue.register: no id" }
                idsBox.withLock { $0[v] = id }
                _ = try await owner.ok("venue.settings.set", ["venue": .string(id), "votesPerUserPerHour": 10_000,
                                                              "requestsPerUserPerHour": 10_000])
                _ = try await owner.ok("venue.playlist.set", self.playlist(venue: v, id: id, generation: 0))
                try await owner.subscribe(VenuePush.room(id), withSince: false)
                return nil
            } catch {
                return "\(error)"
            }
        }
        first.loop.execute { _ in first.leave() }
        guard outcome.failures.isEmpty else { throw LoadError("seeding venues failed: \(outcome.failures)") }
        venueIDs = idsBox.withLock { $0 }

        patrons = (0..<totalPatrons).map { SimClient(index: $0, fleet: fleet, timing: timing) }
        let signups = await runBounded(count: totalPatrons, concurrency: fleet.settings.connectConcurrency, label: "patron accounts") { i in
            let p = self.patrons[i]
            do {
                try await p.connect()
                try await p.signup("p\(self.runTag)x\(i)")
                p.loop.execute { _ in p.leave() }
                return nil
            } catch {
                p.loop.execute { _ in p.leave() }
                return "\(error)"
            }
        }
        guard signups.failures.isEmpty else { throw LoadError("seeding patron accounts failed: \(signups.failures)") }
        for p in patrons { p.onClose = { [weak self] c in self?.closed(c) } }
    }

    /// Playlist `generation` of venue `v`.
    private func playlist(venue v: Int, id: String, generation: Int) -> JSON {
        let uris = (0..<settings.tracksPerPlaylist).map { "g\(generation)v\(v)t\($0)" }
        catalog.withLock { c in for u in uris { c[nameHash(u)] = u } }
        let tracks = JSON.array(uris.enumerated().map { i, u in
            ["uri": .string(u), "title": .string("Track \(i)"), "artist": "Load", "explicit": false]
        })
        return ["venue": .string(id), "playlistUri": .string("pl\(runTag)-\(v)-\(generation)"), "creator": "load", "tracks": tracks]
    }

    // MARK: The night

    /// Plays the scenario for its duration; `recorder` collects once a second.
    func play(recorder: RunRecorder) async {
        var planner = CrowdPlanner(capacity: totalPatrons, present: settings.present,
                                   maxArrivalsPerSecond: settings.maxArrivalsPerSecond,
                                   maxDeparturesPerSecond: settings.maxDeparturesPerSecond)
        var votes = RateAccumulator(), requests = RateAccumulator()
        var storms = settings.reconnectStorms[...]
        var nextRecord = 1.0
        var lastT = 0.0
        let start = Date()
        var trackClock = Array(repeating: 0.0, count: settings.count)
        var playlistGeneration = 0
        var nextPlaylistChange = settings.playlistChangeSeconds > 0 ? settings.playlistChangeSeconds : .infinity
        for v in 0..<settings.count { trackClock[v] = settings.trackSeconds * Double(v + 1) / Double(settings.count) }

        while true {
            let t = Date().timeIntervalSince(start)
            if t >= scenario.durationSeconds { break }
            let dt = t - lastT
            lastT = t

            // The crowd follows its curve.
            let (present, inFlight) = crowd.withLock { ($0.present.count, $0.arriving) }
            let change = planner.step(at: t, dt: dt, current: present + inFlight)
            if change > 0 { for _ in 0..<change { arrive() } }
            if change < 0 { for _ in 0..<(-change) { departOne() } }

            // Guests act.
            let perSecond = Double(present) / 60
            for _ in 0..<votes.advance(perSecond: perSecond * settings.votesPerPatronPerMinute, seconds: dt) { act(request: false) }
            for _ in 0..<requests.advance(perSecond: perSecond * settings.requestsPerPatronPerMinute, seconds: dt) { act(request: true) }

            // Players: a track ends and the next is pinned.
            if settings.trackSeconds > 0 {
                for v in 0..<settings.count where t >= trackClock[v] {
                    trackClock[v] += settings.trackSeconds
                    playNext(venue: v)
                }
            }
            if t >= nextPlaylistChange {
                nextPlaylistChange += settings.playlistChangeSeconds
                playlistGeneration += 1
                for v in 0..<settings.count { changePlaylist(venue: v, generation: playlistGeneration) }
            }

            // Reconnect storms.
            while let storm = storms.first, t >= storm.atSeconds {
                storms = storms.dropFirst()
                startStorm(storm)
            }

            if t >= nextRecord {
                nextRecord += 1
                await recorder.record()
            }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
    }

    private func arrive() {
        let i: Int? = crowd.withLock { c in
            guard let i = c.absent.randomElement() else { return nil }
            c.move(i, to: .arriving)
            return i
        }
        guard let i else { return }
        Task { await self.arrival(i, reconnect: nil) }
    }

    /// Connect, auth, check in, subscribe, with think times between steps.
    private func arrival(_ i: Int, reconnect storm: Scenario.ReconnectStorm?) async {
        let p = patrons[i]
        let venue = venueIDs[i % settings.count]
        do {
            try await p.connect()
            await settings.thinkTimeMillis.think()
            try await p.auth()
            if storm == nil && settings.checkIn {
                await settings.thinkTimeMillis.think()
                _ = try await p.ok("venue.checkin", ["venue": .string(venue)])
            }
            if storm == nil { await settings.thinkTimeMillis.think() }
            let recovered = try await p.subscribe(VenuePush.room(venue), withSince: storm?.withSince ?? false)
            if let storm, storm.withSince {
                p.loop.execute { _ in
                    if recovered == true { p.meter.now.reconnects.recovered += 1 } else { p.meter.now.reconnects.snapshots += 1 }
                }
            }
            crowd.withLock { $0.move(i, to: .present) }
        } catch {
            let reason = String("\(error)".prefix(60))
            p.loop.execute { _ in
                if storm != nil { p.meter.now.reconnects.failed += 1 }
                p.meter.now.errors["arrival: \(reason)", default: 0] += 1
                if p.connection != nil { p.leave() }
            }
            crowd.withLock { $0.move(i, to: .absent) }
        }
    }

    private func departOne() {
        guard let i = crowd.withLock({ $0.pickLeaver() }) else { return }
        let p = patrons[i]
        p.loop.execute { _ in
            if p.connection == nil { self.closed(p) } else { p.leave() }
        }
    }

    /// A patron's connection is gone: it left, or the server or the network closed it while it
    /// was present (then it is gone for the night). Drops of a storm and failed arrivals are
    /// accounted for by their own flows.
    private func closed(_ p: SimClient) {
        let resume = settings.resumeAfterDropSeconds
        let back: Bool = crowd.withLock { c in
            switch c.whereabouts[p.index] {
            case .present where resume > 0 && !p.closingOnPurpose:
                c.move(p.index, to: .reconnecting)
                return true
            case .present, .leaving: c.move(p.index, to: .absent)
            case .absent, .arriving, .reconnecting: break
            }
            return false
        }
        guard back else { return }
        // The server closed it or went away: back to the next node with `since`, as a client does.
        p.hop += 1
        p.meter.now.reconnects.dropped += 1
        let comeback = Scenario.ReconnectStorm(atSeconds: 0, share: 0, spreadSeconds: resume, withSince: true)
        Task {
            try? await Task.sleep(nanoseconds: UInt64(Double.random(in: 0...resume) * 1e9) + 1_000_000)
            await self.arrival(p.index, reconnect: comeback)
        }
    }

    private func startStorm(_ storm: Scenario.ReconnectStorm) {
        let victims: [Int] = crowd.withLock { c in
            let n = Int((Double(c.present.count) * storm.share).rounded())
            var picked: [Int] = []
            for _ in 0..<n {
                guard let i = c.present.randomElement() else { break }
                c.move(i, to: .reconnecting)
                picked.append(i)
            }
            return picked
        }
        for i in victims {
            let p = patrons[i]
            let delay = storm.spreadSeconds > 0 ? Double.random(in: 0...storm.spreadSeconds) : 0
            p.loop.execute { _ in
                p.meter.now.reconnects.dropped += 1
                p.dropConnection()
            }
            Task {
                try? await Task.sleep(nanoseconds: UInt64(delay * 1e9) + 1_000_000)
                await self.arrival(i, reconnect: storm)
            }
        }
    }

    // MARK: Actions

    /// A random present patron votes (or takes a vote back, or requests a new track).
    private func act(request: Bool) {
        let i: Int? = crowd.withLock { $0.present.randomElement() }
        guard let i else { return }
        let p = patrons[i]
        let venue = venueIDs[i % settings.count]
        let unvoteShare = settings.unvoteShare
        p.loop.execute { _ in
            guard p.subscribed, let queue = p.validator.queue else { return }
            if request {
                let n = self.requestCounter.add(1, ordering: .relaxed).newValue
                let uri = "r\(self.runTag)-\(n)"
                let hash = nameHash(uri)
                self.catalog.withLock { $0[hash] = uri }
                self.sendAction(p, .request, hash, "venue.request",
                                ["venue": .string(venue), "track": ["uri": .string(uri), "title": .string("Request \(n)"),
                                                                    "artist": "Guest", "explicit": false]])
                return
            }
            let votable = queue.filter { $0.track != p.validator.nowPlaying }
            guard !votable.isEmpty else { return }
            let mine = votable.filter { p.voted.contains($0.track) }
            if !mine.isEmpty, Double.random(in: 0..<1) < unvoteShare || mine.count == votable.count {
                let t = mine[Int.random(in: 0..<mine.count)].track
                guard let uri = self.catalog.withLock({ $0[t] }) else { return }
                self.sendAction(p, .unvote, t, "venue.unvote", ["venue": .string(venue), "track": .string(uri)])
                return
            }
            let fresh = votable.filter { !p.voted.contains($0.track) }
            let t = fresh[Int.random(in: 0..<fresh.count)].track
            guard let uri = self.catalog.withLock({ $0[t] }) else { return }
            self.sendAction(p, .vote, t, "venue.vote", ["venue": .string(venue), "track": .string(uri)])
        }
    }

    /// Sends a guest action (loop thread), timing it by its cause; counts the reply.
    private func sendAction(_ p: SimClient, _ action: PushCause.Action, _ track: UInt64, _ op: String, _ args: JSON) {
        if action == .unvote { p.voted.remove(track) } else { p.voted.insert(track) }
        timing.record(PushCause(action: action, by: p.userHash, track: track), at: Clock.nanos(), node: p.node)
        p.sendCounted(op, args, failed: {
            if action != .unvote { p.voted.remove(track) }
        })
    }

    /// The venue's player: the pinned track ends, the top of the queue is pinned next.
    private func playNext(venue v: Int) {
        let owner = owners[v]
        let id = venueIDs[v]
        owner.loop.execute { _ in
            guard owner.subscribed, let queue = owner.validator.queue else { return }
            let pinned = owner.validator.nowPlaying
            if let pinned, let uri = self.catalog.withLock({ $0[pinned] }) {
                owner.sendCounted("venue.track.ended", ["venue": .string(id), "track": .string(uri)])
            }
            guard let next = queue.first(where: { $0.track != pinned }) else {
                self.changePlaylist(venue: v, generation: Int.random(in: 1_000...1_000_000_000))
                return
            }
            if let uri = self.catalog.withLock({ $0[next.track] }) {
                owner.sendCounted("venue.nowPlaying", ["venue": .string(id), "track": .string(uri)])
            }
        }
    }

    private func changePlaylist(venue v: Int, generation: Int) {
        let owner = owners[v]
        let args = playlist(venue: v, id: venueIDs[v], generation: generation)
        owner.loop.execute { _ in owner.sendCounted("venue.playlist.set", args) }
    }

    /// Closes every connection the run opened (after the drain).
    func closeAll() async {
        for p in patrons + owners {
            p.loop.execute { _ in p.onClose = nil; p.leave() }
        }
        try? await Task.sleep(nanoseconds: 300_000_000)
    }
}
