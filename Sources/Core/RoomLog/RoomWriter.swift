import Logging
import Realtime
import Storage
import Synchronization

/// The only way anything publishes to a room. One writer per owner (the actor that decides its
/// rooms' changes: a venue, an intel shard's log, an event's room, a user's stream),
/// used from that owner's isolation. A change goes:
/// 1. `admit()`, before the change touches memory: the one "too many changes are waiting" guard;
/// 2. `stage` (one room, or many) or `reserve`: each push
///    takes its room's next `seq` now, and is encoded once;
/// 3. `submit` (without waiting) or `commit` (awaited) with the domain's own rows: the pushes are
///    appended after them in the same savepoint of the same group transaction; `commitStream` for
///    a stream whose pushes are decided inside the transaction;
/// 4. once durable: `RoomFeed.deliver`, then the caller's completion (the reply).
///
/// **The failure policy**, the same for every owner. A change the store does not commit (disk
/// full, I/O error, a fenced head, a closed store):
/// - is never delivered; its caller is answered `unavailable` ("could not save the change; try
///   again"), and so is every change of its rooms behind it (their first seq no longer follows the
///   stored head: fenced);
/// - marks the writer `failed`: `admit()` refuses and every room's head is forgotten, until the
///   owner has made its memory what the store holds: an owner of one room `reload`s it from the
///   store; an owner of many (an intel shard) or one evicted (a venue) starts a new writer. Changes
///   staged before that fail or succeed on their own; a success is still delivered (it is durable);
/// - a room is loaded again in the same epoch, its lost seqs given to the next pushes (nobody saw
///   them), unless a snapshot showed a head past its durable one while a change was in flight
///   (`snapshot(of:)`): then the failure names it in `renewEpoch`, and the owner loads it in a new
///   epoch, so the feed closes members it holds at a seq that never came and they take a snapshot.
/// A refusal by `admit()` is not a failure: nothing changed, nothing needs a reload.
public final class RoomWriter: Sendable {
    private let store: Store
    private let feed: RoomFeed?
    private let log: any RoomLogTable
    private let logger: Logger
    private let state = Mutex(State())

    /// `feed` nil: nobody on this node listens (tools, tests of the rules alone); `log`: where the
    /// pushes are written (the store's room log unless a domain keeps its own, `RoomLogTable`).
    public init(store: Store, feed: RoomFeed?, log: any RoomLogTable = SharedRoomLog(), logger: Logger) {
        self.store = store
        self.feed = feed
        self.log = log
        self.logger = logger
    }

    // MARK: Rooms

    /// Takes `room` at `head`, read by the owner with its own state (a venue with its jukebox, a
    /// shard with its items). A room already held keeps its head.
    public func adopt(_ room: String, head: RoomHead) { state.withLock { _ = $0.hold(room, at: head) } }

    /// For an owner whose whole memory is one room (a user's stream, an event's room): takes `room`
    /// at `head`, just read from the store, and, as the owner's memory is the store's again, admits
    /// changes again after a failure. A room still held keeps its head and the writer its state.
    public func reload(_ room: String, head: RoomHead) {
        state.withLock { s in
            guard s.hold(room, at: head) else { return }
            s.failed = false
            s.generation += 1
            s.shown = []
        }
    }

    /// Lets go of `room` (idle, retired, dropped): its next use needs `adopt` again.
    public func drop(_ room: String) { _ = state.withLock { $0.rooms.removeValue(forKey: room) } }

    /// Whether `room` is held (adopted, and not dropped or forgotten by a failure since).
    public func holds(_ room: String) -> Bool { state.withLock { $0.rooms[room] != nil } }

    // MARK: Heads

    /// For a snapshot taken from the owner's memory (changes in flight included): the head with
    /// every staged push, and the `PushMark` of its last push while a change is in flight (the feed
    /// holds the subscriber's answer until that very push is delivered). Nil if `room` is not held.
    public func snapshot(of room: String) -> (head: RoomHead, mark: UInt64?)? {
        state.withLock { s in
            guard let held = s.rooms[room] else { return nil }
            guard s.inFlight > 0, held.staged.head != held.durable else { return (held.staged.head, nil) }
            s.shown.insert(room)
            return (held.staged.head, held.staged.headMark)
        }
    }

    /// For a snapshot read from the store: the head of the last push known durable.
    public func durableHead(of room: String) -> RoomHead? { state.withLock { $0.rooms[room]?.durable } }

    /// Changes handed to the store and not yet durable (an owner retires only at 0).
    public var inFlight: Int { state.withLock { $0.inFlight } }

