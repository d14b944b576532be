import Foundation
import LoadHarness
import Realtime
import Synchronization
import Tonight

/// Event-goers in the early evening: users connect over `connectSeconds` (auth, subscribe to
/// their `user:` room, `prefs.set`, `artist.favorite` for each favourite) while the plan's first
/// feed is ingested, then its affinity feed; once both are in, users follow their events; later the
/// second feed (with moved, rescheduled, cancelled and new events) is ingested. At the end the
/// audit compares what each user received with what the server's rules say they must (see
/// `TonightPlan`): every suggestion, announcement of a new show and change of a followed event
/// exactly once, nothing else.
final class TonightRun: @unchecked Sendable {
    let scenario: Scenario
    let settings: Scenario.TonightSettings
    let fleet: ClientFleet
    let plan: TonightPlan
    let runTag = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
    private(set) var users: [TonightUser] = []
    /// The first feed and the affinity feed are in: users follow their events.
    private let ready = Atomic<Bool>(false)
    /// When the feed ingest under way started (nanos), for feed → push latency.
    let feedStarted = Atomic<UInt64>(0)
    /// The second feed has begun: a user whose favourites and follows were all acknowledged
    /// before it must have heard of the first feed's events too; a later one may or may not.
    let secondFeedBegun = Atomic<Bool>(false)
    private let timings = Mutex<[String: Double]>([:])
    private var host = "127.0.0.1", port = 8080, apiKey = ""

    init(scenario: Scenario, fleet: ClientFleet) {
        self.scenario = scenario
        settings = scenario.tonight!
        self.fleet = fleet
        plan = TonightPlan(scenario.tonight!, now: Date().timeIntervalSince1970)
    }

    /// Signs every user up (one connection each, closed again): they log in with `auth` when they arrive.
    func seed(host: String, port: Int, apiKey: String) async throws {
        (self.host, self.port, self.apiKey) = (host, port, apiKey)
        let timing = ActionTiming()
        users = (0..<settings.users).map { TonightUser(index: $0, client: SimClient(index: $0, fleet: fleet, timing: timing), run: self) }
        let signups = await runBounded(count: users.count, concurrency: fleet.settings.connectConcurrency, label: "event-goer accounts") { i in
            let c = self.users[i].client
            do {
                try await c.connect()
                try await c.signup("g\(self.runTag)x\(i)")
                c.loop.execute { _ in c.leave() }
                return nil
            } catch {
                c.loop.execute { _ in c.leave() }
                return "\(error)"
            }
        }
        guard signups.failures.isEmpty else { throw LoadError("seeding event-goer accounts failed: \(signups.failures)") }
    }

    // MARK: The evening

