import DomainSeam
import Foundation
import Logging
import Realtime
import RoomLog
import Storage
import Synchronization
import Tonight

/// Every event-goer: their actors (one per user, made on first use) and the `AudienceIndex` that
/// finds whom a feed's change concerns. Also what happens to users as time passes (events entering
/// tonight's window, reminders falling due) and when feeds change events.
public final class EventGoers: Sendable {
    public struct Configuration: Sendable {
        /// A followed event's reminder comes this long before its start.
        public var reminderSeconds = 3_600.0
        /// `event.announced` covers new events up to this far ahead.
        public var announceSeconds = 180 * 86_400.0
        /// The durable `user:` history: most pushes kept and their age (bytes: a generous bound).
        public var history = Room.HistoryLimits(count: 200, maxAgeSeconds: 7 * 86_400, maxBytes: 1 << 20)
        /// A user's actor lets go of its stream's head and cache this long after nothing happened.
        public var idleSeconds = 600.0
        public init() {}
    }

    struct State {
        var actors: [String: EventGoerActor] = [:]
        var audience = AudienceIndex()
        /// The events in tonight's window at the last tick (for finding the ones that enter it).
        var window: Set<String> = []
    }

    let catalog: Catalog
    let store: Store
    /// Where the `user:` rooms' pushes are delivered (to their members on every node).
    let feed: RoomFeed
    let clock: WallClock
    let configuration: Configuration
    let logger: Logger
    private let state: Mutex<State>

    /// Empty: `reload` reads everyone's state (before first use, on the node holding tonight's lease).
    init(catalog: Catalog, store: Store, feed: RoomFeed, clock: WallClock, configuration: Configuration, logger: Logger) {
        self.catalog = catalog
        self.store = store
        self.feed = feed
        self.clock = clock
        self.configuration = configuration
        self.logger = logger
        state = Mutex(State())
    }

    /// The actor of `user` (made on first use, holding their indexed state).
    func actor(for user: String) -> EventGoerActor {
        state.withLock { s in
            if let a = s.actors[user] { return a }
            let a = EventGoerActor(goer: s.audience[user] ?? EventGoer(user: user), goers: self)
            s.actors[user] = a
            return a
        }
    }

    /// `user`'s state as last committed (a fresh one if they never set anything).
    func goer(_ user: String) -> EventGoer { state.withLock { $0.audience[user] } ?? EventGoer(user: user) }

    /// Takes a user's committed state into the audience index.
    func index(_ goer: EventGoer) { state.withLock { $0.audience.update(goer) } }

    /// Every user's state as the store has it now (this node just took the lease: another node
    /// changed it meanwhile); their actors are made again when needed.
    func reload() async throws {
        var fresh = State()
        for g in try await store.read({ db in try GoerRows.all(db) }) { fresh.audience.update(g) }
        state.withLock { $0 = fresh }
    }

    /// An account deleted: its state leaves memory (the rows go in the deletion's transaction).
    func forget(_ user: String) {
        state.withLock { s in
            s.audience.remove(user)
            s.actors[user] = nil
        }
    }

    var userCount: Int { state.withLock { $0.audience.goers.count } }

    /// When a reminder of `event` is due, if it is still ahead.
    func reminderDue(of event: String, now: Double) -> Double? {
        guard let start = catalog.startsAt(event) else { return nil }
        let due = start - configuration.reminderSeconds
        return start > now ? max(due, now) : nil
    }

    /// The `user:` room's snapshot: preferences, favourites, plans and tonight's suggestions.
    func snapshot(of goer: EventGoer, now: Double) -> JSON {
        catalog.with { c in
            ["prefs": GoerJSON.prefs(goer), "plans": GoerJSON.plans(goer, c),
             "tonight": .array(c.tonight(for: goer, now: now).compactMap { TonightJSON.suggestion($0, c) })]
        }
    }

    /// `event` as an announcement to `goer` (seed 004's "a band I like announces a show near me"):
    /// by a favourite artist, within the radius, not cancelled or over, starting within
    /// `announceSeconds`.
    func announcement(of event: String, for goer: EventGoer, now: Double, _ c: EventCatalog) -> Suggestion? {
        guard let prefs = goer.prefs, let e = c.events[event], let start = c.startsAt(event), start >= now,
              start <= now + configuration.announceSeconds, e.status != .cancelled, !goer.excludes(event),
              let artist = e.performers.first(where: goer.artists.contains), let at = c.place(ofVenue: e.venue),
              prefs.location.kilometres(to: at) <= prefs.radiusKm else { return nil }
        return Suggestion(event: event, reason: .favorite(artist: artist), startsAt: start)
    }

    /// Who may want `event`: fans of its performers or of the artists they are recommended for,
    /// and of its categories, whose radius reaches its venue.
    private func audience(of event: String) -> Set<String> {
        let (artists, categories, place) = catalog.with { c -> ([String], Set<String>, Place?) in
            guard let e = c.events[event] else { return ([], [], nil) }
            var artists = e.performers
            for p in e.performers { artists += c.recommending(p).keys }
            return (artists, c.categoryLineage(e), c.place(ofVenue: e.venue))
        }
        guard let place else { return [] }
        return state.withLock { $0.audience.audience(artists: artists, categories: categories, at: place) }
    }

    // MARK: Feeds and time