    /// A change failed and the owner has not `reload`ed since.
    public var failed: Bool { state.withLock { $0.failed } }

    // MARK: Admitting

    /// Call before a change touches memory. `unavailable` while the store's queue is full
    /// ("too many changes are waiting to be written"), or while the writer has `failed`. Once a
    /// change is applied and staged, the store must take it: `submit` never refuses for the queue.
    public func admit() throws(ProtocolError) {
        if state.withLock({ $0.failed }) { throw ProtocolError(.unavailable, "could not save the change; try again") }
        guard store.acceptsWrites else { throw ProtocolError(.unavailable, "too many changes are waiting to be written; try again") }
    }

    // MARK: Staging (a room not held is skipped: nobody watches it)

    /// Stages `event` with `data` in `room`.
    public func stage(_ event: some RoomEvent, data: JSON, in room: String, at now: Double) {
        state.withLock { s in s.stage(room) { $0.stage(event, data: data, at: now) } }
    }

    /// Stages a push read in each reader's language: `data(nil)` is the original, `data(tag)` the
    /// version for `tag`, each encoded once.
    public func stage(_ event: some RoomEvent, languages: [String], data: (String?) -> JSON, in room: String, at now: Double) {
        state.withLock { s in s.stage(room) { $0.stage(event, languages: languages, data: data, at: now) } }
    }

    /// A seq for a push whose data only the change's transaction knows (a count read there); the
    /// change makes it with `RoomRows.push(_:_:data:at:)`, or fails (the log takes no hole). Nil if
    /// `room` is not held.
    public func reserve(in room: String) -> Reservation? {
        state.withLock { s in
            guard s.rooms[room] != nil else { return nil }
            s.touched.insert(room)
            let reservation = s.rooms[room]!.staged.reserve()
            s.reserved.append(reservation)
            return reservation
        }
    }

    /// Whether pushes are staged and not yet handed to a change.
    public var hasStaged: Bool { state.withLock { s in s.touched.contains { s.rooms[$0]?.staged.hasStaged == true } } }

    // MARK: Committing

    /// Hands the staged pushes and `rows` (the domain's own change) to the next group transaction
    /// without waiting (for owners that take the next change while this one is written: a venue).
    /// `rows` may run more than once (a retried group): only the run that commits counts. See the
    /// type's steps and failure policy. Taking the pushes and queueing their write are two steps:
    /// callers on several threads submit one at a time, or a room's
    /// later pushes may be queued before its earlier ones.
    public func submit<T: Sendable>(_ rows: @escaping @Sendable (RoomRows) throws -> T,
                                    completion: @escaping @Sendable (Result<T, RoomWriteFailure>) -> Void) {
        let (staged, rooms, reserved, generation) = state.withLock { s in
            let (pushes, rooms, reserved) = s.take()
            return (pushes, rooms, reserved, s.generation)
        }
        write(staged, rooms: rooms, reserved: reserved, stream: nil, generation: generation, rows, completion: completion)
    }

    /// `submit`, awaiting its outcome. The staged pushes are taken in the caller's isolation before
    /// it suspends, so no other step of the owner stages into this change.
    public func commit<T: Sendable>(isolation: isolated (any Actor)? = #isolation,
                                    _ rows: @escaping @Sendable (RoomRows) throws -> T) async throws(ProtocolError) -> T {
        let outcome: Result<T, RoomWriteFailure> = await withCheckedContinuation { done in submit(rows) { done.resume(returning: $0) } }
        return try outcome.mapError(\.protocolError).get()
    }

    /// A stream whose pushes are decided inside the transaction (a user's `user:` room: a suggestion
    /// is made once per user and event, which only the transaction knows): `rows` makes each with
    /// `RoomRows.push(_:data:at:)`, taking `room`'s next seq there. The owner writes its stream one
    /// change at a time (nothing else is staged in `room` meanwhile). Returns the pushes written,
    /// delivered already. `unavailable` if `room` is not held.
    public func commitStream(isolation: isolated (any Actor)? = #isolation, in room: String,
                             _ rows: @escaping @Sendable (RoomRows) throws -> Void) async throws(ProtocolError) -> [LoggedPush] {
        guard let (staged, rooms, reserved, head, generation) = state.withLock({ s -> ([[LoggedPush]], Set<String>, [Reservation], RoomHead, Int)? in
            guard let held = s.rooms[room] else { return nil }
            let (pushes, rooms, reserved) = s.take()
            return (pushes, rooms.union([room]), reserved, held.staged.head, s.generation)
        }) else {
            throw ProtocolError(.unavailable, "the room is reloading; try again")
        }
        let outcome: Result<[LoggedPush], RoomWriteFailure> = await withCheckedContinuation { done in
            write(staged, rooms: rooms, reserved: reserved, stream: (room, head), generation: generation, { r in try rows(r); return r.made }) {
                done.resume(returning: $0)
            }
        }
        return try outcome.mapError(\.protocolError).get()
    }

