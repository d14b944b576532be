import Accounts
import HubbubClient
import HubbubTestSupport
import Logging
import Realtime
import Synchronization
import WebSocket
import XCTest

/// The server's HTTP and WebSocket endpoints as configured.
final class EndpointTests: XCTestCase {
    func testMetricsCountHandshakesFailuresClosesAndTraffic() async throws {
        let server = try TestServer()
        defer { server.stop() }
        // Metrics are per process (other tests add to them too): compare before and after.
        let before = try metrics(server)
        // One bad handshake (wrong version), one protocol error (unmasked frame), one clean echo.
        let bad = try RawSocket(port: server.port)
        bad.send("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
        XCTAssertEqual(bad.readHTTPHead()?.status, 426)
        let rude = try RawSocket(port: server.port)
        try rude.upgrade()
        rude.send(RawSocket.frame(opcode: 0x1, payload: [0x61], masked: false))
        XCTAssertEqual(rude.readCloseCode(), 1002)
        rude.close() // the server lingers for our FIN before it counts the close
        let ws = try await WebSocketClient.connect(to: server.url + "/echo")
        ws.send(text: "hello")
        _ = try await ws.receive()
        ws.close()
        _ = await ws.waitForClose()
        // A peer's own code counts under its range, not as a series of its own.
        let odd = try await WebSocketClient.connect(to: server.url + "/echo")
        odd.close(code: CloseCode(4321), reason: "mine")
        _ = await odd.waitForClose()
        try await Task.sleep(nanoseconds: 600_000_000) // counters are published on the loops' tick

        let after = try metrics(server)
        func delta(_ series: String) -> Double { (after[series] ?? 0) - (before[series] ?? 0) }
        XCTAssertEqual(delta("hubbub_handshake_failures_total{reason=\"version\"}"), 1)
        XCTAssertEqual(delta("hubbub_closes_total{code=\"1002\"}"), 1)
        XCTAssertEqual(delta("hubbub_closes_total{code=\"1000\"}"), 1)
        XCTAssertEqual(delta("hubbub_closes_total{code=\"4xxx\"}"), 1)
        XCTAssertNil(after["hubbub_closes_total{code=\"4321\"}"])
        XCTAssertEqual(delta("hubbub_handshakes_total"), 3)
        for name in ["hubbub_frames_in_total", "hubbub_frames_out_total", "hubbub_bytes_in_total", "hubbub_bytes_out_total",
                     "hubbub_messages_in_total", "hubbub_messages_out_total"] {
            XCTAssertGreaterThan(delta(name), 0, "\(name) should have counted the traffic")
        }
    }

    /// `/metrics` and `/api/...` answer only the operator key: 401 without it or with a wrong one
    /// (compared in full, never echoed, never logged); with no key configured the API does not exist.
    func testOperatorEndpointsNeedTheKey() throws {
        let log = CapturedLog()
        let server = try TestServer(logger: Logger(label: "test") { _ in log })
        defer { server.stop() }
        func status(_ path: String, _ method: String = "GET", key: String?) throws -> (Int?, String) {
            let s = try RawSocket(port: server.port)
            // Connection: close, so the answer ends with the connection (a bodiless request otherwise keeps it).
            s.send("\(method) \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + (key.map { "Authorization: Bearer \($0)\r\n" } ?? "") + "\r\n")
            let text = String(decoding: s.readToEnd(), as: UTF8.self)
            return (Int(text.split(separator: " ").dropFirst().first ?? ""), text)
        }
        let key = TestServer.apiKey
        XCTAssertEqual(try status("/metrics", key: nil).0, 401)
        XCTAssertEqual(try status("/metrics", key: "wrong").0, 401)
        XCTAssertEqual(try status("/metrics", key: key + "x").0, 401, "a longer key is not the key")
        XCTAssertEqual(try status("/metrics", key: String(key.dropLast())).0, 401, "nor a prefix of it")
        let refused = try status("/metrics", key: "wrong").1
        XCTAssertFalse(refused.contains(key))
        XCTAssertTrue(refused.contains("WWW-Authenticate: Bearer"))
        XCTAssertEqual(try status("/metrics", key: key).0, 200)
        XCTAssertEqual(try status("/api/feeds/events", "POST", key: nil).0, 401)
        XCTAssertEqual(try status("/api/no-such-feed", "POST", key: key).0, 404, "an unknown operator path")
        XCTAssertFalse(log.text.contains(key), "the key never reaches the log")

        let open = try TestServer { $0.api.key = "" }
        defer { open.stop() }
        let s = try RawSocket(port: open.port)
        s.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(s.readHTTPHead()?.status, 401, "without a configured key /metrics is off")
        let a = try RawSocket(port: open.port)
        a.send("POST /api/intel HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer anything\r\n\r\n")
        XCTAssertEqual(a.readHTTPHead()?.status, 404, "and the operator API does not exist")
    }

    /// Secrets and passwords never reach the log: the start-up summary says only whether a key is
    /// set, and log-ins (right, wrong, refused) log no password.
    func testTheStartUpLogRedactsSecretsAndNoPasswordIsLogged() async throws {
        let log = CapturedLog()
        let tokenSecret = "token-secret-0123456789abcdef0123456789"
        let server = try TestServer(logger: Logger(label: "test") { _ in log }) {
            $0.logLevel = "trace"
            $0.domainSettings[AccountsDomain.tokenSecret] = tokenSecret
        }
        defer { server.stop() }
        let c = try await ProtocolClient(url: server.url)
        _ = try await c.ok("account.signup", ["username": "sam", "email": "sam@example.com", "password": "Sup3rSecretPw"])
        _ = try await c.call("account.login", ["login": "sam", "password": "Wr0ngGuessPw"])
        _ = try await c.ok("account.password", ["old": "Sup3rSecretPw", "new": "N3wSecretPw"])
        XCTAssertTrue(log.text.contains("configuration"), "the start-up summary is logged")
        XCTAssertTrue(log.text.contains("set (redacted)"))
        for secret in [TestServer.apiKey, tokenSecret, "Sup3rSecretPw", "Wr0ngGuessPw", "N3wSecretPw"] {
            XCTAssertFalse(log.text.contains(secret), "\(secret) reached the log")
        }
    }

    /// The Prometheus text of /metrics as series → value.
    private func metrics(_ server: TestServer) throws -> [String: Double] {
        let m = try RawSocket(port: server.port)
        m.send("GET /metrics HTTP/1.1\r\nHost: x\r\n" + TestServer.operatorHeader + "\r\n")
        let text = String(decoding: m.readToEnd(), as: UTF8.self)
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let v = Double(line[line.index(after: space)...]) else { continue }
            out[String(line[..<space])] = v
        }
        return out
    }

    func testEchoCanBeSwitchedOff() throws {
        let server = try TestServer { c in c.echo = false }
        defer { server.stop() }
        let s = try RawSocket(port: server.port)
        XCTAssertThrowsError(try s.upgrade())
        let t = try RawSocket(port: server.port)
        t.send("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        XCTAssertEqual(t.readHTTPHead()?.status, 404)
    }

    func testBroadcastOnlyWithBenchAndReachesEveryone() async throws {
        let off = try TestServer()
        let probe = try RawSocket(port: off.port)
        probe.send("GET /broadcast HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        XCTAssertEqual(probe.readHTTPHead()?.status, 404)
        off.stop()

        let server = try TestServer { c in c.bench = true }
        defer { server.stop() }
        var clients: [WebSocketClient] = []
        for _ in 0..<6 { clients.append(try await WebSocketClient.connect(to: server.url + "/broadcast")) }
        clients[0].send(text: "to all")
        for c in clients {
            let m = try await c.receive()
            XCTAssertEqual(m.text, "to all")
        }
        for c in clients { c.close() }
        for c in clients { _ = await c.waitForClose() }
    }
}

/// Everything logged through it, as text (for checking what must never be logged). A value, as
/// swift-log's handlers are: each `Logger` copy has its own metadata (PostgresNIO sets a query's
/// on its copy, from many threads at once; one shared dictionary crashed the PostgreSQL pass),
/// while every copy writes to the same lines.
struct CapturedLog: LogHandler {
    private final class Lines: Sendable {
        let lines = Mutex<[String]>([])
    }
    private let sink = Lines()
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
             function: String, line: UInt) {
        sink.lines.withLock { $0.append("\(level) \(message) \(metadata ?? [:])") }
    }
    var text: String { sink.lines.withLock { $0.joined(separator: "\n") } }
}
