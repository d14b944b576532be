import DomainSeam
import Foundation
import Logging
import Realtime
import RoomLog
import Routes
import Storage
import Synchronization

/// The corridors live on this node and the copies of the intel shards they follow. Each shard's
/// log (room `intel:<shard>`, written by the shard's owner, on any node) reaches this node through
/// its `RoomFeed` in `seq` order; the host applies each entry to its copy of the shard and, in the
/// same step, hands it to the corridors here whose band holds the item (a `CorridorIndex` finds
/// them, as the one hub did). A corridor opened here takes its items from the copies and is handed
/// every entry after them, under one lock: what its snapshot shows and what it pushes meet exactly.
///
/// Every node runs the corridors its own members watch (their rooms are `RoomPlacement.local`):
/// no lease, no write. A corridor is loaded on its first watcher here, in a new epoch, and retired
/// `routes.retireAfterSeconds` after its last one left.
///
/// A shard's copy is read once from the store (its live items and its log's head, in one read)
/// when the first corridor here needs it, and let go when the last one goes. A copy whose log
/// began a new epoch cannot know what it missed: it is read again, and its corridors are loaded
/// again, each in a new epoch (their watchers take a snapshot).
final class CorridorHost: Sendable {
    /// A node's copy of one shard: its live items as its log has them up to `head`.
    private struct ShardCopy {
        var head: RoomHead
        var items: [String: LiveItem]
        let follower: LogFollower
        /// The corridors here that follow it.
        var corridors: Set<String> = []
    }

    private struct State {
        var copies: [String: ShardCopy] = [:]
        var index: CorridorIndex
        var corridors: [String: CorridorActor] = [:]
        /// The shards each live corridor follows.
        var follows: [String: [String]] = [:]
    }

    let shards: IntelShards
    private let store: Store
    private let feed: RoomFeed
    let directory: CorridorDirectory
    private let logger: Logger
    private let state: Mutex<State>
    /// Loads under way (of a corridor, or of a shard's copy: `shard:<name>`), so many callers wait for one.
    private let loading = Mutex<[String: Task<Void, Never>]>([:])
    /// Corridors whose last load failed, and why (their callers are told).
    private let failures = Mutex<[String: ProtocolError]>([:])
    /// Nil until `place` ran; then the shards every corridor here
    /// follows besides its own cells' and `named` (cells of another `routes.shardDegrees` holding
    /// items still live, which are found nowhere else).
    private let placed = Mutex<[String]?>(nil)

    init(store: Store, feed: RoomFeed, directory: CorridorDirectory, shards: IntelShards, grid: GeoGrid, logger: Logger) {
        self.store = store
        self.feed = feed
        self.directory = directory
        self.shards = shards
        self.logger = logger
        state = Mutex(State(index: CorridorIndex(grid: grid)))
    }

    /// Every `routes.takeOverSeconds`: corridors watched here (`watched`, ids) that are not live
    /// (their shard's log began a new epoch, or a watcher joined as the corridor retired) are
    /// loaded again, in a new epoch: their watchers take a snapshot.
    func reopen(watched: [String]) async {
        for id in watched where live(id) == nil { _ = try? await open(id) }
    }

    /// The room of shard `shard`'s log.
    static func logRoom(_ shard: String) -> String { "intel:\(shard)" }

    /// Live corridors here (tests, metrics).
    var count: Int { state.withLock { $0.corridors.count } }

    /// Corridor `id` if it is live here.
    func live(_ id: String) -> CorridorActor? { state.withLock { $0.corridors[id] } }

    // MARK: Entries

