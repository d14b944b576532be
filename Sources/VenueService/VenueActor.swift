import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import Storage
import Synchronization
import Venues
import WebSocket

/// One live venue: its playlist state, its room `venue:<id>` and who is subscribed. Every change
/// is applied here in one step (so pushes carry a consistent order) and handed to the store's
/// group commit without waiting for it: the reply goes out from the commit's completion, once the
/// change is durable, while this actor already takes the next vote.
public actor VenueActor: RoomHost {
    private(set) var venue: VenueRecord
    let directory: VenueDirectory
    let store: Store
    let sink: any PushSink
    private var room: Room
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

    init(venue: VenueRecord, jukebox: Jukebox, directory: VenueDirectory, store: Store, sink: any PushSink,
         history: Room.HistoryLimits) {
        self.venue = venue
        self.jukebox = jukebox
        self.directory = directory
        self.store = store
        self.sink = sink
        // A new actor starts a new epoch: a client's seq from before cannot be resumed.
        room = Room(name: "venue:\(venue.id)", epoch: Digest.randomToken(length: 8), limits: history)
    }

    /// Pushes an event to the room.
    func publish(_ event: VenueEvent, _ data: JSON) {
        lastActivity = Date().timeIntervalSince1970
        room.publish(event, data: data, now: lastActivity, sink: sink)
    }

    // MARK: The room

    public func subscribe(reply: Replier, since: Since?) async throws(ProtocolError) {
        // The only suspension comes first: retirement and removal are checked after it, and the
        // member joins in the same step as the check.
        let checkedIn = try await directory.checkinCount(venue.id)
        if let successor = try takeOver() { return try await successor.subscribe(reply: reply, since: since) }
        lastActivity = Date().timeIntervalSince1970
        room.subscribe(reply.member, since: since, now: lastActivity, reply: reply) {
            ["venue": venue.json, "checkedIn": .int(checkedIn), "playlist": playlistJSON]
        }
    }

    public func unsubscribe(_ member: ConnectionID) {
        room.leave(member)
        lastActivity = Date().timeIntervalSince1970
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

    /// The profile changed (venue.update): keep the live copy current and tell the room.
    func updated(_ record: VenueRecord) {
        venue = record
        publish(.venueUpdated, ["venue": record.json])
    }

    func removed() {
        gone = true
        publish(.venueRemoved, ["venue": .string(venue.id)])
    }

    // MARK: Housekeeping

    /// Trims the room's history (it may have gone quiet) and, if nobody watches this venue, no
    /// change is in flight and nothing happened for `seconds`, retires it.
    func sweep(now: Double, retireAfter seconds: Double) -> Bool {
        room.trimHistory(now: now)
        guard room.memberCount == 0, inFlight.count.load(ordering: .acquiring) == 0, now - lastActivity > seconds else { return false }
        retired = true
        return true
    }

    /// Pushes kept for recovery and their bytes (tests and metrics).
    public var historySize: (count: Int, bytes: Int) { (room.historyCount, room.historyBytes) }

    // MARK: Durability

    /// Hands `write` to the group commit; `reply` answers with `result` once it is durable.
    func commit(_ write: JukeboxWrite, reply: Replier, result: JSON) {
        let id = venue.id
        let inFlight = self.inFlight
        let directory = self.directory
        inFlight.count.add(1, ordering: .relaxed)
        store.submit({ db in try JukeboxRows.apply(write, venue: id, db) }) { [self] outcome in
            switch outcome {
            case .success:
                inFlight.count.subtract(1, ordering: .releasing)
                reply.success(result)
            case .failure:
                // Memory is now ahead of the store: drop this actor so the next caller reloads
                // what is durable (the change was never acknowledged).
                inFlight.failed.store(true, ordering: .releasing)
                directory.evict(self, id: id)
                inFlight.count.subtract(1, ordering: .releasing)
                reply.failure(ProtocolError(.unavailable, "could not save the change; try again"))
            }
        }
    }
}

/// Writes in flight, shared with the store's completions.
final class WriteCounter: Sendable {
    let count = Atomic<Int>(0)
    /// A commit failed: the actor's memory may hold changes the store does not.
    let failed = Atomic<Bool>(false)
}
