import DomainSeam
import Foundation
import HubbubCrypto
import Logging
import Realtime
import RoomLog
import Storage
import Synchronization
import Tonight
import WebSocket

/// One event's `event:` room as its writer holds it (on the node holding tonight's lease):
/// providers' live updates (`event.live`) and the feed's changes (`event.changed`), each written
/// through its `RoomWriter`. Its snapshot is the event and its latest live state (durable:
/// `tonight_live`) at the room's durable head. On a failed write the writer's policy holds; this
/// actor keeps nothing but the head, so it reads the head again at the next use.
actor EventRoomActor {
    nonisolated let event: String
    private let rooms: EventRooms
    private let writer: RoomWriter
    private var lastActivity: Double

    init(event: String, rooms: EventRooms) {
        self.event = event
        self.rooms = rooms
        writer = RoomWriter(store: rooms.store, feed: rooms.feed, logger: rooms.logger)
        lastActivity = rooms.clock.now
    }

    private var name: String { TonightPush.eventRoom(event) }

    /// Whether the room is held, its head loaded on first use; made only if `create` (a
    /// subscriber): a room nobody ever watched gets no pushes (false).
    private func loaded(create: Bool) async throws(ProtocolError) -> Bool {
        if writer.holds(name) { return true }
        let name = self.name
        let head: RoomHead?
        do {
            head = create ? try await rooms.store.write { db in try RoomLogRows.head(of: name, db) }
                : try await rooms.store.read { db in try RoomLogRows.heads(of: [name], db)[name] }
        } catch {
            throw ProtocolError(.unavailable, "could not read the event's room; try again")
        }
        guard let head else { return false }
        writer.reload(name, head: head)
        return true
    }

    /// `{event, live}` for a new subscriber, and the room's head.
    func snapshot() async throws(ProtocolError) -> RoomSnapshot {
        guard try await loaded(create: true), let head = writer.durableHead(of: name) else {
            throw ProtocolError(.unavailable, "the event's room is reloading; try again")
        }
        let event = self.event
        let stored: String?
        do {
            stored = try await rooms.store.read { db in try String.fetchOne(db, sql: "SELECT state FROM tonight_live WHERE event = ?", arguments: [event]) }
        } catch {
            throw ProtocolError(.unavailable, "could not read the event's live state; try again")
        }
        lastActivity = rooms.clock.now
        let live = stored.flatMap { try? JSONParser.parse(Array($0.utf8)) } ?? .null
        // Read after the durable head was taken: an update written since is in the state and also
        // pushed after the head (the client applies it again), never missed.
        return RoomSnapshot(head: head, data: ["event": rooms.catalog.with { c in c.events[event].map { TonightJSON.event($0, c) } } ?? .null,
                                               "live": live])
    }

    /// Pushes `tonightEvent` with `data`, written with `change` in one transaction; returns once
    /// durable. `always`: the room is made if nobody ever watched it (a live update); otherwise
    /// such a room gets no push (a feed's change: its followers are told in their streams).
    func publish(_ tonightEvent: TonightPush, _ data: JSON, always: Bool = true,
                 with change: @escaping @Sendable (any SQLDatabase) throws -> Void = { _ in }) async throws(ProtocolError) {
        guard try await loaded(create: always) else { return }
        try writer.admit()
        lastActivity = rooms.clock.now
        // The log's own time (its partitions and retention go by the system's clock, not tonight's).
        writer.stage(tonightEvent, data: data, in: name, at: Date().timeIntervalSince1970)
        try await writer.commit { rows in try change(rows.db) }
    }

    /// Lets go of the head when nothing happened for `seconds`.
    func sweep(now: Double, idleAfter seconds: Double) -> Bool {
        now - lastActivity > seconds
    }
}

/// The `event:` rooms, by event id; any logged-in user may subscribe to an event the catalog holds.
/// Their writers live on the node holding tonight's lease.
final class EventRooms: RoomDirectory {
    let catalog: Catalog
    let store: Store
    let feed: RoomFeed
    let clock: WallClock
    let idleSeconds: Double
    /// Made current before a snapshot (this node may have just taken tonight's lease).
    let memory: ReloadGate
    let logger: Logger
    private let actors = Mutex<[String: EventRoomActor]>([:])

    init(catalog: Catalog, store: Store, feed: RoomFeed, clock: WallClock, idleSeconds: Double, memory: ReloadGate, logger: Logger) {
        self.logger = logger
        self.memory = memory
        self.catalog = catalog
        self.store = store
        self.feed = feed
        self.clock = clock
        self.idleSeconds = idleSeconds
    }

    var prefix: String { TonightPush.eventRoomPrefix }

    func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot {
        try await memory.ready()
        guard catalog.event(id) != nil else { throw .notFound("no event \(id)") }
        return try await actor(for: id).snapshot()
    }