    /// A feed's events are durable: followers of changed ones hear what changed (and the event's
    /// room), and the users they may concern are looked up and brought up to date (suggestions,
    /// announcements of new events). Returns once those pushes are durable.
    func eventsApplied(_ updates: [(old: FeedEvent?, new: FeedEvent)], rooms: EventRooms) async {
        guard !updates.isEmpty else { return }
        var refresh: [String: [String]] = [:] // user → new events to announce
        var roomChanges: [(event: String, data: JSON)] = [] // told after the loop, all at once
        let anyone = userCount > 0
        for (old, new) in updates {
            if let old {
                let fields = EventField.changed(from: old, to: new)
                if !fields.isEmpty {
                    let data = catalog.with { c in
                        JSON.object([("event", TonightJSON.event(new, c)), ("changed", .array(fields.map { .string($0.rawValue) })),
                                     ("previous", TonightJSON.previous(old, fields, c))])
                    }
                    let newStart = fields.contains(.start) ? catalog.startsAt(new.id) : nil
                    roomChanges.append((new.id, data))
                    let followers = state.withLock { $0.audience.followers(of: new.id) }
                    await forEach(followers) { a in await a.changed(new.id, data: data, newStart: newStart) }
                }
            }
            for user in anyone ? audience(of: new.id) : [] {
                if old == nil { refresh[user, default: []].append(new.id) } else if refresh[user] == nil { refresh[user] = [] }
            }
        }
        await rooms.changed(roomChanges)
        let news = refresh
        await forEach(news.keys) { a in await a.refresh(announced: news[a.user] ?? []) }
    }

    /// `eventsApplied`, then the feed's notes of these events are deleted (the pushes are durable).
    func tell(_ changes: FeedChanges, rooms: EventRooms) async {
        await eventsApplied(changes.events, rooms: rooms)
        guard !changes.notes.isEmpty else { return }
        let notes = changes.notes
        do { try await store.write { db in try CatalogRows.told(notes, db) } } catch {
            logger.error("could not clear the feed's notes; their users may be told again at start-up", metadata: ["error": "\(error)"])
        }
    }

    /// At start-up: what a feed changed before the server stopped and nobody was told of yet.
    func tellPending(rooms: EventRooms) async {
        let catalog = self.catalog
        do {
            let pending = try await store.read { db in try CatalogRows.pendingChanges(db, current: { catalog.event($0) }) }
            if !pending.notes.isEmpty {
                logger.notice("telling users of feed changes made before the restart", metadata: ["events": "\(pending.changes.count)"])
            }
            await tell(FeedChanges(events: pending.changes, notes: pending.notes), rooms: rooms)
        } catch {
            logger.error("could not read the feed's pending notes", metadata: ["error": "\(error)"])
        }
    }

    /// The affinity feed replaced these artists' recommendations: their fans are brought up to date.
    func recommendationsChanged(_ artists: [String]) async {
        let fans = state.withLock { $0.audience.fans(of: artists) }
        await forEach(fans) { a in await a.refresh() }
    }

    /// Runs `work` on the actors of `users`, all at once (their writes share group commits).
    private func forEach(_ users: some Sequence<String>, _ work: @escaping @Sendable (EventGoerActor) async -> Void) async {
        let actors = users.map { actor(for: $0) }
        await withTaskGroup(of: Void.self) { group in
            for a in actors { group.addTask { await work(a) } }
        }
    }

    /// Time moved: events that entered tonight's window reach the users they concern, and the
    /// reminders that fell due are sent (at start-up, those that fell due while the server was down).
    func tick() async {
        let now = clock.now
        let window = catalog.with { c -> Set<String> in
            var out = Set<String>()
            for (e, start) in c.events(startingFrom: now, before: now + 30 * 3_600) where EventCatalog.isBookable(e) {
                if c.rules.night.contains(start, at: now, in: c.zone(of: e.venue)) { out.insert(e.id) }
            }
            return out
        }
        let entered = state.withLock { s -> Set<String> in
            defer { s.window = window }
            return window.subtracting(s.window)
        }
        var users = Set<String>()
        for event in entered { users.formUnion(audience(of: event)) }
        await forEach(users) { a in await a.refresh() }

        // A bounded number of batches a tick: reminders a failing store keeps due wait for the next.
        for _ in 0..<100 {
            let due: [(String, String)]
            do { due = try await store.read { db in try GoerRows.dueReminders(by: now, limit: 1_000, db) } } catch {
                logger.error("could not read due reminders", metadata: ["error": "\(error)"])
                return
            }
            guard !due.isEmpty else { return }
            await withTaskGroup(of: Void.self) { group in
                for (user, event) in due { group.addTask { await self.actor(for: user).remind(event) } }
            }
            if due.count < 1_000 { return }
        }
    }

    /// Lets idle users' rooms go.
    func sweep() async {
        let actors = state.withLock { Array($0.actors.values) }, now = clock.now
        for a in actors { await a.sweep(now: now, idleAfter: configuration.idleSeconds) }
    }
}

/// `user:` rooms: only the user may subscribe to their own. Their log is the user's durable stream
/// (`GoerStreamLog`), their snapshot taken on the node holding tonight's lease.
struct UserRooms: RoomDirectory {
    let goers: EventGoers
    let memory: ReloadGate
    /// This node took tonight's lease: what it holds in memory is to be reloaded.
    let onAcquired: @Sendable () -> Void
    var prefix: String { TonightPush.userRoomPrefix }

    func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot {
        try authorize(id, for: user)
        try await memory.ready()
        return try await goers.actor(for: user).snapshot()
    }

    func authorize(_ id: String, for user: String) throws(ProtocolError) {
        guard id == user else { throw .forbidden("only \(id) may subscribe to user:\(id)") }
    }

    func lease(of id: String) -> String { TonightDomain.home }
    func acquired(_ id: String) { onAcquired() }
    var source: (any RoomLogSource)? { GoerStreamLog(store: goers.store) }
}
