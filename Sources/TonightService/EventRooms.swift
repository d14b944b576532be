import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import Storage
import Synchronization
import Tonight
import WebSocket

/// One event's `event:` room: providers' live updates (`event.live`) and the feed's changes
/// (`event.changed`), with the usual seq, epoch and recovery. Its snapshot is the event and its
/// latest live state (durable: `tonight_live`).
actor EventRoomActor: RoomHost {
    nonisolated let event: String
    private let rooms: EventRooms
    private var room: Room
    /// The latest `event.live` data, read from the store on first use (`.null`: none yet).
    private var live: JSON?
    private var lastActivity: Double
    /// Let go by a sweep: a late subscriber goes to the room's successor.
    private var retired = false

    init(event: String, rooms: EventRooms) {
        self.event = event
        self.rooms = rooms
        room = Room(name: "event:\(event)", epoch: Digest.randomToken(length: 8), limits: rooms.history)
        lastActivity = rooms.clock.now
    }

    func subscribe(reply: Replier, since: Since?) async throws(ProtocolError) {
        if retired { return try await rooms.actor(for: event).subscribe(reply: reply, since: since) }
        if live == nil {
            let event = self.event
            let stored: String?
            do {
                stored = try await rooms.store.read { db in try String.fetchOne(db, sql: "SELECT state FROM tonight_live WHERE event = ?", arguments: [event]) }
            } catch {
                throw ProtocolError(.unavailable, "could not read the event's live state; try again")
            }
            if live == nil { live = stored.flatMap { try? JSONParser.parse(Array($0.utf8)) } ?? .null }
        }
        let snapshot: JSON = ["event": rooms.catalog.with { c in c.events[event].map { TonightJSON.event($0, c) } } ?? .null, "live": live ?? .null]
        lastActivity = rooms.clock.now
        room.subscribe(reply.member, since: since, now: lastActivity, reply: reply) { snapshot }
    }

    func unsubscribe(_ member: ConnectionID) {
        room.leave(member)
        lastActivity = rooms.clock.now
    }

    /// A live update, now durable.
    func publishLive(_ data: JSON) {
        live = data
        lastActivity = rooms.clock.now
        room.publish(TonightEvent.live, data: data, now: lastActivity, sink: rooms.sink)
    }

    func publishChanged(_ data: JSON) {
        lastActivity = rooms.clock.now
        room.publish(TonightEvent.changed, data: data, now: lastActivity, sink: rooms.sink)
    }

    func sweep(now: Double, idleAfter seconds: Double) {
        room.trimHistory(now: now)
        guard !retired, room.memberCount == 0, now - lastActivity > seconds else { return }
        retired = true
        rooms.forget(self)
    }
}

/// The live `event:` rooms, by event id; any logged-in user may subscribe to an event the catalog holds.
final class EventRooms: RoomDirectory {
    let catalog: Catalog
    let store: Store
    let sink: any PushSink
    let clock: WallClock
    let history: Room.HistoryLimits
    let idleSeconds: Double
    private let actors = Mutex<[String: EventRoomActor]>([:])

    init(catalog: Catalog, store: Store, sink: any PushSink, clock: WallClock, history: Room.HistoryLimits, idleSeconds: Double) {
        self.catalog = catalog
        self.store = store
        self.sink = sink
        self.clock = clock
        self.history = history
        self.idleSeconds = idleSeconds
    }

    var prefix: String { "event" }

    func host(_ id: String, for user: String) async throws(ProtocolError) -> any RoomHost {
        guard catalog.event(id) != nil else { throw .notFound("no event \(id)") }
        return actor(for: id)
    }

    func liveHost(_ id: String) -> (any RoomHost)? { actors.withLock { $0[id] } }

    func actor(for event: String) -> EventRoomActor {
        actors.withLock { a in
            if let existing = a[event] { return existing }
            let made = EventRoomActor(event: event, rooms: self)
            a[event] = made
            return made
        }
    }

    func forget(_ actor: EventRoomActor) {
        actors.withLock { a in if a[actor.event] === actor { a[actor.event] = nil } }
    }

    /// A feed changed the event: its room hears it too, if anyone holds it.
    func changed(_ event: String, _ data: JSON) async {
        guard let a = actors.withLock({ $0[event] }) else { return }
        await a.publishChanged(data)
    }

    func sweep() async {
        let all = actors.withLock { Array($0.values) }, now = clock.now
        for a in all { await a.sweep(now: now, idleAfter: idleSeconds) }
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
                try await store.write { db in
                    try db.execute(sql: "INSERT OR REPLACE INTO tonight_live (event, state, at) VALUES (?, ?, ?)", arguments: [id, text, at])
                }
            } catch {
                return .error(503, "could not save the update; try again", headers: [("Retry-After", "1")])
            }
            await actor(for: id).publishLive(update)
            report.added = 1
            return .json(200, .object(report.fields()))
        }
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
