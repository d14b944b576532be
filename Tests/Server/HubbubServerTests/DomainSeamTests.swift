import DomainSeam
import HubbubServer
import HubbubTestSupport
import Realtime
import RoomLog
import ServiceLifecycle
import Storage
import Synchronization
import WebSocket
import XCTest

/// A domain defined here and registered beside the standard ones, on the path theirs take: its ops
/// are dispatched (on the room's owner), its `counter:` rooms written through a `RoomWriter` (a
/// change and its push in one transaction, delivered once durable), subscribed, recovered and left
/// on close by the core, its setting read, its table migrated and written, its service started and
/// stopped, its endpoint served — with no change to the server. docs/architecture.md, "Adding a
/// domain", walks through it.
struct CounterDomain: Domain {
    static let name = "counters"
    static let step = Setting("counters.step", default: 1, range: 1...100, help: "how much counter.bump adds")
    static var settings: [any AnySetting] { [step] }
    static func migrations(_ m: inout SQLMigrations) {
        m.registerMigration("counters.v1") { db in
            try db.execute(sql: "CREATE TABLE counter (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
        }
    }

    let rooms: [any RoomDirectory]
    let ops: [Op]
    let services: [any Service] = [Started()]
    let endpoints: [HTTPEndpoint]

    init(context: DomainContext) {
        let counters = Counters(context: context, step: context.settings[Self.step])
        let feed = context.feed
        rooms = [counters]
        ops = [
            .user("counter.bump", .write, NameArgs.self) { c throws(ProtocolError) in
                .reply(["value": .int(try await counters.counter(c.args.name).add(nil))])
            }.homed { a in (try? a.string("name", maxLength: 20)).map { "counter:\($0)" } },
            .user("counter.watched", .read, NameArgs.self) { c throws(ProtocolError) in
                .reply(["watched": .bool(feed.watched(prefix: "counter").contains(c.args.name))])
            },
        ]
        // An operator endpoint: `POST /api/counters/<name>/bytes?times=n` adds the body's length n times.
        endpoints = [HTTPEndpoint("POST", "/api/counters/:name/bytes", maxBodyBytes: 1 << 20) { request in
            var length = 0, value = 0
            do {
                for try await chunk in request.body { length += chunk.count }
                let counter = counters.counter(request.parameters["name"] ?? "")
                for _ in 0..<(Int(request.query["times"] ?? "1") ?? 1) { value = try await counter.add(length) }
            } catch {
                return .error(400, "\(error)")
            }
            return .json(200, ["value": .int(value), "name": .string(request.parameters["name"] ?? "")])
        }]
    }

    struct NameArgs: OpArguments {
        var name: String
        init(_ a: Args) throws(ProtocolError) { name = try a.string("name", maxLength: 20) }
    }

    /// `counter:<name>` rooms, one actor each; any logged-in user may watch any counter.
    final class Counters: RoomDirectory {
        let prefix = "counter"
        let context: DomainContext
        let step: Int
        private let live = Mutex<[String: Counter]>([:])
        init(context: DomainContext, step: Int) { (self.context, self.step) = (context, step) }

        func counter(_ name: String) -> Counter {
            live.withLock { live in
                if let c = live[name] { return c }
                let c = Counter(name: name, context: context, step: step)
                live[name] = c
                return c
            }
        }

        func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot { try await counter(id).snapshot() }
        func authorize(_ id: String, for user: String) async throws(ProtocolError) {}
        /// This node just took `counter:<id>`: another node may have changed it meanwhile.
        func acquired(_ id: String) { _ = live.withLock { $0.removeValue(forKey: id) } }
    }

    /// One counter: its value, and the writer of its room.
    actor Counter {
        enum Event: String, RoomEvent { case bumped = "counter.bumped" }
        let name: String
        private let store: Store
        private let writer: RoomWriter
        private let step: Int
        /// The value with every change in flight; nil until read (again, after a failed write).
        private var value: Int?

        init(name: String, context: DomainContext, step: Int) {
            self.name = name
            store = context.store
            writer = RoomWriter(store: context.store, feed: context.feed, logger: context.logger)
            self.step = step
        }

        private var room: String { "counter:\(name)" }

        /// The value, read with the room's head on first use.
        private func load() async throws(ProtocolError) -> Int {
            if let value { return value }
            let (room, name) = (self.room, self.name)
            let stored: (RoomHead, Int)
            do {
                stored = try await store.write { db in
                    (try RoomLogRows.head(of: room, db), try Int.fetchOne(db, sql: "SELECT value FROM counter WHERE name = ?", arguments: [name]) ?? 0)
                }
            } catch {
                throw ProtocolError(.unavailable, "could not read the counter; try again")
            }
            if value == nil { // another call may have loaded it meanwhile
                writer.reload(room, head: stored.0)
                value = stored.1
            }
            return value!
        }

        /// Adds `n` (the step if nil); returns the value once it and its push are durable.
        func add(_ n: Int?) async throws(ProtocolError) -> Int {
            let next = try await load() + (n ?? step)
            try writer.admit()
            value = next
            writer.stage(Event.bumped, data: ["value": .int(next)], in: room, at: Date().timeIntervalSince1970)
            let name = self.name
            do {
                try await writer.commit { rows in
                    try rows.db.execute(sql: "INSERT INTO counter (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                                        arguments: [name, next])
                }
            } catch {
                value = nil // memory may be ahead of the store: read it again (the writer's policy)
                throw error
            }
            return next
        }

        /// `{value}` with every change in flight, at the head that includes them (marked while in flight).
        func snapshot() async throws(ProtocolError) -> RoomSnapshot {
            let current = try await load()
            guard let at = writer.snapshot(of: room) else { throw ProtocolError(.unavailable, "the counter is reloading; try again") }
            return RoomSnapshot(head: at.head, data: ["value": .int(current)], mark: at.mark)
        }
    }

    /// Records that the server ran it.
    struct Started: Service {
        static let runs = Mutex(0)
        func run() async throws {
            Started.runs.withLock { $0 += 1 }
            try? await gracefulShutdown()
        }
    }
}

final class DomainSeamTests: XCTestCase {
    func testATestDomainPlugsIn() async throws {
        let server = try TestServer(domains: HubbubServer.standardDomains + [CounterDomain.self]) { c in
            c.domainSettings[CounterDomain.step] = 5
        }
        defer { server.stop() }
        let a = try await ProtocolClient(url: server.url)
        _ = try await a.ok("account.signup", ["username": "counter-a", "email": "a@example.com", "password": "secret123"])
        let sub = try await a.ok("subscribe", ["room": "counter:c1"])
        XCTAssertEqual(sub["snapshot"], ["value": 0])
        let bumped = try await a.ok("counter.bump", ["name": "c1"])
        XCTAssertEqual(bumped["value"], 5, "the op is dispatched, with its setting")
        let pushed = try await a.waitForPushes(1)
        XCTAssertEqual(pushed.first?["event"]?.string, "counter.bumped")
        XCTAssertEqual(pushed.first?["data"]?["value"], 5)

        // Recovery: a second client resumes from seq 0 of the same epoch and gets the missed push.
        let b = try await ProtocolClient(url: server.url)
        _ = try await b.ok("account.login", ["login": "counter-a", "password": "secret123"])
        let epoch = try XCTUnwrap(sub["epoch"]?.string)
        let resumed = try await b.ok("subscribe", ["room": "counter:c1", "since": ["seq": .int((sub["seq"]?.int ?? 0)), "epoch": .string(epoch)]])
        XCTAssertEqual(resumed["recovered"], true)
        let replayed = try await b.waitForPushes(1)
        XCTAssertEqual(replayed.first?["seq"]?.int, (sub["seq"]?.int ?? 0) + 1)

        // Left on close: the room is no longer watched once both connections are gone.
        a.close()
        b.close()
        XCTAssertEqual(CounterDomain.Started.runs.withLock { $0 } >= 1, true, "its service ran")
        let c = try await ProtocolClient(url: server.url)
        _ = try await c.ok("account.login", ["login": "counter-a", "password": "secret123"])
        var watched = true
        try await eventually(every: .milliseconds(20)) {
            watched = try await c.ok("counter.watched", ["name": "c1"])["watched"] == true
            return !watched
        }
        XCTAssertFalse(watched, "closed connections left the room")
        let unknown = try await c.errorCode("subscribe", ["room": "nowhere:x"])
        XCTAssertEqual(unknown, "bad_request", "an unknown prefix is named")
        let unknownLeave = try await c.errorCode("unsubscribe", ["room": "nowhere:x"])
        XCTAssertEqual(unknownLeave, "bad_request", "on unsubscribe too")

        // Its HTTP endpoint: path parameter, query, a streamed body, behind the operator key.
        let body = Array(repeating: UInt8(ascii: "x"), count: 100_000)
        let posted = try server.api("POST", "/api/counters/c%201/bytes?times=2", body: body, chunked: true)
        XCTAssertEqual(posted.status, 200)
        XCTAssertEqual(posted.json?["value"], 200_000)
        XCTAssertEqual(posted.json?["name"], "c 1")
        XCTAssertEqual(try server.api("POST", "/api/counters/c1/bytes", body: body, key: nil).status, 401)
        XCTAssertEqual(try server.api("PUT", "/api/counters/c1/bytes").status, 405)
        XCTAssertEqual(try server.api("POST", "/api/counters/c1/other").status, 404)

        // Its table and its room's log are durable: after a restart the counter, its seq and its
        // epoch are where they were.
        server.stop()
        let again = try TestServer(dataDir: server.configuration.dataDir, domains: HubbubServer.standardDomains + [CounterDomain.self])
        defer { again.stop() }
        let d = try await ProtocolClient(url: again.url)
        _ = try await d.ok("account.login", ["login": "counter-a", "password": "secret123"])
        let after = try await d.ok("subscribe", ["room": "counter:c1"])
        XCTAssertEqual(after["snapshot"], ["value": 5])
        XCTAssertEqual(after["seq"]?.int, (sub["seq"]?.int ?? 0) + 1)
        XCTAssertEqual(after["epoch"]?.string, epoch)
    }

    /// A body read slower than it arrives holds the sender back: past `highWater` unread bytes the
    /// producer is paused, and resumed once the reader has drained half of it.
    func testARequestBodyPausesItsProducerWhileTheReaderLags() async throws {
        let events = Mutex<[String]>([])
        let body = RequestBody(highWater: 100, pause: { events.withLock { $0.append("pause") } },
                               resume: { events.withLock { $0.append("resume") } })
        for _ in 0..<3 { body.append(Array(repeating: 1, count: 40)) }
        XCTAssertEqual(events.withLock { $0 }, ["pause"], "120 unread bytes > 100")
        body.append(Array(repeating: 2, count: 40))
        XCTAssertEqual(events.withLock { $0 }, ["pause"], "paused once")
        var iterator = body.makeAsyncIterator()
        _ = try await iterator.next()
        _ = try await iterator.next()
        XCTAssertEqual(events.withLock { $0 }, ["pause"], "80 unread: not yet drained to half")
        _ = try await iterator.next()
        XCTAssertEqual(events.withLock { $0 }, ["pause", "resume"], "40 unread")
        body.finish()
        let last = try await iterator.next()
        XCTAssertEqual(last, Array(repeating: 2, count: 40))
        let end = try await iterator.next()
        XCTAssertNil(end)

        let cut = RequestBody()
        cut.append([1, 2, 3])
        cut.abort(reason: "connection lost")
        var reader = cut.makeAsyncIterator()
        let first = try await reader.next()
        XCTAssertEqual(first, [1, 2, 3], "what arrived is still read")
        do {
            _ = try await reader.next()
            XCTFail("an aborted body throws")
        } catch let aborted as RequestBody.Aborted {
            XCTAssertEqual(aborted.reason, "connection lost")
        }
    }

    func testEndpointPatternsMatchSegments() {
        let e = HTTPEndpoint("POST", "/api/events/:id/live", maxBodyBytes: 1) { _ in .json(200, [:]) }
        XCTAssertEqual(e.match("/api/events/e42/live"), ["id": "e42"])
        XCTAssertEqual(e.match("/api/events/caf%C3%A9/live"), ["id": "café"])
        XCTAssertNil(e.match("/api/events/live"))
        XCTAssertNil(e.match("/api/events/e42/live/more"))
        XCTAssertNil(e.match("/api/venues/e42/live"))
        let r = HTTPRequest(method: "POST", target: "/api/x?feed=gvb&empty=&a+b=c%20d", body: RequestBody([]))
        XCTAssertEqual(r.path, "/api/x")
        XCTAssertEqual(r.query, ["feed": "gvb", "empty": "", "a b": "c d"])
    }

    func testAReloadGateLoadsOnceForConcurrentCallersAndAgainAfterATakeOver() async throws {
        let loads = Mutex(0)
        let gate = ReloadGate("test memory", stale: true) {
            loads.withLock { $0 += 1 }
            try? await Task.sleep(for: .milliseconds(50))
            return true
        }
        await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { try await gate.ready() } }
        }
        XCTAssertEqual(loads.withLock { $0 }, 1, "twenty callers wait for one load")
        try await gate.ready()
        XCTAssertEqual(loads.withLock { $0 }, 1, "current memory is not loaded again")
        gate.invalidate()
        try await gate.ready()
        XCTAssertEqual(loads.withLock { $0 }, 2, "taking the lease again reloads")
    }

