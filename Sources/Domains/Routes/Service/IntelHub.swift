import DomainSeam
import Foundation
import HubbubCrypto
import Logging
import Realtime
import RoomLog
import Routes
import Storage
import Synchronization

/// Every live intel item, its spatial index and its expiry schedule, owned by one actor (on one
/// node of a cluster: the holder of the `route:*` lease). A post, a like or an expiry is decided
/// here, in order, and in the same step staged as one entry in the log of the item's shard
/// (`IntelEntry`, room `intel:<shard>`, through the hub's `RoomWriter`); the change and its entry
/// are written in one transaction and answered once durable. The corridors, on any node, make
/// their pushes from those logs (`CorridorHost`). Changes are applied in memory first (so a
/// second like racing the first is refused). On a failed write the writer's policy holds, and the
/// hub's part of it is to reload what is durable.
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
        /// Which shard's log each item's changes go to.
        public var shards = IntelShards()
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
    /// Where the shards' logs are delivered on this node, and the names shown beside items (nil:
    /// items only, tools and tests of the rules).
    let rooms: CorridorPublishing?
    /// Entries of the shards' logs go here, and only here; a new one after each reload.
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

    /// Before a change to items in `shards`: what this node holds is current, and the hub's writer
    /// holds those shards' logs (their heads read, or made, in the store).
    func ready(_ shards: Set<String>) async throws(ProtocolError) {
        try current()
        let rooms = shards.map(CorridorHost.logRoom).filter { !writer.holds($0) }
        guard !rooms.isEmpty else { return }
        let heads: [(String, RoomHead)]
        do {
            heads = try await store.write { db in try rooms.map { ($0, try RoomLogRows.head(of: $0, db)) } }
        } catch {
            throw ProtocolError(.unavailable, "could not read the intel logs; try again")
        }
        for (room, head) in heads { writer.adopt(room, head: head) }
    }

    /// The shards of `items`.
    private func shards(_ items: [IntelItem?]) -> Set<String> { Set(items.compactMap { $0.map(configuration.shards.shard(of:)) }) }

    /// Stages `change` in its items' shards' logs: one entry, or for a link between two shards
    /// one in each (each speaking for the corridors that hold its own item).
    private func stage(_ change: IntelEntry.Change, aliases: Aliases, at now: Double) {
        var placed: [(String, IntelEntry.Change)]
        if case .linked(let a, let b, _) = change, configuration.shards.shard(of: a) != configuration.shards.shard(of: b) {
            placed = [(configuration.shards.shard(of: a), .linked(a, to: b, side: .item)), (configuration.shards.shard(of: b), .linked(a, to: b, side: .to))]
        } else {
            placed = [(configuration.shards.shard(of: IntelEntry(change, aliases: [:]).items[0]), change)]
        }
        for (shard, change) in placed {
            let room = CorridorHost.logRoom(shard)
            // `admit` checked that the writer holds it (a room not held would take no entry).
            assert(writer.holds(room), "an intel change staged in a shard the hub does not hold")
            writer.stage(IntelLogEvent.entry, data: IntelEntry(change, aliases: aliases).json, in: room, at: now)
        }
    }

    /// Before a change touches memory: the writer admits it (`RoomWriter.admit`) and holds the logs
    /// of `shards` (made ready before the change's lookups; a reload meanwhile let them go).
    private func admit(_ shards: Set<String>) throws(ProtocolError) {
        try writer.admit()
        guard shards.allSatisfy({ writer.holds(CorridorHost.logRoom($0)) }) else {
            throw ProtocolError(.unavailable, "the intel logs are reloading; try again")
        }
    }

    /// Items as the store has them. False if they could not be read: the hub stays stale and the
    /// next call tries again.
    @discardableResult
    func reload() -> Bool {
        writer = Self.writer(store: store, rooms: rooms)
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
        try await ready(Set(drafts.map { configuration.shards.shard(of: $0.0.point) }))
        // Looked up once, before the change: for the pushes and the reply alike.
        let users = Set(drafts.compactMap { if case .user(let u) = $0.1 { u } else { nil } })
        let names = users.isEmpty ? [:] : await rooms?.directory.aliases(Array(users)) ?? [:]
        let made = drafts.map { draft, author in Result { () throws(ProtocolError) in try make(draft, by: author, now: now) } }
        let items = made.compactMap { try? $0.get() }
        guard !items.isEmpty else { return made.map { $0.map { Posted(item: $0, json: EncodedItem($0, aliases: names).json) } } }
        try admit(shards(items))
        var shown: [String: JSON] = [:]
        for item in items {
            let encoded = EncodedItem(item, aliases: names)
            shown[item.id] = encoded.json
            live.remember(item)
            stage(.added(item), aliases: names, at: now)
        }
        let karma = configuration.karmaPerItem, shards = configuration.shards
        try await durably { db in for item in items { try IntelRows.insert(item, shard: shards.shard(of: item), postedAt: now, karma: karma, db) } }
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
        try await ready(shards([live.items[id]]))
        let names = await aliases(Set([live.items[id]?.user].compactMap { $0 }))
        guard var item = live.items[id] else { throw .notFound("no live item \(id)") }
        do throws(IntelItem.Refusal) {
            try item.like(by: user, now: now, ttl: configuration.ttlSeconds)
        } catch .ownItem {
            throw .forbidden("you cannot like your own item")
        } catch {
            throw .conflict("you already liked \(id)")
        }
        try admit(shards([item]))
        live.items[id] = item
        live.expiry.schedule(id, at: item.expiresAt)
        stage(.updated(item), aliases: names, at: now)
        let karma = configuration.karmaPerLike, liked = item
        try await durably { db in try IntelRows.like(liked, by: user, at: now, karma: karma, db) }
        return Shown(item: liked, aliases: names)
    }

    /// A comment by `user` on a live item; returns the item as it now is, once durable (its
    /// names include the commenter's).
    public func comment(_ id: String, by user: String, text: String, now: Double) async throws(ProtocolError) -> Shown {
        try await ready(shards([live.items[id]]))
        let names = await aliases(Set([live.items[id]?.user, user].compactMap { $0 }))
        guard var item = live.items[id] else { throw .notFound("no live item \(id)") }
        try admit(shards([item]))
        item.comments += 1
        live.items[id] = item
        stage(.updated(item), aliases: names, at: now)
        let commented = item
        try await durably { db in try IntelRows.comment(commented, by: user, text: text, at: now, db) }
        return Shown(item: commented, aliases: names)
    }

    /// Links two live items (each shows the other); returns both as they now are, once durable,
    /// with their posters' names.
    public func link(_ id: String, to other: String, by user: String, now: Double) async throws(ProtocolError)
        -> (item: IntelItem, to: IntelItem, aliases: [String: String]) {
        try await ready(shards([live.items[id], live.items[other]]))
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
        try admit(shards([a, b]))
        live.items[id] = a
        live.items[other] = b
        // Every corridor that holds either item hears of the link, once.
        stage(.linked(a, to: b, side: .both), aliases: names, at: now)
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
        try await ready([IntelShards.named])
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
        try admit([IntelShards.named])
        for change in changes {
            switch change {
            case .added(let item), .revised(_, let item): live.remember(item)
            case .ended(let item): live.forget(item.id)
            }
            switch change {
            case .added(let item): stage(.added(item), aliases: [:], at: now)
            case .revised(let before, let after): stage(.revised(after, before: before.points), aliases: [:], at: now)
            case .ended(let item): stage(.removed(item), aliases: [:], at: now)
            }
        }
        let written = changes
        try await durably { db in
            for change in written {
                switch change {
                case .added(let item): try IntelRows.replace(item, shard: IntelShards.named, postedAt: now, db)
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
        // Those due are found first, and their shards' logs made ready; the next run tries again.
        let due = live.expiry.peek(now: now).compactMap { at, id in live.items[id].flatMap { $0.expiresAt == at ? $0 : nil } }
        guard (try? await ready(shards(due))) != nil, (try? writer.admit()) != nil else { return [] }
        var gone: [IntelItem] = []
        for (at, id) in live.expiry.due(now: now) {
            guard let item = live.items[id], item.expiresAt == at else { continue }
            // Due meanwhile, in a shard not made ready: the next run takes it.
            guard writer.holds(CorridorHost.logRoom(configuration.shards.shard(of: item))) else {
                live.expiry.schedule(id, at: at)
                continue
            }
            live.forget(id)
            gone.append(item)
            stage(.removed(item), aliases: [:], at: now)
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

    /// The names shown for `users`, looked up before the change that shows them (in its entry and
    /// its reply), so the change itself never suspends.
    private func aliases(_ users: Set<String>) async -> Aliases {
        guard let rooms, !users.isEmpty else { return [:] }
        return await rooms.directory.aliases(Array(users))
    }

    /// Given tags (already checked) then the body's hashtags, each once.
    static func merged(_ given: [String], _ found: [String]) -> [String] {
        var seen = Set<String>()
        return (given.map { $0.lowercased() } + found).filter { seen.insert($0).inserted }
    }
}
