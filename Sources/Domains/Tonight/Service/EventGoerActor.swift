import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import RoomLog
import Storage
import Tonight
import WebSocket

/// One event-goer, live: their tonight state (an `EventGoer`) and the writer of their `user:`
/// room, whose pushes are durable. Every change of the user's state and every push to them goes
/// through here, one at a time. (With several nodes, only on the node holding `user:*`.)
///
/// A push is written before it is delivered: it waits in `outbox`, and one write at a time
/// (`flush`, through the room's `RoomWriter`, as a stream: `commitStream`) records, in a single
/// transaction, that it was made (once per user and event for suggestions and announcements: an
/// insert that finds the pair already there drops the push), its seq and its encoded form in the
/// room's durable log (`tonight_user_push`: `GoerStreamLog`). Only then is it delivered through
/// the feed, in seq order, to the user's connections on every node. So a push is never sent
/// twice, not even across a crash, and one made while the user was offline is replayed on their
/// next `subscribe` with `since`, across restarts too. A write that fails drops its batch (the
/// writer's policy; suggestions are made again at the next refresh) and the head is read again.
actor EventGoerActor {
    /// A push waiting to be written.
    struct Pending: Sendable {
        var event: TonightPush
        var data: JSON
        /// For pushes made once per user and event (`tonight.suggested`, `event.announced`): the event.
        var once: String?
        /// Written in the same transaction (a reminder's removal, a reminder re-armed).
        var also: (@Sendable (any SQLDatabase) throws -> Void)?
    }

    nonisolated let user: String
    private let goers: EventGoers
    private(set) var goer: EventGoer
    /// The `user:` room's writer; its head is read from the store when first needed and let go when idle.
    private let writer: RoomWriter
    private var loading: Task<RoomHead, Error>?
    /// `kind:event` pairs known to be pushed already (a cache of `tonight_pushed`).
    private var known: Set<String> = []
    private var outbox: [Pending] = []
    private var flushing = false
    private var lastActivity: Double

    init(goer: EventGoer, goers: EventGoers) {
        user = goer.user
        self.goer = goer
        self.goers = goers
        writer = RoomWriter(store: goers.store, feed: goers.feed, log: GoerStreamLog(store: goers.store, keep: goers.configuration.history),
                            logger: goers.logger)
        lastActivity = goers.clock.now
    }

    private var store: Store { goers.store }
    private var roomName: String { TonightPush.userRoom(user) }

    // MARK: The room

    /// The room's durable head, its writer holding it (read, or made, on first use).
    private func loadedHead() async throws -> RoomHead {
        if let head = writer.durableHead(of: roomName) { return head }
        if let loading {
            // A load already under way: whoever resumes first gives the writer its head.
            writer.reload(roomName, head: try await loading.value)
            return writer.durableHead(of: roomName)!
        }
        let store = self.store, user = self.user
        let task = Task<RoomHead, Error> {
            if let stored = try await store.read({ db in try GoerRows.head(user, db) }) { return stored }
            let made = try await store.write { db in
                try GoerRows.ensure(user, epoch: Digest.randomToken(length: 8), db)
                return try GoerRows.head(user, db)
            }
            guard let made else { throw StoreError.closed }
            return made
        }
        loading = task
        defer { loading = nil }
        writer.reload(roomName, head: try await task.value)
        return writer.durableHead(of: roomName)!
    }

    /// The `user:` room for a new subscriber (prefs, plans, tonight's suggestions) and its head.
    func snapshot() async throws(ProtocolError) -> RoomSnapshot {
        let head: RoomHead
        do { head = try await loadedHead() } catch { throw ProtocolError(.unavailable, "could not read your stream; try again") }
        lastActivity = goers.clock.now
        return RoomSnapshot(head: head, data: goers.snapshot(of: goer, now: lastActivity))
    }

    /// Lets go of the head and the cache when nothing happened for `seconds` (they are read again
    /// when needed; the room's members are the feed's).
    func sweep(now: Double, idleAfter seconds: Double) {
        guard writer.holds(roomName), !flushing, outbox.isEmpty, now - lastActivity > seconds else { return }
        writer.drop(roomName)
        known = []
    }

    // MARK: Changes of the user's state (each answered once durable)

    /// Runs `change` durably, then takes `next` as the user's state and answers `result`.
    private func commit(_ next: EventGoer, reply: Replier, result: JSON, _ change: @escaping @Sendable (any SQLDatabase) throws -> Void) async throws(ProtocolError) {
        do { try await store.write(change) } catch { throw ProtocolError(.unavailable, "could not save; try again") }
        goer = next
        goers.index(next)
        lastActivity = goers.clock.now
        reply.success(result)
        await refresh()
    }

    func setPrefs(_ prefs: Preferences, reply: Replier) async throws(ProtocolError) {
        var next = goer
        next.prefs = prefs
        let user = self.user, epoch = Digest.randomToken(length: 8)
        try await commit(next, reply: reply, result: GoerJSON.prefs(next)) { db in try GoerRows.savePrefs(user, prefs, epoch: epoch, db) }
    }

    func favorite(_ kind: FavoriteKind, _ id: String, _ on: Bool, reply: Replier) async throws(ProtocolError) {
        var next = goer
        switch (kind, on) {
        case (.artist, true): next.artists.insert(id)
        case (.artist, false): next.artists.remove(id)
        case (.category, true): next.categories.insert(id)
        case (.category, false): next.categories.remove(id)
        }
        let user = self.user, epoch = Digest.randomToken(length: 8)
        let result: JSON = ["artists": .array(next.artists.sorted().map(JSON.string)), "categories": .array(next.categories.sorted().map(JSON.string))]
        try await commit(next, reply: reply, result: result) { db in _ = try GoerRows.setFavorite(user, kind, id, on, epoch: epoch, db) }
    }

    /// Follows (`true`), dismisses (`false`) or forgets (`nil`) `event`.
    func plan(_ event: String, followed: Bool?, reply: Replier) async throws(ProtocolError) {
        let now = goers.clock.now
        var next = goer
        next.followed[event] = nil
        next.dismissed.remove(event)
        switch followed {
        case true?: next.followed[event] = goer.followed[event] ?? now
        case false?: next.dismissed.insert(event)
        case nil: break
        }
        let user = self.user, epoch = Digest.randomToken(length: 8), at = next.followed[event] ?? now
        let remindAt = followed == true ? goers.reminderDue(of: event, now: now) : nil
        try await commit(next, reply: reply, result: ["event": .string(event), "plan": GoerJSON.plan(event, next)]) { db in
            try GoerRows.setPlan(user, event, followed: followed, at: at, remindAt: remindAt, epoch: epoch, db)
        }
    }

    // MARK: Pushes

    /// Pushes `tonight.suggested` for each event now in the user's tonight set that was never
    /// suggested to them, and `event.announced` for each of `announced` that qualifies.
    func refresh(announced: [String] = []) async {
        let now = goers.clock.now
        let (tonight, news) = goers.catalog.with { c in
            let tonight = c.tonight(for: goer, now: now), tonightIDs = Set(tonight.map(\.event))
            // A new show tonight is suggested; it is not announced as well.
            return (tonight, announced.filter { !tonightIDs.contains($0) }.compactMap { goers.announcement(of: $0, for: goer, now: now, c) })
        }
        for s in tonight where !known.contains(Self.key(.suggested, s.event)) {
            guard let data = goers.catalog.with({ TonightJSON.suggestion(s, $0) }) else { continue }
            outbox.append(Pending(event: .suggested, data: data, once: s.event))
        }
        for s in news where !known.contains(Self.key(.announced, s.event)) {
            guard let data = goers.catalog.with({ TonightJSON.suggestion(s, $0) }) else { continue }
            outbox.append(Pending(event: .announced, data: data, once: s.event))
        }
        await flush()
    }

    /// A feed changed `event`'s `fields`: followers hear of it (`event.changed`), and a new start
    /// re-arms the reminder.
    func changed(_ event: String, data: JSON, newStart: Double?) async {
        guard goer.followed[event] != nil else { return }
        let user = self.user
        var also: (@Sendable (any SQLDatabase) throws -> Void)?
        // A new start re-arms the reminder: due a lead before it, or at once when it is closer than that.
        if let start = newStart, start > goers.clock.now {
            let due = max(start - goers.configuration.reminderSeconds, goers.clock.now)
            also = { db in
                try db.execute(sql: "INSERT OR REPLACE INTO tonight_reminder (user, event, due) VALUES (?, ?, ?)", arguments: [user, event, due])
            }
        }
        outbox.append(Pending(event: .changed, data: data, also: also))
        await flush()
    }

    /// A reminder fell due: pushed if the user still follows the event and it has not started;
    /// the queue's entry goes either way, in the same transaction.
    func remind(_ event: String) async {
        let now = goers.clock.now, user = self.user
        let remove: @Sendable (any SQLDatabase) throws -> Void = { db in
            try db.execute(sql: "DELETE FROM tonight_reminder WHERE user = ? AND event = ?", arguments: [user, event])
        }
        // No reminder of an event that will not take place (its cancellation was pushed as a change).
        guard goer.followed[event] != nil, let start = goers.catalog.startsAt(event), start > now,
              let e = goers.catalog.event(event), e.status != .cancelled else {
            _ = try? await store.write(remove)
            return
        }
        let data = goers.catalog.with { TonightJSON.event(e, $0) }
        outbox.append(Pending(event: .reminder, data: ["event": data, "minutes": .int(Int(((start - now) / 60).rounded()))], also: remove))
        await flush()
    }

    private static func key(_ event: TonightPush, _ id: String) -> String { "\(event.rawValue):\(id)" }

    /// Writes what waits in `outbox`, one transaction at a time, then publishes it in seq order.
    private func flush() async {
        guard !flushing else { return } // the write in flight takes what was added, when it returns
        flushing = true
        defer { flushing = false }
        while !outbox.isEmpty {
            let batch = outbox
            outbox = []
            do { _ = try await loadedHead() } catch {
                goers.logger.error("user stream unavailable", metadata: ["user": "\(user)", "error": "\(error)", "dropped": "\(batch.count)"])
                continue
            }
            let user = self.user, now = goers.clock.now
            do {
                try writer.admit()
                _ = try await writer.commitStream(in: roomName) { rows in
                    for p in batch {
                        if let event = p.once {
                            let fresh = try rows.db.changes(sql: "INSERT OR IGNORE INTO tonight_pushed (user, event, kind, at) VALUES (?, ?, ?, ?)",
                                                            arguments: [user, event, p.event.rawValue, now])
                            if fresh == 0 { continue }
                        }
                        try p.also?(rows.db)
                        rows.push(p.event, data: p.data, at: now)
                    }
                }
            } catch {
                // Dropped (the writer forgot the head: it is read again, another node may have written the stream).
                goers.logger.error("could not write pushes to a user", metadata: ["user": "\(user)", "error": "\(error)", "dropped": "\(batch.count)"])
                continue
            }
            for p in batch { if let id = p.once { known.insert(Self.key(p.event, id)) } }
            lastActivity = now
        }
    }
}
