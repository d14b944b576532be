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
/// A shard's copy is read once from the store (its live items and its log's head, in one read)
/// when the first corridor here needs it, and let go when the last one goes. A copy whose log
/// began a new epoch cannot know what it missed: it is read again, and its corridors are dropped
/// (loaded again, each in a new epoch, their watchers take a snapshot).
final class CorridorHost: Sendable {
    /// A node's copy of one shard: its live items as its log has them up to `head`.
    private struct ShardCopy {
        var head: RoomHead
        var items: [String: LiveItem]
        let follower: LogFollower
        /// The corridors here that follow it.
        var corridors: Set<String> = []
        /// Its last entries (at least `recentEntries`, at most twice that): a corridor going on in
        /// its epoch takes from here those that came between its read of the log and its
        /// registration, so a busy shard does not send it back to a new epoch.
        var recent: [LoggedPush] = []
    }

    /// Entries each copy keeps (`ShardCopy.recent`).
    static let recentEntries = 128

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
    /// Every corridor here stages its pushes in this writer; `flush` writes them, many corridors'
    /// in one change. After a failed write every corridor here is dropped (its room forgotten by
    /// the writer) and a new writer takes over: each is loaded again (see `load`).
    private let writing: Mutex<Writing>

    private struct Writing {
        var writer: RoomWriter
        /// A flush is scheduled and has not taken the staged pushes yet.
        var flushing = false
    }

    /// Whether this node holds a corridor's lease now (no claim; one node: always).
    private let holdsNow: @Sendable (String) -> Bool
    /// The most shard entries a corridor loaded here replays to go on in its epoch
    /// (`routes.corridorReplayEntries`; 0: every load is a new epoch).
    let maxReplay: Int
    /// Corridors a failed write showed past their durable head (`RoomWriteFailure.renewEpoch`):
    /// their next load is a new epoch.
    private let renewing = Mutex<Set<String>>([])

    init(store: Store, feed: RoomFeed, directory: CorridorDirectory, shards: IntelShards, grid: GeoGrid, logger: Logger,
         maxReplay: Int = 5_000, holdsNow: @escaping @Sendable (String) -> Bool = { _ in true }) {
        self.holdsNow = holdsNow
        self.maxReplay = maxReplay
        self.store = store
        self.feed = feed
        self.directory = directory
        self.shards = shards
        self.logger = logger
        state = Mutex(State(index: CorridorIndex(grid: grid)))
        writing = Mutex(Writing(writer: RoomWriter(store: store, feed: feed, logger: logger)))
    }

    /// Whether `actor` is its corridor's live actor here, on a node that holds its lease (by what
    /// `holdsNow` knows): one that is not is dropped, so a node whose lease lapsed stops writing
    /// before another node can take the corridor (a write to a room another node moved on fails,
    /// and with it every corridor's pushes in that write).
    private func isCurrent(_ actor: CorridorActor) -> Bool {
        guard live(actor.id) === actor else { return false }
        guard holdsNow(RoutePush.room(actor.id)) else {
            logger.warning("routes: this node's lease on a corridor is lapsing; it stops pushing there", metadata: ["corridor": "\(actor.id)"])
            drop(actor.id, orphaned: true)
            return false
        }
        return true
    }

    /// Writes what the corridors here staged, soon: one flush at a time is scheduled, and it
    /// takes whatever every corridor staged until it runs.
    private func flush() {
        let start = writing.withLock { w -> Bool in
            defer { w.flushing = true }
            return !w.flushing
        }
        guard start else { return }
        Task {
            let writer = writing.withLock { w -> RoomWriter in
                w.flushing = false
                return w.writer
            }
            // One flush hands its pushes to the store at a time: `submit` takes the staged pushes,
            // then queues their write, and two flushes between those steps on two threads queued
            // a room's later pushes before its earlier ones (its head check refused them, and
            // every corridor here started afresh).
            submitting.withLock { _ in
                guard writer.hasStaged else { return }
                writer.submit({ _ in }) { [weak self] outcome in
                    if case .failure(let failure) = outcome { self?.failed(writer, renew: failure.renewEpoch) }
                }
            }
        }
    }

    /// Held while a flush hands its pushes to the store (see `flush`).
    private let submitting = Mutex(())

    /// A write of the corridors' pushes failed: every corridor here goes and a new writer takes
    /// over. Each is loaded again from its durable head and position (the pushes that failed were
    /// never delivered), but those `renew` names (a snapshot showed their lost pushes) in a new
    /// epoch: their watchers take a snapshot.
    private func failed(_ writer: RoomWriter, renew: Set<String>) {
        let replaced = writing.withLock { w -> Bool in
            guard w.writer === writer else { return false }
            w.writer = RoomWriter(store: store, feed: feed, logger: logger)
            return true
        }
        guard replaced else { return }
        renewing.withLock { $0.formUnion(renew.compactMap { RoomName($0)?.id }) }
        logger.warning("routes: the corridors' pushes could not be written; every corridor here is loaded again")
        for id in liveIDs { drop(id, orphaned: true) }
    }