    private func write<T: Sendable>(_ staged: [[LoggedPush]], rooms: Set<String>, reserved: [Reservation],
                                    stream: (room: String, head: RoomHead)?, generation: Int,
                                    _ rows: @escaping @Sendable (RoomRows) throws -> T,
                                    completion: @escaping @Sendable (Result<T, RoomWriteFailure>) -> Void) {
        let log = self.log, ran = LastRun<T>()
        state.withLock { $0.inFlight += 1 }
        store.submit({ db in
            let r = RoomRows(db, stream: stream)
            let value = try rows(r)
            // A seq reserved and never pushed would leave a hole no later push could follow.
            for reservation in reserved where !r.made.contains(where: { $0.room == reservation.room && $0.seq == reservation.head.seq }) {
                throw RoomWriterError.reservationNotPushed(room: reservation.room, seq: reservation.head.seq)
            }
            let pushes = Self.merged(staged, r.made)
            try log.append(rooms: pushes, db)
            ran.set(value, pushes)
        }) { [self] outcome in
            let (value, pushes) = ran.get()
            switch outcome {
            case .success:
                state.withLock { $0.committed(pushes, generation: generation) }
                feed?.deliver(pushes.flatMap { $0 })
                completion(.success(value!))
            case .failure(let error):
                let renew = state.withLock { $0.failed(rooms, generation: generation) }
                logger.warning("a change and its pushes could not be written", metadata: [
                    "rooms": "\(rooms.sorted().prefix(5).joined(separator: ","))\(rooms.count > 5 ? ",..." : "")", "error": "\(error)",
                ])
                completion(.failure(RoomWriteFailure(error: error, renewEpoch: renew)))
            }
        }
    }

    /// Each room's pushes once, in seq order: the staged ones and those made in the transaction.
    private static func merged(_ staged: [[LoggedPush]], _ made: [LoggedPush]) -> [[LoggedPush]] {
        guard !made.isEmpty else { return staged }
        var byRoom: [String: [LoggedPush]] = [:], order: [String] = []
        for p in staged.joined() + made {
            if byRoom[p.room] == nil { order.append(p.room) }
            byRoom[p.room, default: []].append(p)
        }
        return order.map { byRoom[$0]!.sorted { $0.seq < $1.seq } }
    }

    // MARK: State

    /// One room as its writer holds it.
    private struct Held {
        /// Pushes take their seq here (its head: every push staged or in flight).
        var staged: StagedRoom
        /// The last push known durable.
        var durable: RoomHead

        mutating func stage(_ make: (inout StagedRoom) -> Void) { make(&staged) }
    }

    private struct State {
        var rooms: [String: Held] = [:]
        /// Rooms staged into since the last `take`.
        var touched: Set<String> = []
        /// Seqs reserved since the last `take`: the change must push each.
        var reserved: [Reservation] = []
        /// Rooms a snapshot showed past their durable head while a change was in flight (until
        /// they are durable up to their head, or the owner resets).
        var shown: Set<String> = []
        var inFlight = 0
        var failed = false
        /// Moves on at each `reload`: a failure of a change staged before it changes nothing.
        var generation = 0

        /// Holds `room` at `head` unless it is held already; whether it was taken now.
        mutating func hold(_ room: String, at head: RoomHead) -> Bool {
            guard rooms[room] == nil else { return false }
            rooms[room] = Held(staged: StagedRoom(name: room, head: head), durable: head)
            return true
        }

        mutating func stage(_ room: String, _ make: (inout StagedRoom) -> Void) {
            // Changed in place through one lookup.
            guard rooms[room]?.stage(make) != nil else { return }
            touched.insert(room)
        }

        /// Every room's staged pushes, each room's in seq order, and the rooms the change concerns
        /// (a room with only a reservation has no staged push).
        mutating func take() -> ([[LoggedPush]], Set<String>, [Reservation]) {
            defer {
                touched = []
                reserved = []
            }
            // Each room's pushes are in seq order; the order of the rooms does not matter to the log.
            return (touched.compactMap { rooms[$0]?.staged.take() }.filter { !$0.isEmpty }, touched, reserved)
        }

