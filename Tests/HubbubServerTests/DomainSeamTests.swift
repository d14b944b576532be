import DomainSeam
import HubbubServer
import HubbubTestSupport
import Realtime
import ServiceLifecycle
import Storage
import Synchronization
import WebSocket
import XCTest

/// A domain defined here, in a few lines, and registered beside the standard ones: its ops are
/// dispatched, its rooms subscribed, recovered and left on close, its setting read, its table
/// migrated and its service started and stopped — with no change to the server.
struct CounterDomain: Domain {
    static let name = "counters"
    static let step = Setting("counters.step", default: 1, range: 1...100, help: "how much counter.bump adds")
    static var settings: [any AnySetting] { [step] }
    static func migrations(_ m: inout SQLMigrations) {
        m.registerMigration("counters.v1") { db in try db.execute(sql: "CREATE TABLE counter_bump (n INTEGER NOT NULL)") }
    }

    let rooms: [any RoomDirectory]
    let ops: [Op]
    let services: [any Service]
    let endpoints: [HTTPEndpoint]

    init(context: DomainContext) {
        let directory = Counters(sink: context.sink, step: context.settings[Self.step], history: context.roomHistory)
        rooms = [directory]
        ops = [
            .user("counter.bump", .write, NameArgs.self) { c throws(ProtocolError) in
                .reply(["value": .int(await directory.counter(c.args.name).bump())])
            },
            .user("counter.members", .read, NameArgs.self) { c throws(ProtocolError) in
                .reply(["members": .int(await directory.counter(c.args.name).members)])
            },
        ]
        services = [Started()]
        // An operator endpoint: `POST /api/counters/<name>/bytes?times=n` adds the body's length n times.
        endpoints = [HTTPEndpoint("POST", "/api/counters/:name/bytes", maxBodyBytes: 1 << 20) { request in
            var length = 0
            do {
                for try await chunk in request.body { length += chunk.count }
            } catch {
                return .error(400, "\(error)")
            }
            let times = Int(request.query["times"] ?? "1") ?? 1
            let counter = directory.counter(request.parameters["name"] ?? "")
            var value = 0
            for _ in 0..<times { value = await counter.add(length) }
            return .json(200, ["value": .int(value), "name": .string(request.parameters["name"] ?? "")])
        }]
    }

    struct NameArgs: OpArguments {
        var name: String
        init(_ a: Args) throws(ProtocolError) { name = try a.string("name", maxLength: 20) }
    }

    /// `counter:<name>` rooms, one actor each.
    final class Counters: RoomDirectory, @unchecked Sendable {
        let prefix = "counter"
        let sink: any PushSink
        let step: Int
        let history: Room.HistoryLimits
        private let lock = NSLock()
        private var live: [String: Counter] = [:]
        init(sink: any PushSink, step: Int, history: Room.HistoryLimits) { (self.sink, self.step, self.history) = (sink, step, history) }

        func counter(_ name: String) -> Counter {
            lock.withLock {
                if let c = live[name] { return c }
                let c = Counter(name: name, sink: sink, step: step, history: history)
                live[name] = c
                return c
            }
        }
        func host(_ id: String, for user: String) async throws(ProtocolError) -> any RoomHost { counter(id) }
        func liveHost(_ id: String) -> (any RoomHost)? { lock.withLock { live[id] } }
    }

    actor Counter: RoomHost {
        enum Event: String, RoomEvent { case bumped = "counter.bumped" }
        private var room: Room
        private var value = 0
        private let sink: any PushSink
        private let step: Int
        init(name: String, sink: any PushSink, step: Int, history: Room.HistoryLimits) {
            room = Room(name: "counter:\(name)", epoch: "e1", limits: history)
            (self.sink, self.step) = (sink, step)
        }
        func bump() -> Int { add(step) }
        func add(_ n: Int) -> Int {
            value += n
            room.publish(Event.bumped, data: ["value": .int(value)], now: 0, sink: sink)
            return value
        }
        func subscribe(reply: Replier, since: Since?) async throws(ProtocolError) {
            room.subscribe(reply.member, since: since, now: 0, reply: reply) { ["value": .int(value)] }
        }
        func unsubscribe(_ member: ConnectionID) { room.leave(member) }
        var members: Int { room.memberCount }
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
        let resumed = try await b.ok("subscribe", ["room": "counter:c1", "since": ["seq": 0, "epoch": "e1"]])
        XCTAssertEqual(resumed["recovered"], true)
        let replayed = try await b.waitForPushes(1)
        XCTAssertEqual(replayed.first?["seq"], 1)

        // Left on close: both members go when their connections do.
        a.close()
        b.close()
        XCTAssertEqual(CounterDomain.Started.runs.withLock { $0 } >= 1, true, "its service ran")
        let c = try await ProtocolClient(url: server.url)
        _ = try await c.ok("account.login", ["login": "counter-a", "password": "secret123"])
        var members = -1
        for _ in 0..<100 {
            members = try await c.ok("counter.members", ["name": "c1"])["members"]?.int ?? -1
            if members == 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertEqual(members, 0, "closed connections left the room")
        let unknown = try await c.errorCode("subscribe", ["room": "nowhere:x"])
        XCTAssertEqual(unknown, "bad_request", "an unknown prefix is named")

        // Its HTTP endpoint: path parameter, query, a streamed body, behind the operator key.
        let body = Array(repeating: UInt8(ascii: "x"), count: 100_000)
        let posted = try server.api("POST", "/api/counters/c%201/bytes?times=2", body: body, chunked: true)
        XCTAssertEqual(posted.status, 200)
        XCTAssertEqual(posted.json?["value"], 200_000)
        XCTAssertEqual(posted.json?["name"], "c 1")
        XCTAssertEqual(try server.api("POST", "/api/counters/c1/bytes", body: body, key: nil).status, 401)
        XCTAssertEqual(try server.api("PUT", "/api/counters/c1/bytes").status, 405)
        XCTAssertEqual(try server.api("POST", "/api/counters/c1/other").status, 404)
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
