import Foundation
import LoadHarness
import Realtime
import Routes
import Synchronization
import Transport

/// Rush hour for travellers: draws the city's commutes from the scenario's seed, seeds the
/// travellers' accounts through the protocol, then plays the morning: travellers set off
/// (connect, auth, `route.subscribe` on their commute) and arrive (unsubscribe, close) as the
/// crowd curve says, post along and off their corridors, like and comment on what they see; a
/// provider posts bursts over HTTP. At the end, the delivery audit finds what each traveller
/// should have received and did not.
final class RouteRun: @unchecked Sendable {
    let scenario: Scenario
    let settings: Scenario.RouteSettings
    let fleet: ClientFleet
    let plan: CommutePlan
    let ledger = PostLedger()
    let runTag: String
    private(set) var travellers: [Traveller] = []
    private let crowd: Mutex<CrowdState>
    private let postCounter = Atomic<Int>(0)
    private let commentCounter = Atomic<Int>(0)
    private var provider: ProviderPoster?

    init(scenario: Scenario, fleet: ClientFleet) {
        self.scenario = scenario
        settings = scenario.routes!
        self.fleet = fleet
        plan = CommutePlan(scenario.routes!)
        runTag = String(UInt32.random(in: 0..<UInt32.max), radix: 36)
        crowd = Mutex(CrowdState(count: scenario.routes!.travellers))
    }

    // MARK: Seeding

    /// Signs every traveller up (one connection each, closed again): they log in with `auth` when they set off.
    func seed() async throws {
        let timing = ActionTiming()
        travellers = plan.travellerRoutes.enumerated().map { i, r in
            Traveller(client: SimClient(index: i, fleet: fleet, timing: timing), routeIndex: r, route: plan.routes[r], ledger: ledger)
        }
        let signups = await runBounded(count: travellers.count, concurrency: fleet.settings.connectConcurrency, label: "traveller accounts") { i in
            let c = self.travellers[i].client
            do {
                try await c.connect()
                try await c.signup("t\(self.runTag)x\(i)")
                c.loop.execute { _ in c.leave() }
                return nil
            } catch {
                c.loop.execute { _ in c.leave() }
                return "\(error)"
            }
        }
        guard signups.failures.isEmpty else { throw LoadError("seeding traveller accounts failed: \(signups.failures)") }
        for t in travellers { t.client.onClose = { [weak self] c in self?.closed(c) } }
    }

    /// Starts the provider's bursts (when the scenario has one): `host` and `port` are the server's.
    func startProvider(host: String, port: Int, apiKey: String) {
        guard settings.providerBurstItems > 0 else { return }
        let p = ProviderPoster(settings: settings, plan: plan, ledger: ledger, host: host, port: port, apiKey: apiKey,
                               fleet: fleet, runTag: runTag)
        provider = p
        p.start()
    }

    // MARK: The morning