    /// Corridors dropped here while someone may watch them (a failed write, a lease lapsing), to be
    /// loaded again by this node's next look (`takeOver`) if it holds them: their watchers may be on
    /// other nodes, which would not load a corridor whose lease this node still holds.
    private let orphans = Mutex<Set<String>>([])

    /// Every `routes.takeOverSeconds`: corridors that should be live and are not, loaded. Those
    /// watched here (`watched`, ids) and those this node dropped while watched (a failed write, a
    /// lease lapsing): loaded here if this node holds their lease, else claimed if nobody does (their
    /// node died) and loaded. A corridor another node holds is left to it.
    func takeOver(watched: [String], rooms: (any LoggedRooms)?) async {
        let dropped = orphans.withLock { o -> Set<String> in
            defer { o = [] }
            return o
        }
        let wanted = Set(watched).union(dropped).filter { live($0) == nil }
        guard !wanted.isEmpty else { return }
        var unsure: [String] = []
        for id in wanted {
            if holdsNow(RoutePush.room(id)) { _ = try? await open(id) } else { unsure.append(RoutePush.room(id)) }
        }
        guard let rooms, !unsure.isEmpty else { return }
        for room in await rooms.claimUnheld(unsure) {
            if let id = RoomName(room)?.id { _ = try? await open(id) }
        }
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
        let handed: [(CorridorActor, CorridorStep)] = state.withLock { s in
            guard var copy = s.copies[shard] else { return [] }
            guard push.epoch == copy.head.epoch else {
                reset = true
                return []
            }
            guard push.seq == copy.head.seq + 1 else { return [] } // the feed hands each once, in order
            copy.head.seq = push.seq
            copy.recent.append(push)
            if copy.recent.count > 2 * Self.recentEntries { copy.recent.removeFirst(copy.recent.count - Self.recentEntries) }
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
                copy.corridors.contains(id) ? s.corridors[id].map { ($0, CorridorStep(actions: list, shard: shard, at: copy.head)) } : nil
            }
        }
        for (corridor, step) in handed { corridor.enqueue(step) }
        if reset {
            logger.notice("routes: an intel shard's log began a new epoch; its corridors here start afresh", metadata: ["shard": "\(shard)"])
            Task { self.resetCopy(shard) }
        }
    }

    /// What `change` means for each corridor whose band holds its items (`containing`: the ids of
    /// those holding any of some points): the node's corridors as an entry arrives, or one
    /// corridor as it replays entries it has not pushed yet.
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

    /// The copy of `shard` is read again; its corridors are dropped (loaded again in a new epoch).
    private func resetCopy(_ shard: String) {
        let (follower, dropped) = state.withLock { s -> (LogFollower?, [String]) in
            guard let copy = s.copies.removeValue(forKey: shard) else { return (nil, []) }
            return (copy.follower, Array(copy.corridors))
        }
        if let follower { feed.unfollow(Self.logRoom(shard), follower) }
        for id in dropped { drop(id) }
    }

    // MARK: Opening and dropping corridors

    /// Corridor `id` live here, loaded if it was not: its definition read, and its room going on in
    /// its epoch from the position its last durable push carried (the shards' entries since then,
    /// which it never pushed, replayed first), or, when it cannot (no position, a shard log in
    /// another epoch or pruned, more than `maxReplay` entries, a failed write that showed a lost
    /// push), moved to a new epoch: its watchers take a snapshot. `not_found` if no such corridor
    /// was ever stored; `unavailable` if it could not be read.
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
        // `once`: a second load would move the live room to a new epoch under its writer.
        guard live(id) == nil else { return }
        failures.withLock { $0[id] = nil }
        func fail(_ error: ProtocolError) { failures.withLock { $0[id] = error } }
        let room = RoutePush.room(id)
        let definition: CorridorDefinition, stored: (head: RoomHead, position: String?)?
        do {
            // Read in the write queue, behind any write of this room's pushes still in it (an
            // actor dropped here while its flush was in flight): the head is the last one written.
            let read = try await store.write { db in (try CorridorDirectory.definitions([id], db).first, try RoomLogRows.position(of: room, db)) }
            guard let found = read.0 else { return fail(.notFound("no corridor \(id)")) }
            definition = found
            stored = read.1
        } catch {
            logger.warning("routes: could not read a corridor", metadata: ["corridor": "\(id)", "error": "\(error)"])
            return fail(ProtocolError(.unavailable, "could not load the corridor; try again"))
        }
        await once("placement") { await self.place() }
        let covered = shards.shards(covering: definition.corridor) + (placed.withLock { $0 } ?? [])
        for shard in covered { await copy(shard) }
        let fresh = renewing.withLock { $0.remove(id) != nil }
        // Going on in its epoch needs the shards' heads not to move between the read of the entries
        // after its position and its registration: tried a few times, then a new epoch.
        for attempt in 0... {
            let heads = state.withLock { s in covered.compactMap { name in s.copies[name].map { (name, $0.head) } } }
            guard heads.count == covered.count else { return fail(ProtocolError(.unavailable, "the corridor is reloading; try again")) }
            var replay: (position: CorridorPosition, steps: [CorridorStep])?
            if !fresh, attempt < 3, let stored, let text = stored.position, let from = CorridorPosition(text: text) {
                replay = await self.replay(definition.corridor, from: from, to: heads).map { (from, $0) }
            }
            let head: RoomHead
            if let stored, replay != nil {
                head = stored.head
            } else {
                do {
                    head = try await store.write { db in
                        let head = try RoomLogRows.renewEpoch(of: room, db)
                        try RoomLogRows.setPosition("", of: room, db) // none until the registration's, below
                        return head
                    }
                } catch {
                    logger.warning("routes: could not load a corridor", metadata: ["corridor": "\(id)", "error": "\(error)"])
                    return fail(ProtocolError(.unavailable, "could not load the corridor; try again"))
                }
            }
            switch register(id, definition, covered: covered, head: head, replay: replay, expecting: heads) {
            case .opened:
                if let replay {
                    logger.info("routes: a corridor loaded here, going on in its epoch",
                                metadata: ["corridor": "\(id)", "seq": "\(head.seq)", "replayed": "\(replay.steps.count)"])
                } else {
                    logger.info("routes: a corridor loaded here, in a new epoch", metadata: ["corridor": "\(id)", "seq": "\(head.seq)", "epoch": "\(head.epoch)"])
                }
                return
            case .reset:
                return fail(ProtocolError(.unavailable, "the corridor is reloading; try again"))
            case .moved:
                continue
            }
        }
    }

    private enum Registration { case opened, reset, moved }

    /// Registers corridor `id` at `head` under the host's lock, with its items from the copies as
    /// they are now. Going on in its epoch (`replay`, read up to `expecting`): with the entries
    /// since then from the copies' recent ones (`moved` if they no longer hold them all: the caller
    /// tries again), its replay staged first. In a new epoch: its
    /// position is the copies' heads now, queued for writing before anything it stages.
    private func register(_ id: String, _ definition: CorridorDefinition, covered: [String], head: RoomHead,
                          replay: (position: CorridorPosition, steps: [CorridorStep])?, expecting: [(String, RoomHead)]) -> Registration {
        state.withLock { s -> Registration in
            guard s.corridors[id] == nil else { return .opened }
            // Read under the lock: a writer replaced after a failure drops every corridor it
            // finds live, so one opened with the old writer is dropped too.
            let writer = writing.withLock { $0.writer }
            // A copy reset meanwhile: the next caller loads again.
            guard covered.allSatisfy({ s.copies[$0] != nil }) else { return .reset }
            let now = CorridorPosition(Dictionary(covered.map { ($0, s.copies[$0]!.head) }, uniquingKeysWith: { a, _ in a }))
            var replay = replay
            if replay != nil {
                // The entries that came since the read, from the copies' recent ones.
                for (shard, read) in expecting where s.copies[shard]!.head != read {
                    let head = s.copies[shard]!.head
                    let since = s.copies[shard]!.recent.filter { $0.seq > read.seq && $0.seq <= head.seq }
                    guard head.epoch == read.epoch, since.count == Int(head.seq - read.seq),
                          let more = Self.steps(since, shard: shard, epoch: head.epoch, corridor: definition.corridor) else { return .moved }
                    replay!.steps += more
                }
            } else if maxReplay > 0 {
                let room = RoutePush.room(id), text = now.text, logger = self.logger
                store.submit({ db in try RoomLogRows.setPosition(text, of: room, db) }) { outcome in
                    if case .failure(let error) = outcome {
                        logger.warning("routes: a corridor's position could not be written; its next load is a new epoch",
                                       metadata: ["corridor": "\(id)", "error": "\(error)"])
                    }
                }
            }
            s.index.insert(definition.corridor, id: id)
            var items: [String: LiveItem] = [:]
            for shard in covered {
                s.copies[shard]!.corridors.insert(id)
                for (itemID, live) in s.copies[shard]!.items where live.item.points.contains(where: { s.index.corridor(id, contains: $0) }) {
                    items[itemID] = live
                }
            }
            s.follows[id] = covered
            s.corridors[id] = CorridorActor(id: id, corridor: definition.corridor, owner: definition.owner, items: items, position: now,
                                            keepsPosition: maxReplay > 0, replay: replay.map { ($0.position, $0.steps) }, head: head, writer: writer, now: Date().timeIntervalSince1970,
                                            flush: { [weak self] in self?.flush() }, current: { [weak self] actor in self?.isCurrent(actor) ?? false })
            if replay.map({ !$0.steps.isEmpty }) ?? false { flush() }
            return .opened
        }
    }

    /// What corridor `corridor` has not pushed yet: each shard's entries after `from` up to
    /// `heads`, read from the store, as this corridor alone takes them (an entry that does not
    /// concern it is no step). Nil when it cannot go on: a shard it has no position in (it follows
    /// another shard now), a shard log in another epoch, entries gone (`rooms.logRetentionSeconds`),
    /// or more than `maxReplay` entries in all.
    private func replay(_ corridor: Corridor, from: CorridorPosition, to heads: [(String, RoomHead)]) async -> [CorridorStep]? {
        var wanted: [(shard: String, after: UInt64, head: RoomHead)] = [], total: UInt64 = 0
        for (shard, head) in heads {
            guard let at = from[shard: shard], at.epoch == head.epoch, at.seq <= head.seq else { return nil }
            total += head.seq - at.seq
            if head.seq > at.seq { wanted.append((shard, at.seq, head)) }
        }
        guard total <= UInt64(maxReplay) else { return nil }
        guard !wanted.isEmpty else { return [] }
        let read: [(String, [LoggedPush])], asked = wanted
        do {
            read = try await store.read { db in
                try asked.map { w in (w.shard, try RoomLogRows.read(Self.logRoom(w.shard), epoch: w.head.epoch, after: w.after, limit: Int(w.head.seq - w.after), db)) }
            }
        } catch {
            logger.warning("routes: could not read the intel a corridor missed; it starts afresh", metadata: ["error": "\(error)"])
            return nil
        }
        var steps: [CorridorStep] = []
        for ((shard, pushes), w) in zip(read, wanted) {
            // Every entry, none missing (a retention may have removed the oldest).
            guard pushes.count == Int(w.head.seq - w.after), pushes.first?.seq == w.after + 1,
                  let more = Self.steps(pushes, shard: shard, epoch: w.head.epoch, corridor: corridor) else { return nil }
            steps += more
        }
        return steps
    }

    /// Shard `shard`'s entries `pushes` (in order) as `corridor` alone takes them; nil if one is
    /// not an entry.
    private static func steps(_ pushes: [LoggedPush], shard: String, epoch: String, corridor: Corridor) -> [CorridorStep]? {
        var steps: [CorridorStep] = []
        for push in pushes {
            guard let entry = IntelEntry(push: push) else { return nil }
            let live = Dictionary(entry.items.map { ($0.id, LiveItem($0, aliases: entry.aliases)) }, uniquingKeysWith: { a, _ in a })
            let actions = Self.actions(entry.change, live: live) { points in points.contains(where: corridor.contains) ? ["here"] : [] }["here"] ?? []
            steps.append(CorridorStep(actions: actions, shard: shard, at: RoomHead(seq: push.seq, epoch: epoch)))
        }
        return steps
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

    /// Corridor `id` is no longer live here (retired, dropped after a failed write, its lease
    /// taken by another node, its owner's recording gone). A shard no corridor here follows any
    /// more is let go.
    func drop(_ id: String, orphaned: Bool = false) {
        if orphaned { orphans.withLock { _ = $0.insert(id) } }
        let released = state.withLock { s -> [(String, LogFollower)]? in
            guard s.corridors.removeValue(forKey: id) != nil else { return nil }
            s.index.remove(id: id)
            // Under the lock: a load of the same corridor after this adopts its room afresh.
            writing.withLock { $0.writer }.drop(RoutePush.room(id))
            var released: [(String, LogFollower)] = []
            for shard in s.follows.removeValue(forKey: id) ?? [] {
                s.copies[shard]?.corridors.remove(id)
                if let copy = s.copies[shard], copy.corridors.isEmpty {
                    s.copies[shard] = nil
                    released.append((shard, copy.follower))
                }
            }
            return released
        }
        guard let released else { return }
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

    /// Retires corridors here that nobody used within `window` seconds, on any node (`used`: their
    /// `last_used`) or here, while no write is in flight.
    func retire(now: Double, window: Double, used: Set<String>) {
        guard writing.withLock({ $0.writer }).inFlight == 0 else { return }
        let idle = state.withLock { s in
            s.corridors.values.filter { !used.contains($0.id) && now - $0.lastActivity > window }.map(\.id)
        }
        for id in idle { drop(id) }
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
