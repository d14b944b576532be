import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import RoomLog
import Routes
import Storage
import Synchronization

/// The intel stream on this node: the shards it holds (`IntelShard`, an actor each, made when an
/// op or the expiry timer first needs one), and the ops that span shards. An op on one item runs
/// on its shard's owner (the ops are homed by the shard the id names); a provider's batch is split
/// by shard and each part posted on its shard's owner (this node's actor, or another node's over
/// the link); a link between two shards is made in two halves, one by each shard's owner.
public final class IntelHub: Sendable {
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
        /// Which shard each item belongs to.
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

    /// An item as posted, and as it is shown (encoded once, for its pushes and its reply).
    public struct Posted: Sendable {
        public let item: IntelItem
        /// The item with its poster's alias, in its original language.
        public let json: JSON
    }

    /// An item as a change left it, with the names shown beside it: looked up once, before the
    /// change, for its pushes and its reply alike.
    public struct Shown: Sendable {
        public let item: IntelItem
        public let aliases: [String: String]
    }

    /// A comment as stored (`user` nil once the account is deleted).
    public struct Comment: Sendable, Equatable {
        public var user: String?
        public var text: String
        public var at: Double
    }

    public let configuration: Configuration
    let store: Store
    /// Where the shards' logs are delivered on this node, and the names shown beside items (nil:
    /// items only, tools and tests of the rules).
    let rooms: CorridorPublishing?
    /// Where each shard's owner is (several nodes); nil: every shard is this node's.
    let owners: ShardOwners?
    private let shards = Mutex<[String: IntelShard]>([:])
    /// Since when each shard with an actor here has not been held by this node (`expire`).
    private let unheld = Mutex<[String: Double]>([:])
    /// What time it is when a shard's items are read (those past their time are not live).
    let clock: @Sendable () -> Double

    public init(store: Store, configuration: Configuration = .init(), rooms: CorridorPublishing? = nil, owners: ShardOwners? = nil,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.clock = clock
        self.store = store
        self.configuration = configuration
        self.rooms = rooms
        self.owners = owners
    }

    /// The actor of shard `name` on this node, made if there is none.
    func shard(_ name: String) -> IntelShard {
        shards.withLock { s in
            if let shard = s[name] { return shard }
            let shard = IntelShard(name: name, store: store, configuration: configuration, rooms: rooms, clock: clock)
            s[name] = shard
            return shard
        }
    }

    /// The shards this node has an actor for.
    var held: [IntelShard] { shards.withLock { Array($0.values) } }

    /// This node took shard `name`'s lease: what it held of it may be stale.
    public func invalidate(_ name: String) { shards.withLock { $0[name] }?.invalidate() }

    /// Shard `name` is another node's now: its actor here goes (its memory with it).
    func release(_ name: String) {
        _ = shards.withLock { $0.removeValue(forKey: name) }
        _ = unheld.withLock { $0.removeValue(forKey: name) }
    }

    /// The shard item `id` names, or `not_found` if it names none.
    private func shard(ofItem id: String) throws(ProtocolError) -> String {
        guard let name = IntelShards.shard(ofID: id) else { throw .notFound("no live item \(id)") }
        return name
    }

    /// Live items on this node (tests, metrics).
    public var liveCount: Int {
        get async {
            var count = 0
            for shard in held { count += await shard.liveCount }
            return count
        }
    }

    /// When the next item of a shard held here falls due, if any.
    public var nextExpiry: Double? {
        get async {
            var next: Double?
            for shard in held { if let at = await shard.nextExpiry { next = min(next ?? at, at) } }
            return next
        }
    }

    public func item(_ id: String) async throws(ProtocolError) -> IntelItem? {
        try await shard(shard(ofItem: id)).item(id)
    }

    /// The live items inside `corridor`'s band, of the shards this node holds (tests, tools).
    public func items(in corridor: Corridor) async -> [IntelItem] {
        let covering = Set(configuration.shards.shards(covering: corridor))
        var found: [IntelItem] = []
        for shard in held where covering.contains(shard.name) { found += await shard.items(in: corridor) }
        return found
    }

    /// Posts an item; returns it once it is durable (run on its shard's owner).
    public func post(_ draft: Draft, by author: IntelItem.Author, now: Double) async throws(ProtocolError) -> Posted {
        try await shard(configuration.shards.shard(of: draft.point)).post([(draft, author)], now: now)[0].get()
    }