    /// One push of shard `shard`'s log, in order (under the feed's lock: decided and handed on).
    private func received(_ push: LoggedPush, shard: String) {
        guard let entry = IntelEntry(push: push) else {
            logger.error("routes: an entry of an intel shard's log that is not one", metadata: ["room": "\(push.room)", "seq": "\(push.seq)"])
            return
        }
        let live = Dictionary(entry.items.map { ($0.id, LiveItem($0, aliases: entry.aliases)) }, uniquingKeysWith: { a, _ in a })
        var reset = false
        let handed: [(CorridorActor, [CorridorAction])] = state.withLock { s in
            guard var copy = s.copies[shard] else { return [] }
            guard push.epoch == copy.head.epoch else {
                reset = true
                return []
            }
            guard push.seq == copy.head.seq + 1 else { return [] } // the feed hands each once, in order
            copy.head.seq = push.seq
            switch entry.change {
            case .added(let item), .updated(let item), .revised(let item, _): copy.items[item.id] = live[item.id]
            case .removed(let item): copy.items[item.id] = nil
            case .linked(let a, let b, _): for item in [a, b] where copy.items[item.id] != nil { copy.items[item.id] = live[item.id] }
            }
            let actions = Self.actions(entry.change, live: live) { s.index.corridors(containingAny: $0) }
            s.copies[shard] = copy
            // Only corridors that follow this shard take its entries (a corridor opened meanwhile
            // took the copy's items as of now, and follows from here).
            return actions.compactMap { id, list in
                copy.corridors.contains(id) ? s.corridors[id].map { ($0, list) } : nil
            }
        }
        for (corridor, actions) in handed { corridor.enqueue(actions) }
        if reset {
            logger.notice("routes: an intel shard's log began a new epoch; its corridors here start afresh", metadata: ["shard": "\(shard)"])
            Task { await self.resetCopy(shard) }
        }
    }

    /// What `change` means for each corridor whose band holds its items (`containing`: the ids of
    /// those holding any of some points).
    static func actions(_ change: IntelEntry.Change, live: [String: LiveItem],
                        containing: ([GeoPoint]) -> [String]) -> [String: [CorridorAction]] {
        var actions: [String: [CorridorAction]] = [:]
        func hand(_ action: CorridorAction, to ids: [String]) { for id in ids { actions[id, default: []].append(action) } }
        switch change {
        case .added(let item):
            hand(.add(live[item.id]!), to: containing(item.points))
        case .updated(let item):
            hand(.update(live[item.id]!), to: containing(item.points))
        case .revised(let item, let before):
            let was = Set(containing(before)), now = containing(item.points)
            let nowSet = Set(now)
            hand(.update(live[item.id]!), to: now.filter { was.contains($0) })
            hand(.add(live[item.id]!), to: now.filter { !was.contains($0) })
            hand(.remove(item.id), to: was.filter { !nowSet.contains($0) })
        case .removed(let item):
            hand(.remove(item.id), to: containing(item.points))
        case .linked(let a, let b, let side):
            let holdingA = containing(a.points)
            let targets: [String] = switch side {
            case .both: Array(Set(holdingA).union(containing(b.points)))
            case .item: holdingA
            case .to: containing(b.points).filter { !Set(holdingA).contains($0) }
            }
            hand(.link(live[a.id]!, to: live[b.id]!), to: targets)
        }
        return actions
    }

    /// The copy of `shard` is read again; its corridors are dropped, and those watched here loaded
    /// again at once, in a new epoch.
    private func resetCopy(_ shard: String) async {
        let (follower, dropped) = state.withLock { s -> (LogFollower?, [String]) in
            guard let copy = s.copies.removeValue(forKey: shard) else { return (nil, []) }
            return (copy.follower, Array(copy.corridors))
        }
        if let follower { feed.unfollow(Self.logRoom(shard), follower) }
        for id in dropped { drop(id) }
        await reopen(watched: dropped.filter { feed.isWatched(RoutePush.room($0)) })
    }

    // MARK: Opening and dropping corridors

    /// Corridor `id` live here, loaded if it was not: its definition read, the copies of the shards
    /// it covers read if this node has none, and its room begun in a new epoch. `not_found` if no
    /// such corridor was ever stored; `unavailable` if it could not be read.
    @discardableResult
    func open(_ id: String) async throws(ProtocolError) -> CorridorActor {
        if let actor = live(id) { return actor }
        await once(id) { await self.load(id) }
        if let actor = live(id) { return actor }
        throw failures.withLock { $0[id] } ?? ProtocolError(.unavailable, "could not load the corridor; try again")
    }

