import DomainSeam
import Foundation
import HubbubCrypto
import Logging
import Realtime
import RoomLog
import Storage
import Synchronization
import Venues
import WebSocket

/// One live venue: its playlist state, and the writer of its room `venue:<id>` (`RoomWriter`).
/// Every change is applied here in one step and handed to the store's group commit without
/// waiting for it, with the pushes it calls for: they are written to the room log in the change's
/// transaction, and delivered to subscribers and the reply sent once it is durable, while this
/// actor already takes the next vote. Subscribers are the node's `RoomFeed`'s, not this actor's:
/// another node's patrons get the same pushes from the log. On a failed write the writer's policy
/// holds, and this actor's part of it is to go: its memory may hold a change the store does not,
/// so the directory drops it and the next caller loads what is durable.
public actor VenueActor {
    private(set) var venue: VenueRecord
    let directory: VenueDirectory
    let store: Store
    let feed: RoomFeed
    /// Where a failed write is reported (by the writer).
    private static let logger = Logger(label: "hubbub.venues")
    /// Pushes to the room go here, and only here.
    let writer: RoomWriter
    private let roomName: String
    private var lastActivity = Date().timeIntervalSince1970
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
        roomName = VenuePush.room(venue.id)
        writer = RoomWriter(store: store, feed: feed, logger: Self.logger)
        writer.adopt(roomName, head: head)
    }

    /// Stages a push for the change being applied (handed to the store by `commit`).
    func publish(_ event: VenuePush, _ data: JSON) {
        lastActivity = Date().timeIntervalSince1970
        writer.stage(event, data: data, in: roomName, at: lastActivity)
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
        // Changes in flight included: the writer marks the head, and renews the epoch if one fails.
        guard let at = writer.snapshot(of: roomName) else { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        return RoomSnapshot(head: at.head, data: ["venue": venue.json, "checkedIn": .int(checkedIn), "playlist": playlistJSON], mark: at.mark)
    }

    /// Before any change or subscription: `not_found` if the venue is gone; if this actor was
    /// retired, it takes its place again when nothing replaced it (its state is exactly what is
    /// stored), else returns the actor that did.
    func takeOver() throws(ProtocolError) -> VenueActor? {
        guard !gone else { throw .notFound("no venue \(venue.id)") }
        if writer.failed {
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
        try writer.admit()
        let record = VenueRecord(id: venue.id, ownerID: venue.ownerID, fields: try VenueFields(args, base: venue))
        venue = record
        publish(.venueUpdated, ["venue": record.json])
        try await commitAndWait { rows in
            try rows.db.execute(sql: """
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
        try writer.admit()
        gone = true
        let id = venue.id
        publish(.venueRemoved, ["venue": .string(id)])
        let now = Date().timeIntervalSince1970
        try await commitAndWait { rows in try rows.db.execute(sql: "UPDATE venue SET deleted_at = ? WHERE id = ?", arguments: [now, id]) }
    }

    /// UC7: checks a user in (once per venue); the venue's presence count is pushed. The count is
    /// the store's (any node may have checked others in), read in the check-in's transaction.
    func checkin(user: String) async throws(ProtocolError) -> Int {
        if try takeOver() != nil { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        try writer.admit()
        lastActivity = Date().timeIntervalSince1970
        guard let reserved = writer.reserve(in: roomName) else { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        let id = venue.id
        let now = lastActivity
        return try await commitAndWait { rows in
            try rows.db.execute(sql: "INSERT OR IGNORE INTO checkin (venue_id, user_id, at) VALUES (?, ?, ?)", arguments: [id, user, now])
            let count = try Int.fetchOne(rows.db, sql: "SELECT COUNT(*) FROM checkin WHERE venue_id = ?", arguments: [id]) ?? 0
            rows.push(reserved, VenuePush.presenceChanged, data: ["checkedIn": .int(count)], at: now)
            return count
        }
    }

    // MARK: Housekeeping

    /// If no change is in flight and nothing happened for `seconds`, retires (its room's
    /// subscribers stay with the feed: a retired venue's state and log are in the store).
    func sweep(now: Double, retireAfter seconds: Double) -> Bool {
        guard writer.inFlight == 0, now - lastActivity > seconds else { return false }
        retired = true
        return true
    }

    /// The venue's id.
    public var venueID: String { venue.id }

    /// The room's last `seq` (pushes staged and in flight included) and epoch.
    public var head: RoomHead? { writer.snapshot(of: roomName)?.head }

    // MARK: Durability

    /// Hands `write` to the group commit; `reply` answers with `result` once it is durable.
    func commit(_ write: JukeboxWrite, reply: Replier, result: JSON) {
        let id = venue.id
        submit({ rows in try JukeboxRows.apply(write, venue: id, rows.db) }) { outcome in
            switch outcome {
            case .success: reply.success(result)
            case .failure(let failure): reply.failure(failure.protocolError)
            }
        }
    }

    /// The writer's `submit`, with this actor's part of the failure policy: it goes (see the type).
    private func submit<T: Sendable>(_ rows: @escaping @Sendable (RoomRows) throws -> T,
                                     completion: @escaping @Sendable (Result<T, RoomWriteFailure>) -> Void) {
        let id = venue.id, directory = self.directory
        writer.submit(rows) { [self] outcome in
            if case .failure(let failure) = outcome { directory.evict(self, id: id, renewEpoch: !failure.renewEpoch.isEmpty) }
            completion(outcome)
        }
    }

    /// `submit`, waiting for it to be durable (ops that answer here rather than through a `Replier`).
    private func commitAndWait<T: Sendable>(_ rows: @escaping @Sendable (RoomRows) throws -> T) async throws(ProtocolError) -> T {
        let outcome: Result<T, RoomWriteFailure> = await withCheckedContinuation { done in submit(rows) { done.resume(returning: $0) } }
        return try outcome.mapError(\.protocolError).get()
    }

    func requireOwner(_ user: String, _ action: String) async throws(ProtocolError) {
        guard try await directory.isOwner(user, of: venue.id) else { throw .forbidden("only an owner can \(action)") }
    }
}