    /// Posts several items (a provider's batch), each in its shard, on that shard's owner (here or
    /// over the link), the shards side by side: each draft is accepted or refused on its own
    /// (`at` out of range, or its shard's write failed: `unavailable`); returned in order.
    public func post(_ drafts: [(Draft, IntelItem.Author)], now: Double) async -> [Result<Posted, ProtocolError>] {
        let byShard = Dictionary(grouping: drafts.indices, by: { configuration.shards.shard(of: drafts[$0].0.point) })
        // Each shard's part in chunks (a chunk is one write, and one message over the link).
        let parts = byShard.flatMap { name, indices in
            stride(from: 0, to: indices.count, by: ShardOp.maxDrafts).map { (name, Array(indices[$0..<min($0 + ShardOp.maxDrafts, indices.count)])) }
        }
        var results = [Result<Posted, ProtocolError>?](repeating: nil, count: drafts.count)
        await withTaskGroup(of: ([Int], [Result<Posted, ProtocolError>]).self) { group in
            for (name, indices) in parts {
                group.addTask {
                    let part = indices.map { drafts[$0] }
                    do throws(ProtocolError) {
                        return (indices, try await self.postPart(part, in: name, now: now))
                    } catch {
                        return (indices, indices.map { _ in .failure(error) })
                    }
                }
            }
            for await (indices, part) in group { for (i, result) in zip(indices, part) { results[i] = result } }
        }
        return results.map { $0! }
    }

    /// Drafts of shard `name`, posted by its owner.
    private func postPart(_ drafts: [(Draft, IntelItem.Author)], in name: String, now: Double) async throws(ProtocolError)
        -> [Result<Posted, ProtocolError>] {
        if let owners, let answer = try await owners.call(ShardOp.post, args: ShardOp.postArguments(drafts, shard: name, now: now),
                                                           on: CorridorHost.logRoom(name)) {
            return try ShardOp.posted(answer, count: drafts.count)
        }
        return try await shard(name).post(drafts, now: now)
    }

    /// A like by `user`: once, never their own; the item lives `ttlSeconds` from now. Returns the
    /// item as it now is, once durable.
    public func like(_ id: String, by user: String, now: Double) async throws(ProtocolError) -> Shown {
        try await shard(shard(ofItem: id)).like(id, by: user, now: now)
    }

    /// A comment by `user` on a live item; returns the item as it now is, once durable.
    public func comment(_ id: String, by user: String, text: String, now: Double) async throws(ProtocolError) -> Shown {
        try await shard(shard(ofItem: id)).comment(id, by: user, text: text, now: now)
    }

    /// Links two live items (each shows the other); returns both as they now are, once durable,
    /// with their posters' names. Run on `id`'s shard's owner. Items of two shards are linked in
    /// two halves, `to`'s first (on its owner), then `id`'s: a half is never made twice, so a link
    /// whose second half failed is completed by the next attempt, and only a link whose halves
    /// were both made already is `conflict`.
    public func link(_ id: String, to other: String, by user: String, now: Double) async throws(ProtocolError)
        -> (item: IntelItem, to: IntelItem, aliases: [String: String]) {
        guard id != other else { throw .badRequest("field to: an item cannot be linked to itself") }
        let home = try shard(ofItem: id), away = try shard(ofItem: other)
        if home == away { return try await shard(home).link(id, to: other, by: user, now: now) }
        let mine = shard(home)
        let before = try await mine.linking(id, to: other)
        // Corridors holding both items hear of the link from the half made last: `id`'s, unless
        // it was made already (then the other's speaks for them too).
        let far = try await linkHalf(other, to: before.item, side: before.made ? .item : .to, by: user, now: now)
        let near = try await mine.linkHalf(id, to: far.item, side: .item, by: user, now: now)
        guard near.made || far.made else { throw .conflict("\(id) and \(other) are linked already") }
        return (near.item, far.item, near.aliases.merging(far.aliases) { a, _ in a })
    }

    /// One half of a link, made by the owner of `id`'s shard (here or over the link).
    func linkHalf(_ id: String, to other: IntelItem, side: IntelEntry.LinkSide, by user: String, now: Double) async throws(ProtocolError)
        -> (item: IntelItem, made: Bool, aliases: [String: String]) {
        let name = try shard(ofItem: id)
        if let owners, let answer = try await owners.call(ShardOp.linkHalf, args: ShardOp.linkArguments(id, to: other, side: side, by: user, now: now),
                                                           on: CorridorHost.logRoom(name)) {
            return try ShardOp.linked(answer)
        }
        return try await shard(name).linkHalf(id, to: other, side: side, by: user, now: now)
    }

    /// Live items in a box (`minLon > maxLon`: across the antimeridian) that happened between
    /// `since` and `until` and pass `filter`, newest first, at most `maxQueryResults`: read from
    /// the store, on any node (the shards' owners write every change before they answer it).
    public func query(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double, since: Double?, until: Double?,
                      filter: IntelFilter) async throws(ProtocolError) -> (items: [IntelItem], truncated: Bool) {
        let now = clock(), limit = configuration.maxQueryResults
        let box = IntelRows.Box(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon)
        let accept: (@Sendable (IntelItem) -> Bool)? = filter.isEmpty ? nil : { @Sendable item in filter.matches(item) }
        do {
            let found: (items: [IntelItem], truncated: Bool) = try await store.read { db in
                try IntelRows.newest(in: box, since: since, until: until, now: now, limit: limit, accept: accept, db)
            }
            return found
        } catch {
            throw ProtocolError(.unavailable, "could not read the intel; try again")
        }
    }