    /// Runs `work` under `key` unless it runs already; waits for it either way.
    private func once(_ key: String, _ work: @escaping @Sendable () async -> Void) async {
        let task = loading.withLock { loading -> Task<Void, Never> in
            if let running = loading[key] { return running }
            let task = Task {
                await work()
                _ = self.loading.withLock { $0.removeValue(forKey: key) }
            }
            loading[key] = task
            return task
        }
        await task.value
    }

    private func load(_ id: String) async {
        // Opened by the load before this one, which ended between this caller's look and its
        // `once`: a second load would start the live room again in a new epoch.
        guard live(id) == nil else { return }
        failures.withLock { $0[id] = nil }
        func fail(_ error: ProtocolError) { failures.withLock { $0[id] = error } }
        let definition: CorridorDefinition
        do {
            guard let found = try await store.read({ db in try CorridorDirectory.definitions([id], db).first }) else {
                return fail(.notFound("no corridor \(id)"))
            }
            definition = found
        } catch {
            logger.warning("routes: could not read a corridor", metadata: ["corridor": "\(id)", "error": "\(error)"])
            return fail(ProtocolError(.unavailable, "could not load the corridor; try again"))
        }
        await once("placement") { await self.place() }
        let covered = shards.shards(covering: definition.corridor) + (placed.withLock { $0 } ?? [])
        for shard in covered { await copy(shard) }
        // Hosted by the feed outside the host's lock: the feed hands shard entries to `received`
        // under its own lock, which then takes the host's.
        let pushes = LocalRoom(RoutePush.room(id), feed: feed)
        guard register(id, definition, covered: covered, pushes: pushes) else {
            feed.unhost(pushes.name, epoch: pushes.head.epoch)
            return fail(ProtocolError(.unavailable, "the corridor is reloading; try again"))
        }
        logger.debug("routes: a corridor loaded here", metadata: ["corridor": "\(id)"])
    }

    /// Registers corridor `id` under the host's lock, with its items from the copies as they are
    /// now (it is handed every entry after them). False if a copy it needs is missing (it could
    /// not be read, or was reset meanwhile): the next caller loads again.
    private func register(_ id: String, _ definition: CorridorDefinition, covered: [String], pushes: LocalRoom) -> Bool {
        state.withLock { s -> Bool in
            guard s.corridors[id] == nil else { return true }
            guard covered.allSatisfy({ s.copies[$0] != nil }) else { return false }
            s.index.insert(definition.corridor, id: id)
            var items: [String: LiveItem] = [:]
            for shard in covered {
                s.copies[shard]!.corridors.insert(id)
                for (itemID, live) in s.copies[shard]!.items where live.item.points.contains(where: { s.index.corridor(id, contains: $0) }) {
                    items[itemID] = live
                }
            }
            s.follows[id] = covered
            s.corridors[id] = CorridorActor(id: id, corridor: definition.corridor, owner: definition.owner, items: items, pushes: pushes,
                                            now: Date().timeIntervalSince1970, current: { [weak self] actor in self?.live(actor.id) === actor })
            return true
        }
    }

    /// This node's copy of `shard`, read from the store if it has none: the shard's live items and
    /// its log's head in one read (a shard's items and its head move in one transaction, so they
    /// agree), then followed from that head on.
    private func copy(_ shard: String) async {
        guard state.withLock({ $0.copies[shard] == nil }) else { return }
        await once("shard:\(shard)") {
            guard self.state.withLock({ $0.copies[shard] == nil }) else { return }
            let room = Self.logRoom(shard), now = Date().timeIntervalSince1970
            let read: (items: [IntelItem], head: RoomHead)
            do {
                // A log nobody wrote yet has no head: it is made first (a read cannot).
                if try await self.store.read({ db in try RoomLogRows.heads(of: [room], db)[room] }) == nil {
                    _ = try await self.store.write { db in try RoomLogRows.head(of: room, db) }
                }
                read = try await self.store.read { db in
                    guard let head = try RoomLogRows.heads(of: [room], db)[room] else { throw StoreError.closed }
                    return (try IntelRows.live(now: now, shard: shard, db), head)
                }
            } catch {
                self.logger.warning("routes: could not read an intel shard", metadata: ["shard": "\(shard)", "error": "\(error)"])
                return
            }
            let names = await self.directory.aliases(read.items.compactMap(\.user))
            let follower = LogFollower { [weak self] push in self?.received(push, shard: shard) }
            self.state.withLock { s in
                s.copies[shard] = ShardCopy(head: read.head, items: Dictionary(read.items.map { ($0.id, LiveItem($0, aliases: names)) },
                                                                                uniquingKeysWith: { a, _ in a }), follower: follower)
            }
            if !self.feed.follow(room, at: read.head, follower) {
                // Connections watch it (the prefix is not a client's): it cannot be followed.
                self.logger.error("routes: an intel shard's log cannot be followed", metadata: ["shard": "\(shard)"])
                self.state.withLock { _ = $0.copies.removeValue(forKey: shard) }
            }
        }
    }