    /// Any node may be asked (a resume): the store says whether the event exists, not this node's
    /// catalog (the one of tonight's node is current).
    func authorize(_ id: String, for user: String) async throws(ProtocolError) {
        if catalog.event(id) != nil { return }
        let stored: Int?
        do { stored = try await store.read { db in try Int.fetchOne(db, sql: "SELECT 1 FROM tonight_event WHERE id = ?", arguments: [id]) } } catch {
            throw ProtocolError(.unavailable, "could not read the event; try again")
        }
        guard stored != nil else { throw .notFound("no event \(id)") }
    }

    func lease(of id: String) -> String { TonightDomain.home }

    func actor(for event: String) -> EventRoomActor {
        actors.withLock { a in
            if let existing = a[event] { return existing }
            let made = EventRoomActor(event: event, rooms: self)
            a[event] = made
            return made
        }
    }

    /// This node took tonight's lease: the rooms' heads are read again.
    func dropAll() { actors.withLock { $0 = [:] } }

    /// A feed changed these events: their rooms hear it too (rooms nobody ever watched are left
    /// alone), all at once (their writes share group commits).
    func changed(_ changes: [(event: String, data: JSON)]) async {
        await withTaskGroup(of: Void.self) { group in
            for (event, data) in changes {
                // A failure is logged; the change is durable and its followers were told in their streams.
                group.addTask { try? await self.actor(for: event).publish(TonightPush.changed, data, always: false) }
            }
        }
    }

    func sweep() async {
        let all = actors.withLock { $0 }, now = clock.now
        for (id, a) in all where await a.sweep(now: now, idleAfter: idleSeconds) {
            actors.withLock { current in if current[id] === a { current[id] = nil } }
        }
    }

    /// `POST /api/events/<id>/live` (operator key): `{status?, text?, score?: {<side>: n}}`, at least
    /// one of them. Stored as the event's latest live state, then pushed as `event.live` with `at`.
    func liveEndpoint(maxBodyBytes: Int) -> HTTPEndpoint {
        HTTPEndpoint("POST", "/api/events/:id/live", maxBodyBytes: maxBodyBytes) { [self] request in
            var report = IngestReport()
            let id = request.parameters["id"] ?? ""
            guard catalog.event(id) != nil else { return .error(404, "no event \(id)") }
            let (body, refusal) = await request.wholeBody(upTo: maxBodyBytes, setting: "tonight.maxLiveBytes")
            guard let bytes = body else { return refusal! }
            let json: JSON
            do { json = try JSONParser.parse(bytes) } catch let error as JSONParser.Error {
                return .error(400, "not JSON: \(error.reason)", [("offset", .int(error.offset))])
            } catch {
                return .error(400, "not JSON")
            }
            let update: JSON
            do throws(ProtocolError) { update = try LiveUpdate.parse(json, at: clock.now) } catch {
                report.rejects.append(.init(record: "Event \(id)", reason: error.message))
                return .json(400, .object(report.fields()))
            }
            let text = update.encoded, at = clock.now
            do {
                try await actor(for: id).publish(TonightPush.live, update) { db in
                    try db.execute(sql: "INSERT OR REPLACE INTO tonight_live (event, state, at) VALUES (?, ?, ?)", arguments: [id, text, at])
                }
            } catch {
                return .error(503, "could not save the update; try again", headers: [("Retry-After", "1")])
            }
            report.added = 1
            return .json(200, .object(report.fields()))
        }.homed(TonightDomain.home)
    }
}

/// A provider's live update of an event, checked: `status` (a short word or phrase), `text`, and
/// `score` (each side's name to a count), at least one of them; `at` is added.
enum LiveUpdate {
    static func parse(_ json: JSON, at: Double) throws(ProtocolError) -> JSON {
        guard case .object = json else { throw .badRequest("the body must be an object {status?, text?, score?}") }
        let a = Args(json)
        var fields: [(String, JSON)] = []
        if let status = try a.optionalString("status", maxLength: 64) { fields.append(("status", .string(status))) }
        if let text = try a.optionalString("text", maxLength: 2_000) { fields.append(("text", .string(text))) }
        if let score = json["score"], score != .null {
            guard case .object(let sides) = score, !sides.isEmpty, sides.count <= 16 else {
                throw .badRequest("field score must be an object of 1 to 16 sides, each a count")
            }
            var out: [(String, JSON)] = []
            for (side, value) in sides {
                guard !side.isEmpty, side.utf8.count <= 64 else { throw .badRequest("field score: a side's name must be 1 to 64 bytes") }
                guard case .int(let n) = value, n >= 0 else { throw .badRequest("field score.\(side) must be a count (an integer ≥ 0)") }
                out.append((side, .int(n)))
            }
            fields.append(("score", .object(out)))
        }
        guard !fields.isEmpty else { throw .badRequest("an update needs status, text or score") }
        return .object(fields + [("at", .double(at))])
    }
}
