import Foundation
import GRDB
import Realtime
import Storage
import Venues
import WebSocket

/// One live venue: its playlist state, its room `venue:<id>` and who is subscribed. Every change
/// is applied here in one step (so pushes carry a consistent order), then made durable; the
/// caller's reply waits for durability.
public actor VenueActor<Sink: PushSink> {
    public typealias Member = Sink.Member

    private(set) var venue: VenueRecord
    let directory: VenueDirectory<Sink>
    private let store: Store
    private let sink: Sink
    private var room: Room<Member>
    private var lastActivity = Date().timeIntervalSince1970
    private var pendingWrites = 0
    var gone = false
    /// Retired for idleness (its state is on disk; a new actor takes over).
    var retired = false
    /// The playlist state; changed only in `apply`, written by `persist`.
    var jukebox: Jukebox
    /// Changes not yet durable (each has a waiter), and their history rows.
    private var unsavedActions: [TrackActionRow] = []
    private var waiters: [CheckedContinuation<Void, Error>] = []
    private var flushing = false

    init(venue: VenueRecord, jukebox: Jukebox, directory: VenueDirectory<Sink>, store: Store, sink: Sink,
         history: Room<Member>.HistoryLimits) {
        self.venue = venue
        self.jukebox = jukebox
        self.directory = directory
        self.store = store
        self.sink = sink
        // A new actor starts a new epoch: a client's seq from before cannot be resumed.
        room = Room(name: "venue:\(venue.id)", epoch: VenueActor.newEpoch(), limits: history)
    }

    static func newEpoch() -> String { randomToken(length: 8) }

    /// Pushes an event to the room.
    func publish(event: String, data: JSON) {
        lastActivity = Date().timeIntervalSince1970
        room.publish(event: event, data: data, now: lastActivity, sink: sink)
    }

    /// Subscribes `member` and sends it the reply first, then any missed pushes, in order.
    /// With `since` in the history: `recovered: true`; else `recovered: false` and a snapshot.
    public func subscribe(_ member: Member, requestID: Int, since: (seq: UInt64, epoch: String)?) async throws(ProtocolError) {
        guard !gone else { throw .notFound("no venue \(venue.id)") }
        guard !retired else { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        let checkedIn = try await directory.checkinCount(venue.id)
        let now = Date().timeIntervalSince1970
        lastActivity = now
        let resume = room.join(member, since: since, now: now)
        var result: [(String, JSON)] = [("room", .string(room.name)), ("seq", .int(Int(room.seq))), ("epoch", .string(room.epoch))]
        switch resume {
        case .recovered(let missed):
            result.append(("recovered", .bool(true)))
            sink.deliver(OutboundMessage(text: Envelope.success(id: requestID, result: .object(result))), to: [member])
            for m in missed { sink.deliver(m, to: [member]) }
        case .snapshotNeeded:
            if since != nil { result.append(("recovered", .bool(false))) }
            result.append(("snapshot", snapshot(checkedIn: checkedIn)))
            sink.deliver(OutboundMessage(text: Envelope.success(id: requestID, result: .object(result))), to: [member])
        }
    }

    /// The profile changed (venue.update): keep the live copy current and tell the room.
    func updated(_ record: VenueRecord) {
        venue = record
        publish(event: "venue.updated", data: ["venue": record.json])
    }

    public func unsubscribe(_ member: Member) {
        room.leave(member)
        lastActivity = Date().timeIntervalSince1970
    }

    func snapshot(checkedIn: Int) -> JSON {
        ["venue": venue.json, "checkedIn": .int(checkedIn), "playlist": snapshotJSON]
    }

    /// Waits until every change applied so far is on disk. Changes made while a write is in
    /// flight share the next one: one row per venue per commit, however many votes it holds.
    func persist(_ actions: [TrackActionRow] = []) async throws(ProtocolError) {
        unsavedActions += actions
        pendingWrites += 1
        defer { pendingWrites -= 1 }
        do {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, Error>) in
                waiters.append(c)
                if !flushing {
                    flushing = true
                    Task { await self.flush() }
                }
            }
        } catch {
            throw ProtocolError(.unavailable, "could not save the change; try again")
        }
    }

    private func flush() async {
        while !waiters.isEmpty {
            let waiting = waiters
            let actions = unsavedActions
            waiters = []
            unsavedActions = []
            // Turned into rows and encoded on the store's writer thread, not here: the venue keeps
            // taking votes meanwhile (the copy is cheap, its storage is shared until changed).
            let jukebox = self.jukebox
            let id = venue.id
            do {
                try await store.write { db in
                    let now = Date().timeIntervalSince1970
                    try db.execute(sql: "INSERT OR REPLACE INTO jukebox (venue_id, state, updated_at) VALUES (?, ?, ?)",
                                   arguments: [id, jukebox.records.storedJSON, now])
                    for a in actions {
                        try db.execute(sql: "INSERT INTO track_action (user_id, venue_id, kind, uri, title, artist, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                       arguments: [a.user, id, a.kind, a.track.uri, a.track.title, a.track.artist, a.at])
                    }
                }
                for w in waiting { w.resume() }
            } catch {
                for w in waiting { w.resume(throwing: error) }
            }
        }
        flushing = false
    }

    /// Retires this actor if nobody watches it and nothing happened for a while. A caller that
    /// still holds it afterwards gets `unavailable` and retries with a fresh actor.
    func retireIfIdle(now: Double, after seconds: Double) -> Bool {
        guard room.memberCount == 0, pendingWrites == 0, now - lastActivity > seconds else { return false }
        retired = true
        return true
    }

    func removed() {
        gone = true
        publish(event: "venue.removed", data: ["venue": .string(venue.id)])
    }
}
