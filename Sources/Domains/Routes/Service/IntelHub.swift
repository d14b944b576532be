import DomainSeam
import Foundation
import HubbubCrypto
import Logging
import Realtime
import RoomLog
import Routes
import Storage
import Synchronization

/// Every live intel item, its spatial index and its expiry schedule, and the live corridors whose
/// rooms hear of them, owned by one actor (on one node of a cluster: the holder of the `route:*`
/// lease). A post, a like or an expiry is decided here, in order, and in the same step staged as a
/// push in every live corridor it concerns, through the hub's `RoomWriter` (one change, many
/// rooms); the change and its pushes are then written in one transaction, delivered through the
/// feed once durable, and answered. Changes are applied in memory first (so a second like racing
/// the first is refused). On a failed write the writer's policy holds, and the hub's part of it is
/// to reload what is durable: the corridors are dropped, and each starts a new epoch when loaded.
public actor IntelHub {
    /// Settings of the intel stream.
    public struct Configuration: Sendable {
        /// An item expires this long after it was posted or last liked.
        public var ttlSeconds: Double = 43_200
        /// Karma for sharing an item, and for each like it receives.
        public var karmaPerItem = 1
        public var karmaPerLike = 2
        /// Karma to each linked item's poster (not to whoever made the link).
        public var karmaPerLink = 2
        /// Most items `query` answers.
        public var maxQueryResults = 500
        public var grid = GeoGrid()
        public init() {}
    }

    /// An item as posted, before it has an id.
    public struct Draft: Sendable {
        public var point: GeoPoint
        public var kind: IntelKind
        public var tags: [String]
        public var modes: [TravelMode]
        public var body: String
        /// When it happened, if not now.
        public var at: Double?

        public init(point: GeoPoint, kind: IntelKind, tags: [String] = [], modes: [TravelMode] = [], body: String, at: Double? = nil) {
            self.point = point
            self.kind = kind
            self.tags = tags
            self.modes = modes
            self.body = body
            self.at = at
        }
    }

    /// The live items, found by id, by place and by when they fall due.
    struct Live {
        var items: [String: IntelItem] = [:]
        var index: ItemIndex
        var expiry = ExpiryQueue()
        /// Live named items (`NamedItem`) by scope: what a full dataset replaces.
        var named: [String: Set<String>] = [:]

        /// What the store holds live at `now` (items that fell due while the server was down have expired).
        init(grid: GeoGrid, store: Store, now: Double) throws {
            index = ItemIndex(grid: grid)
            for item in try store.readNow({ db in try IntelRows.live(now: now, db) }) { remember(item) }
        }

        mutating func remember(_ item: IntelItem) {
            items[item.id] = item
            index.insert(item.id, at: item.points, time: item.at)
            expiry.schedule(item.id, at: item.expiresAt)
            if let scope = item.scope { named[scope, default: []].insert(item.id) }
        }

        mutating func forget(_ id: String) {
            guard let item = items.removeValue(forKey: id) else { return }
            index.remove(id)
            if let scope = item.scope { named[scope]?.remove(id) }
        }
    }

    public let configuration: Configuration
    let store: Store
    var live: Live
    /// Where the corridors' pushes go, and how they are worded (nil: items only, no rooms).
    let rooms: CorridorPublishing?
    /// The corridors live here, with their rooms' logs.
    var corridors: LiveCorridors
    /// Corridors being loaded, so many callers wait for one load.
    var loading: [String: Task<Void, Never>] = [:]
    /// The live corridors were dropped (a reload): those watched anywhere are loaded again at the
    /// next `refresh`.
    var corridorsUnknown = true
    /// The refresh under way, if any (see `refresh`).
    var refreshing: Task<Void, Never>?
    /// Reloads so far: a refresh that began before the last one does not count.
    var reloads = 0
    /// Corridors whose last load failed (their callers are told `unavailable`).
    var failedLoads: Set<String> = []
    /// Pushes to the corridors' rooms go here, and only here; a new one after each reload.
    var writer: RoomWriter
    /// Set when this node took the routes' lease (another node may have changed everything
    /// meanwhile): the next call reloads items and corridors.
    let stale: TakeOverFlag

    public init(store: Store, configuration: Configuration = .init(), now: Double = Date().timeIntervalSince1970,
                rooms: CorridorPublishing? = nil) throws {
        self.store = store
        self.configuration = configuration
        self.rooms = rooms
        stale = TakeOverFlag()
        corridors = LiveCorridors(grid: configuration.grid)
        writer = Self.writer(store: store, rooms: rooms)
        live = try Live(grid: configuration.grid, store: store, now: now)
    }

    private static func writer(store: Store, rooms: CorridorPublishing?) -> RoomWriter {
        RoomWriter(store: store, feed: rooms?.feed, logger: rooms?.logger ?? Logger(label: "hubbub.routes"))
    }

    /// What this node holds may be stale (it just took the routes' lease): reload before the next call.
    public nonisolated func invalidate() { stale.set() }

    /// Items and corridors as the store has them, when this node just took the lease (or a write
    /// failed). `unavailable` while they cannot be read: nobody is answered from items the store
    /// may have moved past.
    func current() throws(ProtocolError) {
        guard stale.take() else { return }
        guard reload() else { throw ProtocolError(.unavailable, "the routes are reloading; try again") }
    }

    /// Before a change: what this node holds is current, and so are the live corridors (after a
    /// reload, those someone watches are loaded before any change is pushed, so none is missed).
    func ready() async throws(ProtocolError) {
        try current()
        guard corridorsUnknown, let rooms else { return }
        await refresh(now: Date().timeIntervalSince1970, window: rooms.directory.configuration.retireAfterSeconds)
    }

    /// Items as the store has them; every live corridor is dropped (the sweep, a subscriber or a
    /// resume loads them again, each in a new epoch). False if the items could not be read: the
    /// hub stays stale and the next call tries again.
    @discardableResult
    func reload() -> Bool {
        corridors = LiveCorridors(grid: configuration.grid)
        writer = Self.writer(store: store, rooms: rooms)
        corridorsUnknown = true
        reloads += 1
        guard let durable = try? Live(grid: configuration.grid, store: store, now: Date().timeIntervalSince1970) else {
            stale.set()
            return false
        }
        live = durable
        return true
    }

    /// Live items (tests, metrics).
    public var liveCount: Int { live.items.count }
    /// When the next item falls due, if any.
    public var nextExpiry: Double? { live.expiry.next }

    public func item(_ id: String) throws(ProtocolError) -> IntelItem? {
        try current()
        return live.items[id]
    }

    /// The live items inside `corridor`'s band.
    public func items(in corridor: Corridor) -> [IntelItem] { live.index.items(in: corridor).compactMap { live.items[$0] } }

    /// An item as posted, and as it is shown (encoded once, for its pushes and its reply).
    public struct Posted: Sendable {
        public let item: IntelItem
        /// The item with its poster's alias, in its original language.
        public let json: JSON
    }

    /// Posts an item; returns it once it is durable.
    public func post(_ draft: Draft, by author: IntelItem.Author, now: Double) async throws(ProtocolError) -> Posted {
        try await post([(draft, author)], now: now)[0].get()
    }

    /// Posts several items in one durable write (a provider's batch): each draft is accepted or
    /// refused on its own (`at` out of range); the accepted ones are returned once all are durable.
    /// A failed write refuses the whole batch (`unavailable`): nothing of it was acknowledged.
    public func post(_ drafts: [(Draft, IntelItem.Author)], now: Double) async throws(ProtocolError) -> [Result<Posted, ProtocolError>] {
        try await ready()
        // Looked up once, before the change: for the pushes and the reply alike.
        let users = Set(drafts.compactMap { if case .user(let u) = $0.1 { u } else { nil } })
        let names = users.isEmpty ? [:] : await rooms?.directory.aliases(Array(users)) ?? [:]
        let made = drafts.map { draft, author in Result { () throws(ProtocolError) in try make(draft, by: author, now: now) } }
        let items = made.compactMap { try? $0.get() }
        guard !items.isEmpty else { return made.map { $0.map { Posted(item: $0, json: EncodedItem($0, aliases: names).json) } } }
        try writer.admit()
        var shown: [String: JSON] = [:]
        for item in items {
            let encoded = EncodedItem(item, aliases: names)
            shown[item.id] = encoded.json
            live.remember(item)
            stage(.added, item, encoded, in: corridors.containing(item.points), at: now)
        }
        let karma = configuration.karmaPerItem
        try await durably { db in for item in items { try IntelRows.insert(item, postedAt: now, karma: karma, db) } }
        return made.map { $0.map { Posted(item: $0, json: shown[$0.id]!) } }
    }

    private func make(_ draft: Draft, by author: IntelItem.Author, now: Double) throws(ProtocolError) -> IntelItem {
        // `at` orders lists by time: an item may tell of the recent past, not of the future.
        if let at = draft.at, at > now + 300 || at < now - configuration.ttlSeconds {
            throw .badRequest("field at must be a time (seconds since 1970) within the last \(Int(configuration.ttlSeconds)) s and not in the future")
        }
        let tags = Self.merged(draft.tags, Hashtags.extract(from: draft.body))
        return IntelItem(id: "i" + Digest.randomToken(length: 12), point: draft.point, kind: draft.kind, author: author, tags: tags,
                         modes: draft.modes, body: draft.body, at: draft.at ?? now, expiresAt: now + configuration.ttlSeconds)
    }

    /// An item as a change left it, with the names shown beside it: looked up once, before the
    /// change, for its pushes and its reply alike.
    public struct Shown: Sendable {
        public let item: IntelItem
        public let aliases: [String: String]
    }

    /// A like by `user`: once, never their own; the item lives `ttlSeconds` from now. Returns the
    /// item as it now is, once durable.
    public func like(_ id: String, by user: String, now: Double) async throws(ProtocolError) -> Shown {
        try await ready()
        let names = await aliases(Set([live.items[id]?.user].compactMap { $0 }))
        guard var item = live.items[id] else { throw .notFound("no live item \(id)") }
        do throws(IntelItem.Refusal) {
            try item.like(by: user, now: now, ttl: configuration.ttlSeconds)
        } catch .ownItem {
            throw .forbidden("you cannot like your own item")
        } catch {
            throw .conflict("you already liked \(id)")
        }
        try writer.admit()
        live.items[id] = item
        live.expiry.schedule(id, at: item.expiresAt)
        stage(.updated, item, names, in: corridors.containing(item.points), at: now)
        let karma = configuration.karmaPerLike, liked = item
        try await durably { db in try IntelRows.like(liked, by: user, at: now, karma: karma, db) }
        return Shown(item: liked, aliases: names)
    }

    /// A comment by `user` on a live item; returns the item as it now is, once durable (its
    /// names include the commenter's).
    public func comment(_ id: String, by user: String, text: String, now: Double) async throws(ProtocolError) -> Shown {
        try await ready()
        let names = await aliases(Set([live.items[id]?.user, user].compactMap { $0 }))
        guard var item = live.items[id] else { throw .notFound("no live item \(id)") }
        try writer.admit()
        item.comments += 1
        live.items[id] = item
        stage(.updated, item, names, in: corridors.containing(item.points), at: now)
        let commented = item
        try await durably { db in try IntelRows.comment(commented, by: user, text: text, at: now, db) }
        return Shown(item: commented, aliases: names)
    }

    /// Links two live items (each shows the other); returns both as they now are, once durable,
    /// with their posters' names.
    public func link(_ id: String, to other: String, by user: String, now: Double) async throws(ProtocolError)
        -> (item: IntelItem, to: IntelItem, aliases: [String: String]) {
        try await ready()
        let names = await aliases(Set([live.items[id]?.user, live.items[other]?.user].compactMap { $0 }))
        guard var a = live.items[id] else { throw .notFound("no live item \(id)") }
        guard var b = live.items[other] else { throw .notFound("no live item \(other)") }
        do throws(IntelItem.Refusal) {
            try a.link(to: other)
            try b.link(to: id)
        } catch .selfLink {
            throw .badRequest("field to: an item cannot be linked to itself")
        } catch {
            throw .conflict("\(id) and \(other) are linked already")
        }
        try writer.admit()
        live.items[id] = a
        live.items[other] = b
        // Every corridor that holds either item hears of the link, once.
        writer.stage(RoutePush.linked, data: ["item": .string(a.id), "to": .string(b.id)],
                     in: corridors.containing(a.points + b.points).map(RoutePush.room), at: now)
        let karma = configuration.karmaPerLink, linkedA = a, linkedB = b
        try await durably { db in try IntelRows.link(linkedA, linkedB, by: user, at: now, karma: karma, db) }
        return (linkedA, linkedB, names)
    }

    /// Live items in a box (`minLon > maxLon`: across the antimeridian) that happened between
    /// `since` and `until` and pass `filter`, newest first, at most `maxQueryResults`.
    public func query(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double, since: Double?, until: Double?,
                      filter: IntelFilter) throws(ProtocolError) -> (items: [IntelItem], truncated: Bool) {
        try current()
        // Newest first from the index, which stops once it has enough (the filter looks at each candidate).
        let items = live.items
        let (ids, truncated) = live.index.newest(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon, since: since ?? -.infinity,
                                                 until: until ?? .infinity, limit: configuration.maxQueryResults,
                                                 accept: filter.isEmpty ? { _ in true } : { id in items[id].map(filter.matches) ?? false })
        return (ids.compactMap { items[$0] }, truncated)
    }

    /// An item's comments, oldest first (at most `limit`).
    /// A comment as stored (`user` nil once the account is deleted).
    public struct Comment: Sendable, Equatable {
        public var user: String?
        public var text: String
        public var at: Double
    }

    /// An item's newest `limit` comments, oldest first, and whether older ones were left out.
    public func comments(of id: String, limit: Int) async throws(ProtocolError) -> (comments: [Comment], truncated: Bool) {
        do {
            return try await store.read { db in try IntelRows.comments(of: id, limit: limit, db) }
        } catch {
            throw ProtocolError(.unavailable, "could not read comments")
        }
    }

    /// A user's karma.
    public func karma(of user: String) async throws(ProtocolError) -> Int {
        do {
            return try await store.read { db in try IntelRows.karma(of: user, db) }
        } catch {
            throw ProtocolError(.unavailable, "could not read karma")
        }
    }

    /// A provider's batch of named items (`NamedItem`), in one durable write: each is added, revised
    /// or left as it is; `ending` says which others of `scope` end. Returns what changed (for the
    /// corridors' pushes) and how many were unchanged, once durable. A named item whose end is past
    /// ends (or is ignored if it is not live). A failed write refuses the whole batch.
    public func apply(_ batch: [NamedItem], scope: String, ending: NamedEnding, now: Double) async throws(ProtocolError)
        -> (changes: [NamedChange], unchanged: Int) {
        try await ready()
        var changes: [NamedChange] = [], unchanged = 0
        var ended: [IntelItem] = [], seen = Set<String>()
        let ttl = configuration.ttlSeconds
        for named in batch where named.scope == scope {
            let id = Self.id(of: named.reference)
            guard seen.insert(id).inserted else { continue } // an id given twice: the first counts
            let existing = live.items[id]
            if let end = named.endsAt, end <= now {
                if let existing { ended.append(existing) }
                continue
            }
            // An open-ended item is renewed once half its lifetime has gone, not at every message.
            let expiresAt = named.endsAt ?? existing.flatMap { $0.expiresAt - now > ttl / 2 ? $0.expiresAt : nil } ?? now + ttl
            if var item = existing {
                let before = item
                if item.revise(points: named.points, body: named.body, translations: named.translations, tags: named.tags,
                               modes: named.modes, expiresAt: expiresAt) {
                    changes.append(.revised(before: before, after: item))
                } else {
                    unchanged += 1
                }
            } else {
                var item = IntelItem(id: id, points: named.points, kind: named.kind, author: .provider(source: named.source), tags: named.tags,
                                     modes: named.modes, body: named.body, at: now, expiresAt: expiresAt)
                item.translations = named.translations
                item.reference = named.reference
                changes.append(.added(item))
            }
        }
        switch ending {
        case .listed(let names):
            for name in names {
                let id = Self.id(of: "\(scope)/\(name)")
                if seen.insert(id).inserted, let item = live.items[id] { ended.append(item) }
            }
        case .allOthers:
            for id in live.named[scope] ?? [] where !seen.contains(id) { if let item = live.items[id] { ended.append(item) } }
        }
        changes += ended.map { .ended($0) }
        guard !changes.isEmpty else { return ([], unchanged) }
        try writer.admit()
        for change in changes {
            switch change {
            case .added(let item), .revised(_, let item): live.remember(item)
            case .ended(let item): live.forget(item.id)
            }
            stage(change, at: now)
        }
        let written = changes
        try await durably { db in
            for change in written {
                switch change {
                case .added(let item): try IntelRows.replace(item, postedAt: now, db)
                case .revised(_, let item): try IntelRows.revise(item, db)
                case .ended(let item): try IntelRows.end(item.id, at: now, db)
                }
            }
        }
        return (changes, unchanged)
    }

    /// The id of the item a provider names `reference`: the same whenever it comes back.
    static func id(of reference: String) -> String {
        "n" + Base64.encodeURL(Array(Digest.sha256(Array(reference.utf8)).prefix(12)))
    }

    /// Takes out every item due at `now` and returns them; their corridors push `intel.expired`
    /// (written to their logs, and delivered once durable). Entries left behind by a like that
    /// postponed an item are dropped on the way.
    public func expire(now: Double) async -> [IntelItem] {
        // The next run tries again.
        guard (try? await ready()) != nil, (try? writer.admit()) != nil else { return [] }
        var gone: [IntelItem] = []
        for (at, id) in live.expiry.due(now: now) {
            guard let item = live.items[id], item.expiresAt == at else { continue }
            live.forget(id)
            gone.append(item)
            writer.stage(RoutePush.expired, data: ["item": .string(id)], in: corridors.containing(item.points).map(RoutePush.room), at: now)
        }
        if writer.hasStaged { try? await durably { _ in } }
        return gone
    }

    /// Writes a change already applied in memory, with the pushes staged for it (see
    /// `RoomWriter`); if it fails, memory is rebuilt from the store (the change was never
    /// acknowledged) and the corridors are dropped: loaded again, each starts a new epoch.
    private func durably(_ change: @escaping @Sendable (any SQLDatabase) throws -> Void) async throws(ProtocolError) {
        do throws(ProtocolError) {
            try await writer.commit { rows in try change(rows.db) }
        } catch {
            reload()
            throw error
        }
    }

    // MARK: Corridors

    /// The names shown for `users`, looked up before the change that shows them (in its pushes and
    /// its reply), so the change itself never suspends.
    private func aliases(_ users: Set<String>) async -> Aliases {
        guard let rooms, !users.isEmpty else { return [:] }
        return await rooms.directory.aliases(Array(users))
    }

    /// Stages `event` about `item` in the corridors `ids`; the item is encoded once for all.
    private func stage(_ event: RoutePush, _ item: IntelItem, _ names: Aliases, in ids: [String], at now: Double) {
        guard !ids.isEmpty else { return }
        stage(event, item, EncodedItem(item, aliases: names), in: ids, at: now)
    }

    /// Stages `event` about `item` in the corridors `ids`, as each shows it (its distance to the
    /// corridor's destination), in every language the item has, from `encoded`.
    private func stage(_ event: RoutePush, _ item: IntelItem, _ encoded: EncodedItem, in ids: [String], at now: Double) {
        guard !ids.isEmpty else { return }
        let languages = item.translations.keys.sorted()
        for id in ids {
            guard let to = corridors.byID[id]?.corridor.to else { continue }
            let distance = Int(item.distance(to: to).rounded())
            writer.stage(event, languages: languages, data: { tag in ["item": encoded.json(tag: tag, distance: distance)] },
                         in: RoutePush.room(id), at: now)
        }
    }

    /// Stages what a provider's change means for each corridor: `intel.added` where an item
    /// arrives, `intel.updated` where it stays, `intel.expired` where it leaves or ends.
    private func stage(_ change: NamedChange, at now: Double) {
        switch change {
        case .added(let item):
            stage(.added, item, [:], in: corridors.containing(item.points), at: now)
        case .revised(let before, let after):
            let was = corridors.containing(before.points), nowIn = corridors.containing(after.points)
            let wasSet = Set(was), nowSet = Set(nowIn)
            stage(.updated, after, [:], in: nowIn.filter { wasSet.contains($0) }, at: now)
            stage(.added, after, [:], in: nowIn.filter { !wasSet.contains($0) }, at: now)
            writer.stage(RoutePush.expired, data: ["item": .string(before.id)], in: was.filter { !nowSet.contains($0) }.map(RoutePush.room), at: now)
        case .ended(let item):
            writer.stage(RoutePush.expired, data: ["item": .string(item.id)], in: corridors.containing(item.points).map(RoutePush.room), at: now)
        }
    }

    /// Given tags (already checked) then the body's hashtags, each once.
    static func merged(_ given: [String], _ found: [String]) -> [String] {
        var seen = Set<String>()
        return (given.map { $0.lowercased() } + found).filter { seen.insert($0).inserted }
    }
}