    func testAReloadThatFailsAnswersUnavailableAndIsTriedAgain() async throws {
        let outcomes = Mutex([false, true])
        let gate = ReloadGate("test memory", stale: true) { outcomes.withLock { $0.removeFirst() } }
        do {
            try await gate.ready()
            XCTFail("a failed reload let the caller through")
        } catch {
            XCTAssertEqual(error.code, .unavailable)
            XCTAssertTrue(error.message.contains("test memory"), error.message)
        }
        try await gate.ready()
        XCTAssertTrue(outcomes.withLock { $0.isEmpty }, "the next caller reloaded")
    }

    func testAGatedEndpointAnswers503UntilTheReloadSucceeds() async throws {
        let ok = Mutex(false)
        let gate = ReloadGate("test memory", stale: true) { ok.withLock { $0 } }
        let endpoint = HTTPEndpoint("POST", "/api/x", maxBodyBytes: 10) { _ in .json(200, ["done": true]) }.preceded(by: gate.ready)
        let refused = await endpoint.handle(HTTPRequest(method: "POST", target: "/api/x", body: RequestBody([])))
        XCTAssertEqual(refused.status, 503)
        XCTAssertTrue(refused.headers.contains { $0.0 == "Retry-After" })
        ok.withLock { $0 = true }
        let served = await endpoint.handle(HTTPRequest(method: "POST", target: "/api/x", body: RequestBody([])))
        XCTAssertEqual(served.status, 200)
    }
}