    /// The live items of `ids` as the store has them (those of any shard, on any node), in order.
    public func stored(_ ids: [String]) async throws(ProtocolError) -> [IntelItem] {
        guard !ids.isEmpty else { return [] }
        let now = clock()
        do {
            let found = try await store.read { db in try IntelRows.items(ids, now: now, db) }
            let byID = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            return ids.compactMap { byID[$0] }
        } catch {
            throw ProtocolError(.unavailable, "could not read the linked items; try again")
        }
    }

    /// An item's newest `limit` comments, oldest first, and whether older ones were left out.
    public func comments(of id: String, limit: Int) async throws(ProtocolError) -> (comments: [Comment], truncated: Bool) {
        do {
            return try await store.read { db in try IntelRows.comments(of: id, limit: limit, db) }
        } catch {
            throw ProtocolError(.unavailable, "could not read comments")
        }
    }

    /// A user's karma: what every shard gave them.
    public func karma(of user: String) async throws(ProtocolError) -> Int {
        do {
            return try await store.read { db in try IntelRows.karma(of: user, db) }
        } catch {
            throw ProtocolError(.unavailable, "could not read karma")
        }
    }

    /// A provider's batch of named items (`NamedItem`), in one durable write, in the `named`
    /// shard (run on its owner): each is added, revised or left as it is; `ending` says which
    /// others of `scope` end. Returns what changed (for the corridors' pushes) and how many were
    /// unchanged, once durable. A named item whose end is past ends (or is ignored if it is not
    /// live). A failed write refuses the whole batch.
    public func apply(_ batch: [NamedItem], scope: String, ending: NamedEnding, now: Double) async throws(ProtocolError)
        -> (changes: [NamedChange], unchanged: Int) {
        try await shard(IntelShards.named).apply(batch, scope: scope, ending: ending, now: now)
    }

    /// Part of a provider's batch applied by the `named` shard's owner (here or over the link).
    func applyOnOwner(_ part: [NamedItem], scope: String, ending: NamedEnding, now: Double) async throws(ProtocolError) -> NamedIntelFeed.Outcome {
        if let owners, let answer = try await owners.call(ShardOp.apply, args: ShardOp.applyArguments(part, scope: scope, ending: ending, now: now),
                                                           on: CorridorHost.logRoom(IntelShards.named)) {
            return try ShardOp.applied(answer)
        }
        let (changes, unchanged) = try await apply(part, scope: scope, ending: ending, now: now)
        return NamedIntelFeed.Outcome(changes, unchanged: unchanged)
    }

    /// The id of the item a provider names `reference`: the same whenever it comes back.
    static func id(of reference: String) -> String {
        "n" + Base64.encodeURL(Array(Digest.sha256(Array(reference.utf8)).prefix(12)))
    }

    /// Expires what is due at `now` in every shard held here (`holds`: whether this node holds a
    /// shard's lease now, by what it knows); returns what expired. A shard not held now is left
    /// alone (its lease may only be late in its renewal); one not held for `releaseAfter` seconds
    /// goes from this node, its memory with it (another node took it: taking it back reads it again).
    public func expire(now: Double, holds: @escaping @Sendable (String) -> Bool = { _ in true }, releaseAfter: Double = 60) async -> [IntelItem] {
        var active: [IntelShard] = []
        for shard in held {
            let here = holds(shard.room)
            let since = unheld.withLock { u -> Double? in
                if here { u[shard.name] = nil; return nil }
                if u[shard.name] == nil { u[shard.name] = now }
                return u[shard.name]
            }
            if here { active.append(shard) } else if let since, now - since >= releaseAfter { release(shard.name) }
        }
        return await withTaskGroup(of: [IntelItem].self) { group in
            for shard in active { group.addTask { await shard.expire(now: now) } }
            return await group.reduce(into: []) { $0 += $1 }
        }
    }

    /// Claims every shard holding live items whose lease nobody holds (one node: every one) and
    /// makes its actor here, so its items expire when no op comes for them.
    public func claimUnheld(now: Double, rooms: (any LoggedRooms)?) async {
        guard let live = try? await store.read({ db in try IntelRows.liveShards(now: now, db) }) else { return }
        let mine = Set(held.map(\.name))
        let others = live.filter { !mine.contains($0) }.map(CorridorHost.logRoom)
        guard !others.isEmpty else { return }
        let claimed = await rooms?.claimUnheld(others) ?? others
        for room in claimed { if let name = RoomName(room)?.id { _ = shard(name) } }
    }

    /// Given tags (already checked) then the body's hashtags, each once.
    static func merged(_ given: [String], _ found: [String]) -> [String] {
        var seen = Set<String>()
        return (given.map { $0.lowercased() } + found).filter { seen.insert($0).inserted }
    }
}