    /// Once per run of this node, before its first corridor: the cells of another size still
    /// holding live items are found (every corridor here follows them; see `placed`). Until it
    /// succeeds, corridors follow their own cells and `named`.
    private func place() async {
        guard placed.withLock({ $0 }) == nil else { return }
        let shards = self.shards, now = Date().timeIntervalSince1970
        do {
            let live = try await store.read { db in try IntelRows.liveShards(now: now, db) }
            let foreign = live.filter { !shards.isOnGrid($0) && $0 != IntelShards.named }.sorted()
            if !foreign.isEmpty {
                logger.notice("routes: live intel items in cells of another routes.shardDegrees; every corridor follows them until they expire",
                              metadata: ["shards": "\(foreign.count)"])
            }
            placed.withLock { $0 = foreign }
        } catch {
            logger.warning("routes: could not read which intel shards hold items", metadata: ["error": "\(error)"])
        }
    }

    /// Corridor `id` is no longer live here (retired, its shard's copy reset, its owner's
    /// recording gone). A shard no corridor here follows any more is let go.
    func drop(_ id: String) {
        let released = state.withLock { s -> (CorridorActor, [(String, LogFollower)])? in
            guard let actor = s.corridors.removeValue(forKey: id) else { return nil }
            s.index.remove(id: id)
            var released: [(String, LogFollower)] = []
            for shard in s.follows.removeValue(forKey: id) ?? [] {
                s.copies[shard]?.corridors.remove(id)
                if let copy = s.copies[shard], copy.corridors.isEmpty {
                    s.copies[shard] = nil
                    released.append((shard, copy.follower))
                }
            }
            return (actor, released)
        }
        guard let (actor, released) = released else { return }
        // Its load only: a load of the same corridor since hosts its room in an epoch of its own.
        feed.unhost(actor.room, epoch: actor.epoch)
        for (shard, follower) in released { feed.unfollow(Self.logRoom(shard), follower) }
    }

    /// Drops the live private corridors of `user` (to `destination`, or all): their recording or
    /// account is gone.
    func dropPrivate(of user: String, destination: String? = nil) {
        let ids = state.withLock { s in
            s.corridors.values.filter { c in c.owner.map { $0.user == user && (destination.map { $0 == c.owner?.destination } ?? true) } ?? false }.map(\.id)
        }
        for id in ids { drop(id) }
    }

    /// Retires the corridors here that nobody watched here within `window` seconds (`watched`: the
    /// ids watched here now, whose activity is marked `now`).
    func retire(now: Double, window: Double, watched: Set<String>) {
        let live = state.withLock { Array($0.corridors.values) }
        for c in live where watched.contains(c.id) { c.touch(at: now) }
        let idle = live.filter { !watched.contains($0.id) && now - $0.lastActivity > window }.map(\.id)
        // A watcher may have joined since `watched` was read.
        for id in idle where !feed.isWatched(RoutePush.room(id)) { drop(id) }
    }

    /// The ids of the live corridors here.
    var liveIDs: [String] { state.withLock { Array($0.corridors.keys) } }
}

extension CorridorIndex {
    /// The ids of the corridors whose band holds any of `points`, each once.
    func corridors(containingAny points: [GeoPoint]) -> [String] {
        guard points.count > 1 else { return points.first.map { corridors(containing: $0) } ?? [] }
        var seen = Set<String>()
        return points.flatMap { corridors(containing: $0) }.filter { seen.insert($0).inserted }
    }
}
