import DomainSeam
import Foundation
import HubbubCrypto
import Logging
import Realtime
import RoomLog
import Routes
import Storage

/// One intel shard's live items, their spatial index and their expiry schedule, owned by one actor
/// on the holder of the shard's lease (`intel:<shard>`). A post, a like, a comment, a link or an
/// expiry of an item of the shard is decided here, in order, and in the same step staged as one
/// entry in the shard's log (`IntelEntry`, room `intel:<shard>`, through the shard's own
/// `RoomWriter`); the change and its entry are written in one transaction and answered once
/// durable. The corridors, on any node, make their pushes from the log (`CorridorHost`). Changes
/// are applied in memory first (so a second like racing the first is refused). On a failed write
/// the writer's policy holds, and the shard's part of it is to reload what is durable. Shards are
/// independent: a burst in one never waits behind another's.
actor IntelShard {
    nonisolated let name: String
    nonisolated let room: String
    let configuration: IntelHub.Configuration
    let store: Store
    private let rooms: CorridorPublishing?
    /// The live items; nil until first read (and after a failed write or a take-over).
    private var live: Live?
    /// The shard log's entries go here, and only here; a new one after each reload.
    private var writer: RoomWriter
    /// Set when this node took the shard's lease (another node may have changed it meanwhile),
    /// or a write failed: the next call reads the shard again.
    private let stale = TakeOverFlag()
    /// The read of the items under way, if any (`current`).
    private var loading: Task<Live?, Never>?

    /// What time it is when the items are read.
    private let clock: @Sendable () -> Double

    init(name: String, store: Store, configuration: IntelHub.Configuration, rooms: CorridorPublishing?,
         clock: @escaping @Sendable () -> Double) {
        self.clock = clock
        self.name = name
        room = CorridorHost.logRoom(name)
        self.store = store
        self.configuration = configuration
        self.rooms = rooms
        writer = Self.writer(store: store, rooms: rooms)
    }

    private static func writer(store: Store, rooms: CorridorPublishing?) -> RoomWriter {
        RoomWriter(store: store, feed: rooms?.feed, logger: rooms?.logger ?? Logger(label: "hubbub.routes"))
    }

    /// The live items, found by id, by place and by when they fall due.
    struct Live {
        var items: [String: IntelItem] = [:]
        var index: ItemIndex
        var expiry = ExpiryQueue()
        /// Live named items (`NamedItem`) by scope: what a full dataset replaces.
        var named: [String: Set<String>] = [:]

        init(grid: GeoGrid, items: [IntelItem]) {
            index = ItemIndex(grid: grid)
            for item in items { remember(item) }
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

    /// What this node holds may be stale (it just took the shard's lease): reload before the next call.
    nonisolated func invalidate() { stale.set() }

    /// The shard's items as the store has them and its log's head held by the writer, read when
    /// this node first needs them, took the lease, or a write failed (one read for every caller
    /// waiting meanwhile). `unavailable` while they cannot be read: nobody is answered from items
    /// the store may have moved past.
    private func current() async throws(ProtocolError) -> Live {
        if stale.take() { live = nil }
        if let live, writer.holds(room) { return live }
        let task = loading ?? Task { await self.load() }
        loading = task
        let loaded = await task.value
        if loading == task { loading = nil }
        guard let loaded else { throw ProtocolError(.unavailable, "the intel of this area is loading; try again") }
        return loaded
    }

    /// The read of `current`: a new writer holding the log's head, and the items.
    private func load() async -> Live? {
        let room = self.room, name = self.name, now = clock()
        let fresh = Self.writer(store: store, rooms: rooms)
        do {
            // The head first, in a write (a log nobody wrote yet has none), then the items: a change
            // is written with its entry, so nothing written before the head is missing from the items.
            let started = Date()
            let head = try await store.write { db in try RoomLogRows.head(of: room, db) }
            let (items, untold) = try await store.read { db in
                (try IntelRows.live(now: now, shard: name, db), try IntelRows.untold(now: now, shard: name, db))
            }
            fresh.adopt(room, head: head)
            if !untold.isEmpty {
                // Fell due while no node held the shard: ended now, as its expiry would have, so the
                // corridors that showed them hear of it.
                for item in untold { fresh.stage(IntelLogEvent.entry, data: IntelEntry(.removed(item), aliases: [:]).json, in: room, at: now) }
                let ids = untold.map(\.id)
                try await fresh.commit { rows in try IntelRows.ended(ids, rows.db) }
            }
            writer = fresh
            live = Live(grid: configuration.grid, items: items)
            rooms?.logger.info("routes: an intel shard read here", metadata: [
                "shard": "\(name)", "items": "\(items.count)", "endedDue": "\(untold.count)", "seq": "\(head.seq)", "ms": "\(Int(Date().timeIntervalSince(started) * 1000))"])
            return live
        } catch {
            rooms?.logger.warning("routes: could not read an intel shard", metadata: ["shard": "\(name)", "error": "\(error)"])
            return nil
        }
    }

    /// Before a change touches memory: the writer admits it (`RoomWriter.admit`) and still holds
    /// the log (a reload meanwhile let it go).
    private func admit() throws(ProtocolError) {
        try writer.admit()
        guard writer.holds(room), live != nil else { throw ProtocolError(.unavailable, "the intel of this area is reloading; try again") }
    }

    /// Stages `change` in the shard's log.
    private func stage(_ change: IntelEntry.Change, aliases: Aliases, at now: Double) {
        writer.stage(IntelLogEvent.entry, data: IntelEntry(change, aliases: aliases).json, in: room, at: now)
    }

    /// Live items (tests, metrics): nil when not read yet.
    var liveCount: Int { live?.items.count ?? 0 }
    /// When the next item falls due, if any.
    var nextExpiry: Double? { live?.expiry.next }

    func item(_ id: String) async throws(ProtocolError) -> IntelItem? { try await current().items[id] }

    /// The live items inside `corridor`'s band (tests, tools).
    func items(in corridor: Corridor) async -> [IntelItem] {
        guard let live = try? await current() else { return [] }
        return live.index.items(in: corridor).compactMap { live.items[$0] }
    }

    /// Posts `drafts` (all of this shard) in one durable write: each is accepted or refused on its
    /// own (`at` out of range); the accepted ones are returned once all are durable. A failed
    /// write refuses them all (`unavailable`): nothing of it was acknowledged.
    func post(_ drafts: [(IntelHub.Draft, IntelItem.Author)], now: Double) async throws(ProtocolError) -> [Result<IntelHub.Posted, ProtocolError>] {
        _ = try await current()
        // Looked up once, before the change: for the pushes and the reply alike.
        let names = await aliases(Set(drafts.compactMap { if case .user(let u) = $0.1 { u } else { nil } }))
        let made = drafts.map { draft, author in Result { () throws(ProtocolError) in try make(draft, by: author, now: now) } }
        let items = made.compactMap { try? $0.get() }
        guard !items.isEmpty else { return made.map { $0.map { IntelHub.Posted(item: $0, json: EncodedItem($0, aliases: names).json) } } }
        try admit()
        var shown: [String: JSON] = [:]
        for item in items {
            shown[item.id] = EncodedItem(item, aliases: names).json
            live!.remember(item)
            stage(.added(item), aliases: names, at: now)
        }
        let karma = configuration.karmaPerItem, shard = name
        try await durably { db in for item in items { try IntelRows.insert(item, shard: shard, postedAt: now, karma: karma, db) } }
        return made.map { $0.map { IntelHub.Posted(item: $0, json: shown[$0.id]!) } }
    }

    private func make(_ draft: IntelHub.Draft, by author: IntelItem.Author, now: Double) throws(ProtocolError) -> IntelItem {
        // `at` orders lists by time: an item may tell of the recent past, not of the future.
        if let at = draft.at, at > now + 300 || at < now - configuration.ttlSeconds {
            throw .badRequest("field at must be a time (seconds since 1970) within the last \(Int(configuration.ttlSeconds)) s and not in the future")
        }
        let tags = IntelHub.merged(draft.tags, Hashtags.extract(from: draft.body))
        return IntelItem(id: IntelShards.id(in: name, token: Digest.randomToken(length: 12)), point: draft.point, kind: draft.kind,
                         author: author, tags: tags, modes: draft.modes, body: draft.body, at: draft.at ?? now,
                         expiresAt: now + configuration.ttlSeconds)
    }

    /// A like by `user`: once, never their own; the item lives `ttlSeconds` from now. Returns the
    /// item as it now is, once durable.
    func like(_ id: String, by user: String, now: Double) async throws(ProtocolError) -> IntelHub.Shown {
        let names = await aliases(Set([try await current().items[id]?.user].compactMap { $0 }))
        guard var item = try await current().items[id] else { throw .notFound("no live item \(id)") }
        do throws(IntelItem.Refusal) {
            try item.like(by: user, now: now, ttl: configuration.ttlSeconds)
        } catch .ownItem {
            throw .forbidden("you cannot like your own item")
        } catch {
            throw .conflict("you already liked \(id)")
        }
        try admit()
        live!.items[id] = item
        live!.expiry.schedule(id, at: item.expiresAt)
        stage(.updated(item), aliases: names, at: now)
        let karma = configuration.karmaPerLike, liked = item, shard = name
        try await durably { db in try IntelRows.like(liked, by: user, at: now, karma: karma, shard: shard, db) }
        return IntelHub.Shown(item: liked, aliases: names)
    }

    /// A comment by `user` on a live item; returns the item as it now is, once durable (its
    /// names include the commenter's).
    func comment(_ id: String, by user: String, text: String, now: Double) async throws(ProtocolError) -> IntelHub.Shown {
        let names = await aliases(Set([try await current().items[id]?.user, user].compactMap { $0 }))
        guard var item = try await current().items[id] else { throw .notFound("no live item \(id)") }
        try admit()
        item.comments += 1
        live!.items[id] = item
        stage(.updated(item), aliases: names, at: now)
        let commented = item
        try await durably { db in try IntelRows.comment(commented, by: user, text: text, at: now, db) }
        return IntelHub.Shown(item: commented, aliases: names)
    }

    /// Links two live items of this shard (each shows the other); returns both as they now are,
    /// once durable, with their posters' names.
    func link(_ id: String, to other: String, by user: String, now: Double) async throws(ProtocolError)
        -> (item: IntelItem, to: IntelItem, aliases: [String: String]) {
        let known = try await current().items
        let names = await aliases(Set([known[id]?.user, known[other]?.user].compactMap { $0 }))
        let items = try await current().items
        guard var a = items[id] else { throw .notFound("no live item \(id)") }
        guard var b = items[other] else { throw .notFound("no live item \(other)") }
        do throws(IntelItem.Refusal) {
            try a.link(to: other)
            try b.link(to: id)
        } catch .selfLink {
            throw .badRequest("field to: an item cannot be linked to itself")
        } catch {
            throw .conflict("\(id) and \(other) are linked already")
        }
        try admit()
        live!.items[id] = a
        live!.items[other] = b
        // Every corridor that holds either item hears of the link, once.
        stage(.linked(a, to: b, side: .both), aliases: names, at: now)
        let karma = configuration.karmaPerLink, linkedA = a, linkedB = b, shard = name
        try await durably { db in
            try IntelRows.linkHalf(linkedA, to: linkedB.id, by: user, at: now, karma: karma, shard: shard, db)
            try IntelRows.linkHalf(linkedB, to: linkedA.id, by: user, at: now, karma: karma, shard: shard, db)
        }
        return (linkedA, linkedB, names)
    }

    /// Item `id` as a link to `other` (in another shard) would leave it, before that link is
    /// made: what the other shard's half shows beside its own item; and whether `id`'s own half
    /// is made already (an earlier attempt, the other way round, failed after it). `not_found` if
    /// it is not live.
    func linking(_ id: String, to other: String) async throws(ProtocolError) -> (item: IntelItem, made: Bool) {
        guard var item = try await current().items[id] else { throw .notFound("no live item \(id)") }
        guard !item.links.contains(other) else { return (item, true) }
        try? item.link(to: other)
        return (item, false)
    }

    /// One half of a link between two shards' items: item `id` of this shard shows `other` (as
    /// it is), written with an entry for the corridors holding `id` (`side`: which item the entry
    /// speaks for; see `IntelEntry.LinkSide`). A half already made is left as it is (`made`
    /// false): a link retried after its other half failed is completed, never doubled. Returns
    /// the item as it now is, once durable.
    func linkHalf(_ id: String, to other: IntelItem, side: IntelEntry.LinkSide, by user: String, now: Double) async throws(ProtocolError)
        -> (item: IntelItem, made: Bool, aliases: [String: String]) {
        let names = await aliases(Set([try await current().items[id]?.user, other.user].compactMap { $0 }))
        guard var item = try await current().items[id] else { throw .notFound("no live item \(id)") }
        do throws(IntelItem.Refusal) {
            try item.link(to: other.id)
        } catch .selfLink {
            throw .badRequest("field to: an item cannot be linked to itself")
        } catch {
            return (item, false, names)
        }
        try admit()
        live!.items[id] = item
        stage(side == .to ? .linked(other, to: item, side: .to) : .linked(item, to: other, side: .item), aliases: names, at: now)
        let karma = configuration.karmaPerLink, linked = item, shard = name
        try await durably { db in try IntelRows.linkHalf(linked, to: other.id, by: user, at: now, karma: karma, shard: shard, db) }
        return (linked, true, names)
    }

    /// A provider's batch of named items (`NamedItem`) in one durable write: see `IntelHub.apply`.
    func apply(_ batch: [NamedItem], scope: String, ending: NamedEnding, now: Double) async throws(ProtocolError)
        -> (changes: [NamedChange], unchanged: Int) {
        let live = try await current()
        var changes: [NamedChange] = [], unchanged = 0
        var ended: [IntelItem] = [], seen = Set<String>()
        let ttl = configuration.ttlSeconds
        for named in batch where named.scope == scope {
            let id = IntelHub.id(of: named.reference)
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
                let id = IntelHub.id(of: "\(scope)/\(name)")
                if seen.insert(id).inserted, let item = live.items[id] { ended.append(item) }
            }
        case .allOthers, .allOthersBut:
            var kept = seen
            if case .allOthersBut(let names) = ending { for name in names { kept.insert(IntelHub.id(of: "\(scope)/\(name)")) } }
            for id in live.named[scope] ?? [] where !kept.contains(id) { if let item = live.items[id] { ended.append(item) } }
        }
        changes += ended.map { .ended($0) }
        guard !changes.isEmpty else { return ([], unchanged) }
        try admit()
        for change in changes {
            switch change {
            case .added(let item), .revised(_, let item): self.live!.remember(item)
            case .ended(let item): self.live!.forget(item.id)
            }
            switch change {
            case .added(let item): stage(.added(item), aliases: [:], at: now)
            case .revised(let before, let after): stage(.revised(after, before: before.points), aliases: [:], at: now)
            case .ended(let item): stage(.removed(item), aliases: [:], at: now)
            }
        }
        let written = changes, shard = name
        try await durably { db in
            for change in written {
                switch change {
                case .added(let item): try IntelRows.replace(item, shard: shard, postedAt: now, db)
                case .revised(_, let item): try IntelRows.revise(item, db)
                case .ended(let item): try IntelRows.end(item.id, at: now, db)
                }
            }
        }
        return (changes, unchanged)
    }

    /// Takes out every item due at `now` and returns them; their corridors push `intel.expired`
    /// (written to the log, and delivered once durable). Entries left behind by a like that
    /// postponed an item are dropped on the way. Nothing while the items cannot be read.
    func expire(now: Double) async -> [IntelItem] {
        guard (try? await current()) != nil, (try? admit()) != nil else { return [] }
        var gone: [IntelItem] = []
        for (at, id) in live!.expiry.due(now: now) {
            guard let item = live!.items[id], item.expiresAt == at else { continue }
            live!.forget(id)
            gone.append(item)
            stage(.removed(item), aliases: [:], at: now)
        }
        let ended = gone.map(\.id)
        if writer.hasStaged { try? await durably { db in try IntelRows.ended(ended, db) } }
        return gone
    }

    /// Writes a change already applied in memory, with the entry staged for it (see
    /// `RoomWriter`); if it fails, the shard is read again from the store before its next call
    /// (the change was never acknowledged).
    private func durably(_ change: @escaping @Sendable (any SQLDatabase) throws -> Void) async throws(ProtocolError) {
        do throws(ProtocolError) {
            try await writer.commit { rows in try change(rows.db) }
        } catch {
            stale.set()
            throw error
        }
    }

    /// The names shown for `users`, looked up before the change that shows them (in its entry and
    /// its reply), so the change itself never suspends.
    private func aliases(_ users: Set<String>) async -> Aliases {
        guard let rooms, !users.isEmpty else { return [:] }
        return await rooms.directory.aliases(Array(users))
    }
}