    /// Plays the scenario for its duration; `recorder` collects once a second.
    func play(recorder: RunRecorder) async {
        var planner = CrowdPlanner(capacity: settings.travellers, present: settings.present,
                                   maxArrivalsPerSecond: settings.maxArrivalsPerSecond,
                                   maxDeparturesPerSecond: settings.maxDeparturesPerSecond)
        var posts = RateAccumulator(), likes = RateAccumulator(), comments = RateAccumulator()
        var nextRecord = 1.0
        var lastT = 0.0
        let start = Date()
        while true {
            let t = Date().timeIntervalSince(start)
            if t >= scenario.durationSeconds { break }
            let dt = t - lastT
            lastT = t

            let (present, inFlight) = crowd.withLock { ($0.present.count, $0.arriving) }
            let change = planner.step(at: t, dt: dt, current: present + inFlight)
            if change > 0 { for _ in 0..<change { setOff() } }
            if change < 0 { for _ in 0..<(-change) { arriveOne() } }

            let perSecond = Double(present) / 60
            for _ in 0..<posts.advance(perSecond: perSecond * settings.postsPerTravellerPerMinute, seconds: dt) { post() }
            for _ in 0..<likes.advance(perSecond: perSecond * settings.likesPerTravellerPerMinute, seconds: dt) { like() }
            for _ in 0..<comments.advance(perSecond: perSecond * settings.commentsPerTravellerPerMinute, seconds: dt) { comment() }

            if t >= nextRecord {
                nextRecord += 1
                await recorder.record()
            }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        provider?.stop()
    }

    /// A traveller who is not on its way sets off.
    private func setOff() {
        let i: Int? = crowd.withLock { c in
            guard let i = c.absent.randomElement() else { return nil }
            c.move(i, to: .arriving)
            return i
        }
        guard let i else { return }
        Task { await self.journey(i) }
    }

    /// Connect, auth, route.subscribe on its commute, with think times between steps.
    private func journey(_ i: Int) async {
        let t = travellers[i]
        let c = t.client
        do {
            try await c.connect()
            await settings.thinkTimeMillis.think()
            try await c.auth()
            await settings.thinkTimeMillis.think()
            try await c.join(t.room, op: "route.subscribe", args: t.subscribeArgs) { result in t.joined(result, at: Clock.nanos()) }
            crowd.withLock { $0.move(i, to: .present) }
        } catch {
            let reason = String("\(error)".prefix(60))
            c.loop.execute { _ in
                c.meter.now.errors["arrival: \(reason)", default: 0] += 1
                if c.connection != nil { c.leave() }
            }
            crowd.withLock { $0.move(i, to: .absent) }
        }
    }

    /// A traveller on its way arrives: it stops watching, unsubscribes (the pushes queued for it
    /// before come first) and closes.
    private func arriveOne() {
        guard let i = crowd.withLock({ $0.pickLeaver() }) else { return }
        let t = travellers[i]
        let c = t.client
        c.loop.execute { _ in
            guard c.connection != nil else { return self.closed(c) }
            t.watch.ended(at: Clock.nanos())
            c.send("unsubscribe", ["room": .string(t.room)]) { _ in c.leave() }
        }
    }

    /// A traveller's connection is gone: it arrived, or the server or the network closed it on the
    /// way (then it stops watching there). Failed set-offs are accounted for by `journey`.
    private func closed(_ c: SimClient) {
        travellers[c.index].watch.ended(at: Clock.nanos())
        crowd.withLock { crowd in
            switch crowd.whereabouts[c.index] {
            case .present, .leaving: crowd.move(c.index, to: .absent)
            case .absent, .arriving, .reconnecting: break
            }
        }
    }

    // MARK: Actions

    /// A random traveller on its way, on its loop (nil: nobody is).
    private func anyPresent(_ body: @escaping @Sendable (Traveller) -> Void) {
        guard let i = crowd.withLock({ $0.present.randomElement() }) else { return }
        let t = travellers[i]
        t.client.loop.execute { _ in
            guard t.client.subscribed, t.watch.watching else { return }
            body(t)
        }
    }

    /// Posts an item along its corridor (or, for `offCorridorShare` of posts, off it).
    private func post() {
        anyPresent { t in
            var rng = SystemRandomNumberGenerator()
            let inside = Double.random(in: 0..<1, using: &rng) >= self.settings.offCorridorShare
            let point = self.plan.postPoint(route: t.watch.route, inside: inside, using: &rng)
            let n = self.postCounter.add(1, ordering: .relaxed).newValue
            let disruption = Bool.random(using: &rng)
            // A unique body names the post in its pushes.
            let body = (disruption ? "Delay here" : "Good coffee here") + " #rush \(self.runTag)-\(n)"
            let index = self.ledger.sent(key: nameHash(body), point: point, at: Clock.nanos())
            t.client.sendCounted("intel.post", ["lat": .double(point.lat), "lon": .double(point.lon),
                                                "kind": disruption ? "disruption" : "poi", "body": .string(body),
                                                "modes": [Bool.random(using: &rng) ? "transit" : "walk"]],
                                 acked: { _ in self.ledger.acked(index, at: Clock.nanos()) })
        }
    }

    /// Likes an item it has seen and not liked yet.
    private func like() {
        anyPresent { t in
            guard let item = t.itemToLike() else { return }
            t.liked.insert(item)
            t.client.sendCounted("intel.like", ["item": .string(item)])
        }
    }

    /// Comments on an item it has seen.
    private func comment() {
        anyPresent { t in
            guard let item = t.itemToComment() else { return }
            let n = self.commentCounter.add(1, ordering: .relaxed).newValue
            t.client.sendCounted("intel.comment", ["item": .string(item), "text": .string("Still the case \(n)")])
        }
    }

    // MARK: The end

    /// Every traveller's watch, its open window closed now (after the drain: whatever was
    /// acknowledged has had its time to arrive).
    func closeWatches() async -> [RouteWatch] {
        let now = Clock.nanos()
        var out = Array(repeating: RouteWatch?.none, count: travellers.count)
        for (l, loop) in fleet.loops.enumerated() {
            let mine = stride(from: l, to: travellers.count, by: fleet.loops.count).map { $0 }
            let part: [(Int, RouteWatch)] = await withCheckedContinuation { done in
                loop.execute { _ in
                    done.resume(returning: mine.map { i in
                        self.travellers[i].watch.ended(at: now)
                        return (i, self.travellers[i].watch)
                    })
                }
            }
            for (i, w) in part { out[i] = w }
        }
        return out.compactMap { $0 }
    }

    /// Closes every connection the run opened.
    func closeAll() async {
        for t in travellers {
            let c = t.client
            c.loop.execute { _ in c.onClose = nil; c.leave() }
        }
        try? await Task.sleep(nanoseconds: 300_000_000)
    }

    /// Figures for the report.
    func figures(audit: (expected: Int, undelivered: Int)) -> [String: Double] {
        let posts = ledger.posts
        return ["travellers": Double(settings.travellers), "routes": Double(plan.routes.count),
                "popularRoutes": Double(plan.routes.filter { $0.popularRank != nil }.count),
                "posts": Double(posts.count), "postsAcked": Double(posts.filter { $0.ackedAt != nil }.count),
                "deliveriesExpected": Double(audit.expected)]
    }
}