    func play(recorder: RunRecorder) async {
        let start = Date()
        var arrived = 0, nextRecord = 1.0
        var feeds: Task<Void, Never>?, second: Task<Void, Never>?
        while true {
            let t = Date().timeIntervalSince(start)
            if t >= scenario.durationSeconds { break }
            let due = settings.connectSeconds <= 0 ? users.count : min(users.count, Int(Double(users.count) * t / settings.connectSeconds) + 1)
            while arrived < due {
                let u = users[arrived]
                Task { await u.arrive() }
                arrived += 1
            }
            if feeds == nil, t >= settings.ingestAtSeconds {
                feeds = Task {
                    await self.ingest("first feed", path: "/api/feeds/events", TonightPlan.xml(self.plan.first))
                    await self.ingest("affinity feed", path: "/api/feeds/affinity", self.plan.affinityText(names: self.plan.artistNames))
                    self.ready.store(true, ordering: .sequentiallyConsistent)
                    // Users already here engage each at a moment of their own within engageSeconds.
                    let spread = self.settings.engageSeconds
                    await withTaskGroup(of: Void.self) { group in
                        for u in self.users where u.isSettled {
                            group.addTask {
                                try? await Task.sleep(nanoseconds: UInt64(Double.random(in: 0...spread) * 1e9))
                                await u.engage()
                            }
                        }
                    }
                }
            }
            if second == nil, t >= settings.reingestAtSeconds {
                second = Task {
                    self.secondFeedBegun.store(true, ordering: .sequentiallyConsistent)
                    await self.ingest("second feed", path: "/api/feeds/events", TonightPlan.xml(self.plan.second))
                }
            }
            if t >= nextRecord {
                nextRecord += 1
                await recorder.record()
            }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        await feeds?.value
        await second?.value
    }

    var isReady: Bool { ready.load(ordering: .sequentiallyConsistent) }

    /// Posts a feed (on a thread of its own: the post blocks), timing it.
    private func ingest(_ label: String, path: String, _ body: [UInt8]) async {
        feedStarted.store(Clock.nanos(), ordering: .relaxed)
        let post = HTTPPost(host: host, port: port, timeoutSeconds: 1_800)
        let began = Date()
        let result: String = await withCheckedContinuation { done in
            Thread.detachNewThread {
                do {
                    let r = try post.post(path: path, headers: [("Authorization", "Bearer \(self.apiKey)")], body: body)
                    done.resume(returning: r.status == 200 ? "ok" : "HTTP \(r.status): \(String(decoding: r.body.prefix(300), as: UTF8.self))")
                } catch {
                    done.resume(returning: "\(error)")
                }
            }
        }
        let seconds = Date().timeIntervalSince(began)
        timings.withLock { $0[label] = seconds }
        FileHandle.standardError.write(Data("\n\(label): \(body.count / 1_000_000) MB ingested in \(String(format: "%.2f", seconds)) s: \(result)\n".utf8))
        if result != "ok" { users.first?.client.loop.execute { _ in self.users.first?.client.meter.now.errors["\(label): \(result.prefix(60))", default: 0] += 1 } }
    }

    // MARK: The audit

    struct Audit {
        var expected = 0, undelivered = 0, redelivered = 0, unwanted = 0
        var suggestions = 0, announcements = 0, changes = 0
        /// Users whose favourites or follows were still being acknowledged when the second feed began.
        var lateUsers = 0
    }

    /// Compares what each user received (collected on its loop) with what it must have received.
    func audit() async -> Audit {
        let now = Date().timeIntervalSince1970
        var (one, two) = plan.catalogs()
        let days = 180.0 * 86_400 // tonight.announceDays' default
        func announced(_ id: String, _ g: EventGoer, _ c: EventCatalog) -> Bool {
            guard let p = g.prefs, let e = c.events[id], let start = c.startsAt(id), start >= now, start <= now + days, e.status != .cancelled,
                  !g.excludes(id), e.performers.contains(where: g.artists.contains), let at = c.place(ofVenue: e.venue) else { return false }
            return p.location.kilometres(to: at) <= p.radiusKm
        }
        var a = Audit()
        for u in users {
            let got = await u.collected()
            guard !got.id.isEmpty else { continue }
            let g = plan.goer(u.index, id: got.id, at: now)
            // Engaged before the second feed: the first feed's suggestions came before it changed
            // anything. Engaged later (a slow server): only the second feed's are certain.
            let firstSet = Set(one.tonight(for: g, now: now).map(\.event)), secondSet = Set(two.tonight(for: g, now: now).map(\.event))
            let suggestions = got.engagedBeforeSecondFeed ? firstSet.union(secondSet) : secondSet
            if !got.engagedBeforeSecondFeed { a.lateUsers += 1 }
            // Favourites come after the first feed: only the second feed's new shows are announced.
            let mustAnnounce = Set(plan.added.filter { announced($0, g, two) }).subtracting(suggestions)
            var changes: [String: [EventField]] = [:]
            for f in plan.users[u.index].follows {
                if let c = plan.changed[f] { changes[f] = EventField.changed(from: c.old, to: c.new) }
            }
            let mustChange = got.engagedBeforeSecondFeed ? changes.count : 0
            a.expected += suggestions.count + mustAnnounce.count + mustChange
            a.suggestions += suggestions.count
            a.announcements += mustAnnounce.count
            a.changes += mustChange
            func tally(_ kind: String, must: Set<String>, may: Set<String>) {
                for id in must where (got.counts["\(kind)|\(id)"] ?? 0) == 0 { a.undelivered += 1 }
                for (key, n) in got.counts where key.hasPrefix(kind + "|") {
                    let id = String(key.dropFirst(kind.count + 1))
                    if may.contains(id) { a.redelivered += n - 1 } else { a.unwanted += n }
                }
            }
            tally(TonightPush.suggested.rawValue, must: suggestions, may: firstSet.union(secondSet))
            tally(TonightPush.announced.rawValue, must: mustAnnounce, may: mustAnnounce)
            tally(TonightPush.changed.rawValue, must: got.engagedBeforeSecondFeed ? Set(changes.keys) : [], may: Set(changes.keys))
            // Each change names its fields, and the previous values are the first feed's.
            for (id, fields) in changes where got.engagedBeforeSecondFeed {
                guard let data = got.changes[id], let old = plan.changed[id]?.old else { continue }
                let names = data["changed"].flatMap { if case .array(let l) = $0 { l.compactMap { if case .string(let s) = $0 { s } else { nil } } } else { nil } }
                var right = names == fields.map(\.rawValue)
                if fields.contains(.start) { right = right && data["previous"]?["start"] == .string(old.start.description) }
                if fields.contains(.status) { right = right && data["previous"]?["status"] == .string(old.status.rawValue) }
                if fields.contains(.venue) { right = right && data["previous"]?["venue"]?["id"] == .string(old.venue) }
                if !right { a.unwanted += 1 }
            }
            for key in got.counts.keys where !["tonight.suggested|", "event.announced|", "event.changed|"].contains(where: key.hasPrefix) {
                a.unwanted += got.counts[key]!
            }
        }
        return a
    }

    func closeAll() async {
        for u in users {
            let c = u.client
            c.loop.execute { _ in c.onClose = nil; c.leave() }
        }
        try? await Task.sleep(nanoseconds: 300_000_000)
    }

    func figures(_ a: Audit) -> [String: Double] {
        var out: [String: Double] = ["users": Double(settings.users), "deliveriesExpected": Double(a.expected),
                                     "suggestionsExpected": Double(a.suggestions), "announcementsExpected": Double(a.announcements),
                                     "changesExpected": Double(a.changes), "unwanted": Double(a.unwanted), "usersEngagedLate": Double(a.lateUsers),
                                     "feedEvents": Double(settings.events), "tonightEvents": Double(plan.tonightEvents.count),
                                     "eventsChanged": Double(plan.changed.count), "eventsAnnounced": Double(plan.added.count)]
        for (label, seconds) in timings.withLock({ $0 }) { out["\(label.replacingOccurrences(of: " ", with: "-"))-seconds"] = seconds }
        return out
    }
}

/// One simulated event-goer. Its counts are touched on its client's loop only.
final class TonightUser: @unchecked Sendable {
    let index: Int
    let client: SimClient
    unowned let run: TonightRun
    /// Pushes received, by `event|eventID`.
    private var counts: [String: Int] = [:]
    /// The last `event.changed` data per event.
    private var changes: [String: JSON] = [:]
    /// Favourites sent and not yet answered by a suggestion: artist → when sent (nanos).
    private var pendingFavourites: [String: UInt64] = [:]
    private let settled = Atomic<Bool>(false)
    private let engaged = Atomic<Bool>(false)
    private let engagedEarly = Atomic<Bool>(false)

