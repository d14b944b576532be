import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import RoomLog
import Storage
import Synchronization
import Venues
import WebSocket

/// One live venue: its playlist state and the log of its room `venue:<id>`. Every change is
/// applied here in one step and handed to the store's group commit without waiting for it, with
/// the pushes it calls for: they are written to the room log in the change's transaction (each
/// with the next `seq`), and delivered to subscribers and the reply sent once it is durable, while
/// this actor already takes the next vote. Subscribers are the node's `RoomFeed`'s, not this
/// actor's: another node's patrons get the same pushes from the log.
public actor VenueActor {
    private(set) var venue: VenueRecord
    let directory: VenueDirectory
    let store: Store
    let feed: RoomFeed
    /// The room's log as this actor writes it: pushes take their `seq` here.
    private var room: StagedRoom
    private var lastActivity = Date().timeIntervalSince1970
    /// Changes handed to the store and not yet durable (counted from the writer thread too).
    private let inFlight = WriteCounter()
    /// The venue was removed: every op answers `not_found`.
    var gone = false
    /// Retired for idleness: no longer in the directory. A caller that still held this actor
    /// revives it if nothing replaced it, or is sent to the actor that did.
    private(set) var retired = false
    /// The playlist state; changed only in `apply`.
    var jukebox: Jukebox

    init(venue: VenueRecord, jukebox: Jukebox, head: RoomHead, directory: VenueDirectory, store: Store, feed: RoomFeed) {
        self.venue = venue
        self.jukebox = jukebox
        self.directory = directory
        self.store = store
        self.feed = feed
        room = StagedRoom(name: VenuePush.room(venue.id), head: head)
    }

    /// Stages a push for the change being applied (handed to the store by `commit`).
    func publish(_ event: VenuePush, _ data: JSON) {
        lastActivity = Date().timeIntervalSince1970
        room.stage(event, data: data, at: lastActivity)
    }

    // MARK: The room

    /// The venue for a new subscriber (`venue`, `checkedIn`, `playlist`) and the room's head at
    /// that point.
    public func snapshot() async throws(ProtocolError) -> RoomSnapshot {
        // The only suspension comes first: retirement and removal are checked after it, and the
        // snapshot is taken in the same step as the check.
        let checkedIn = try await directory.checkinCount(venue.id)
        if let successor = try takeOver() { return try await successor.snapshot() }
        lastActivity = Date().timeIntervalSince1970
        // A snapshot holding changes not yet durable: if one of them fails, its seq must not be
        // given to another push in this epoch (the feed holds the answer until then, but would
        // release it at that seq).
        let pending = inFlight.count.load(ordering: .acquiring) > 0
        if pending { inFlight.exposed.store(true, ordering: .releasing) }
        return RoomSnapshot(head: room.head, data: ["venue": venue.json, "checkedIn": .int(checkedIn), "playlist": playlistJSON],
                            mark: pending ? room.headMark : nil)
    }

    /// Before any change or subscription: `not_found` if the venue is gone; if this actor was
    /// retired, it takes its place again when nothing replaced it (its state is exactly what is
    /// stored), else returns the actor that did.
    func takeOver() throws(ProtocolError) -> VenueActor? {
        guard !gone else { throw .notFound("no venue \(venue.id)") }
        if inFlight.failed.load(ordering: .acquiring) {
            // A commit failed: this memory may hold a change the store does not. Never serve again.
            if let other = directory.liveActor(venue.id), other !== self { return other }
            throw ProtocolError(.unavailable, "the venue is reloading; try again")
        }
        guard retired else { return nil }
        switch directory.revive(self, id: venue.id) {
        case .revived:
            retired = false
            return nil
        case .replacedBy(let successor):
            return successor
        case .stale:
            throw ProtocolError(.unavailable, "the venue is reloading; try again")
        }
    }

    // MARK: Profile and presence (through this actor, so their pushes take their place in the log)

    /// `venue.update`: the fields given in `args` change, the others stay as they are now.
    func update(by user: String, args: Args) async throws(ProtocolError) -> VenueRecord {
        try await requireOwner(user, "edit the venue")
        if try takeOver() != nil { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        let record = VenueRecord(id: venue.id, ownerID: venue.ownerID, fields: try VenueFields(args, base: venue))
        venue = record
        publish(.venueUpdated, ["venue": record.json])
        try await commitAndWait { db in
            try db.execute(sql: """
                UPDATE venue SET name = ?, address = ?, postcode = ?, city = ?, country = ?, lat = ?, lon = ?, search_text = ?
                WHERE id = ?
                """, arguments: [record.name, record.address, record.postcode, record.city, record.country, record.lat, record.lon,
                                 record.searchText, record.id])
        }
        return record
    }

    /// `venue.remove`: soft delete (hidden from every query, data kept); every op answers
    /// `not_found` from then on.
    func remove(by user: String) async throws(ProtocolError) {
        try await requireOwner(user, "remove the venue")
        if try takeOver() != nil { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        gone = true
        let id = venue.id
        publish(.venueRemoved, ["venue": .string(id)])
        let now = Date().timeIntervalSince1970
        try await commitAndWait { db in try db.execute(sql: "UPDATE venue SET deleted_at = ? WHERE id = ?", arguments: [now, id]) }
    }

    /// UC7: checks a user in (once per venue); the venue's presence count is pushed. The count is
    /// the store's (any node may have checked others in), read in the check-in's transaction.
    func checkin(user: String) async throws(ProtocolError) -> Int {
        if try takeOver() != nil { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        guard store.acceptsWrites else { throw ProtocolError(.unavailable, "too many changes are waiting to be written; try again") }
        lastActivity = Date().timeIntervalSince1970
        let reservation = room.reserve()
        let id = venue.id
        let now = lastActivity
        let made = PushBox()
        try await commitAndWait(made: made) { db in
            try db.execute(sql: "INSERT OR IGNORE INTO checkin (venue_id, user_id, at) VALUES (?, ?, ?)", arguments: [id, user, now])
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM checkin WHERE venue_id = ?", arguments: [id]) ?? 0
            let push = reservation.push(VenuePush.presenceChanged, data: ["checkedIn": .int(count)], at: now)
            try RoomLogRows.append([push], db)
            made.set(push, count)
        }
        return made.count
    }

    // MARK: Housekeeping

    /// If no change is in flight and nothing happened for `seconds`, retires (its room's
    /// subscribers stay with the feed: a retired venue's state and log are in the store).
    func sweep(now: Double, retireAfter seconds: Double) -> Bool {
        guard inFlight.count.load(ordering: .acquiring) == 0, now - lastActivity > seconds else { return false }
        retired = true
        return true
    }

    /// The venue's id.
    public var venueID: String { venue.id }

    /// The room's last `seq` (pushes staged included) and epoch.
    public var head: RoomHead { room.head }

    // MARK: Durability

    /// Hands `write` to the group commit; `reply` answers with `result` once it is durable.
    func commit(_ write: JukeboxWrite, reply: Replier, result: JSON) {
        let id = venue.id
        commit({ db in try JukeboxRows.apply(write, venue: id, db) }) { outcome in
            switch outcome {
            case .success: reply.success(result)
            case .failure: reply.failure(ProtocolError(.unavailable, "could not save the change; try again"))
            }
        }
    }

    /// Hands `write` and the pushes staged for it to the group commit: they are written to the
    /// room log in its transaction, and delivered once it is durable, before `completion` runs.
    private func commit(_ write: @escaping @Sendable (any SQLDatabase) throws -> Void, made: PushBox? = nil,
                        completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
        let pushes = room.take()
        let id = venue.id
        let inFlight = self.inFlight
        let directory = self.directory
        let feed = self.feed
        inFlight.count.add(1, ordering: .relaxed)
        store.submit({ db in
            try write(db)
            try RoomLogRows.append(pushes, db)
        }) { [self] outcome in
            switch outcome {
            case .success:
                feed.deliver(made?.push.map { pushes + [$0] } ?? pushes)
                inFlight.count.subtract(1, ordering: .releasing)
            case .failure:
                // Memory is now ahead of the store: drop this actor so the next caller reloads what
                // is durable (in a new epoch if a snapshot may have shown the lost change).
                inFlight.failed.store(true, ordering: .releasing)
                directory.evict(self, id: id, renewEpoch: inFlight.exposed.load(ordering: .acquiring))
                inFlight.count.subtract(1, ordering: .releasing)
            }
            completion(outcome)
        }
    }

    /// `commit`, waiting for it to be durable (ops that answer here rather than through a `Replier`).
    private func commitAndWait(made: PushBox? = nil,
                               _ write: @escaping @Sendable (any SQLDatabase) throws -> Void) async throws(ProtocolError) {
        let outcome: Result<Void, Error> = await withCheckedContinuation { done in
            commit(write, made: made) { done.resume(returning: $0) }
        }
        if case .failure = outcome { throw ProtocolError(.unavailable, "could not save the change; try again") }
    }

    func requireOwner(_ user: String, _ action: String) async throws(ProtocolError) {
        guard try await directory.isOwner(user, of: venue.id) else { throw .forbidden("only an owner can \(action)") }
    }
}

/// A push encoded inside a change's transaction (the check-in's count), handed to its completion.
final class PushBox: @unchecked Sendable {
    private let lock = NSLock()
    private var _push: LoggedPush?
    private var _count = 0
    func set(_ push: LoggedPush, _ count: Int) { lock.withLock { _push = push; _count = count } }
    var push: LoggedPush? { lock.withLock { _push } }
    var count: Int { lock.withLock { _count } }
}

/// Writes in flight, shared with the store's completions.
final class WriteCounter: Sendable {
    let count = Atomic<Int>(0)
    /// A commit failed: the actor's memory may hold changes the store does not.
    let failed = Atomic<Bool>(false)
    /// A snapshot was taken while changes were in flight (their seqs may be in a subscriber's view).
    let exposed = Atomic<Bool>(false)
}