        mutating func committed(_ pushes: [[LoggedPush]], generation: Int) {
            inFlight -= 1
            guard generation == self.generation, !failed else { return }
            for room in pushes {
                guard let last = room.last, let held = rooms[last.room], held.durable.epoch == last.epoch else { continue }
                if last.seq > held.durable.seq { rooms[last.room]!.durable = RoomHead(seq: last.seq, epoch: last.epoch) }
                // A stream's pushes were numbered in the transaction: its head follows them.
                if last.seq > held.staged.head.seq { rooms[last.room]!.staged = StagedRoom(name: last.room, head: rooms[last.room]!.durable) }
                if rooms[last.room]!.durable == rooms[last.room]!.staged.head { shown.remove(last.room) }
            }
        }

        /// Applies the failure policy; returns the rooms to load in a new epoch.
        mutating func failed(_ changed: Set<String>, generation: Int) -> Set<String> {
            inFlight -= 1
            guard generation == self.generation else { return [] }
            let renew = shown.intersection(changed)
            failed = true
            rooms = [:]
            touched = []
            reserved = []
            return renew
        }
    }
}

/// What a change sees inside its transaction (a fresh one for each run of the change).
public final class RoomRows: @unchecked Sendable {
    /// The transaction: the domain's own rows go here.
    public let db: any SQLDatabase
    private var stream: (room: String, head: RoomHead)?
    /// Pushes made in the transaction, in order.
    private(set) var made: [LoggedPush] = []

    init(_ db: any SQLDatabase, stream: (room: String, head: RoomHead)?) {
        self.db = db
        self.stream = stream
    }

    /// The push of a seq `RoomWriter.reserve`d before the change, encoded now.
    public func push(_ reserved: Reservation, _ event: some RoomEvent, data: JSON, at now: Double) {
        made.append(reserved.push(event, data: data, at: now))
    }

    /// `RoomWriter.commitStream` only: the stream's next push.
    public func push(_ event: some RoomEvent, data: JSON, at now: Double) {
        guard let (room, head) = stream else { preconditionFailure("RoomRows.push(_:data:at:) outside commitStream") }
        let next = RoomHead(seq: head.seq + 1, epoch: head.epoch)
        stream = (room, next)
        made.append(Reservation(room: room, head: next).push(event, data: data, at: now))
    }
}

/// A change refused by its writer inside its transaction (the change is undone).
public enum RoomWriterError: Error, Equatable {
    /// The change did not push a seq reserved for it (`RoomRows.push(_:_:data:at:)`).
    case reservationNotPushed(room: String, seq: UInt64)
}

/// A change the store did not commit (see `RoomWriter`'s failure policy).
public struct RoomWriteFailure: Error {
    /// What the store said.
    public let error: any Error
    /// The change's rooms to load in a new epoch (a snapshot showed a push that never came).
    public let renewEpoch: Set<String>
    /// What the change's caller is answered.
    public var protocolError: ProtocolError { ProtocolError(.unavailable, "could not save the change; try again") }
}

/// Where a writer's pushes are written: the store's room log (`SharedRoomLog`), or a domain's own
/// table for its rooms (a user's stream, kept beyond the log's retention), which it reads back
/// through a `RoomLogSource`.
public protocol RoomLogTable: Sendable {
    /// Inside the change's transaction: writes `rooms` (each one room's pushes in seq order, each
    /// room once), moves each head on, and tells the other nodes once it commits. Throws when a
    /// head is not just before its room's first push (another writer moved it): the whole change
    /// is undone.
    func append(rooms: [[LoggedPush]], _ db: any SQLDatabase) throws
}

/// The store's room log (`room_log`, `room_head`), which every node reads.
public struct SharedRoomLog: RoomLogTable {
    public init() {}
    public func append(rooms: [[LoggedPush]], _ db: any SQLDatabase) throws { try RoomLogRows.append(rooms: rooms, db) }
}

/// The value and pushes of the run of a change that committed (the last run: a retried group runs
/// it again), read by its completion on the store's writer thread.
private final class LastRun<T: Sendable>: @unchecked Sendable {
    private let lock = Mutex<(T?, [[LoggedPush]])>((nil, []))
    func set(_ value: T, _ pushes: [[LoggedPush]]) { lock.withLock { $0 = (value, pushes) } }
    func get() -> (T?, [[LoggedPush]]) { lock.withLock { $0 } }
}