    init(index: Int, client: SimClient, run: TonightRun) {
        self.index = index
        self.client = client
        self.run = run
    }

    var isSettled: Bool { settled.load(ordering: .sequentiallyConsistent) }
    private var plan: TonightPlan.User { run.plan.users[index] }

    /// Connect, auth, subscribe to its stream, set its place; once the feeds are in (artists can
    /// only be favoured once the catalog knows them), favour its artists and follow its events.
    func arrive() async {
        let c = client
        do {
            try await c.connect()
            try await c.auth()
            c.loop.execute { _ in c.onRawPush = { [unowned self] data, now in self.received(data, at: now) } }
            _ = try await c.subscribe(TonightPush.userRoom(c.userID), withSince: false)
            let p = plan
            guard await c.counted("prefs.set", ["location": ["lat": .double(p.place.lat), "lon": .double(p.place.lon)], "radiusKm": .double(p.radiusKm)]) != nil else { return }
            settled.store(true, ordering: .sequentiallyConsistent)
            if run.isReady {
                try? await Task.sleep(nanoseconds: UInt64(Double.random(in: 0...run.settings.engageSeconds) * 1e9))
                await engage()
            }
        } catch {
            let reason = String("\(error)".prefix(60))
            c.loop.execute { _ in c.meter.now.errors["arrival: \(reason)", default: 0] += 1 }
        }
    }

    /// Favours its artists and follows its events, once.
    func engage() async {
        guard engaged.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
        let c = client
        for artist in plan.favourites {
            c.loop.execute { _ in self.pendingFavourites[artist] = Clock.nanos() }
            _ = await c.counted("artist.favorite", ["artist": .string(artist)])
        }
        for e in plan.follows { _ = await c.counted("event.follow", ["event": .string(e)]) }
        if !run.secondFeedBegun.load(ordering: .sequentiallyConsistent) { engagedEarly.store(true, ordering: .sequentiallyConsistent) }
    }

    /// A push of its room (loop thread).
    private func received(_ data: [UInt8], at now: UInt64) {
        guard let push = try? JSONParser.parse(data), case .string(let event)? = push["event"] else { return }
        let payload = push["data"] ?? .null
        let id: String = if case .string(let s)? = payload["event"]?["id"] { s } else { "?" }
        counts["\(event)|\(id)", default: 0] += 1
        switch TonightPush(rawValue: event) {
        case .suggested?:
            // Timed when it answers a favourite: sent after the last feed began (else the feed may have caused it).
            if case .string(let artist)? = payload["reason"]?["favorite"], let sent = pendingFavourites.removeValue(forKey: artist), now > sent,
               sent > run.feedStarted.load(ordering: .relaxed) {
                client.meter.now.recordLatency(nanos: now - sent)
            }
        case .changed?, .announced?:
            if event == TonightPush.changed.rawValue { changes[id] = payload }
            let started = run.feedStarted.load(ordering: .relaxed)
            if started > 0, now > started { client.meter.now.recordProviderLatency(nanos: now - started) }
        default: break
        }
    }

    struct Collected: Sendable {
        var id: String
        var counts: [String: Int]
        var changes: [String: JSON]
        var engagedBeforeSecondFeed: Bool
    }

    /// What it received, read on its loop.
    func collected() async -> Collected {
        await withCheckedContinuation { done in
            client.loop.execute { _ in
                done.resume(returning: Collected(id: self.isSettled ? self.client.userID : "", counts: self.counts, changes: self.changes,
                                                 engagedBeforeSecondFeed: self.engagedEarly.load(ordering: .sequentiallyConsistent)))
            }
        }
    }
}
