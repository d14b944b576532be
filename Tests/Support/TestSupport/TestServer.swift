import Foundation
import Accounts
import DomainSeam
import HubbubServer
import Logging
import Realtime

/// A Hubbub server started inside the test process on free ports.
public final class TestServer: @unchecked Sendable {
    public let server: HubbubServer
    public let configuration: HubbubConfiguration
    public var port: Int { server.port }
    public var tlsPort: Int? { server.tlsPort }
    public var url: String { "ws://127.0.0.1:\(port)" }
    public var tlsURL: String? { tlsPort.map { "wss://127.0.0.1:\($0)" } }

    /// Starts a server; `configure` adjusts the defaults (port 0, data in a temporary directory).
    /// The operator key test servers are started with (`api.key`).
    public static let apiKey = "test-operator-key"
    /// The header line that carries it, for raw HTTP requests.
    public static let operatorHeader = "Authorization: Bearer \(apiKey)\r\n"

    public init(tls: Bool = false, dataDir: String? = nil, domains: [any Domain.Type] = HubbubServer.standardDomains,
                logger: Logger = Logger(label: "test"), clock: WallClock = .system, _ configure: (inout HubbubConfiguration) -> Void = { _ in }) throws {
        var config = HubbubConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.eventLoops = 2
        config.dataDir = dataDir ?? TestDataDirectories.root + "/\(UUID().uuidString)"
        config.logLevel = "warning"
        config.domainSettings[AccountsDomain.kdfIterations] = 1000 // fast tests; the KDF itself is the same
        config.domainSettings[AccountsDomain.kdfMaxQueued] = 100_000 // tests sign many users up at once
        // Tests sign many users up from 127.0.0.1; the sign-up limit has tests of its own.
        config.domainSettings[AccountsDomain.signupsPerAddressPerHour] = 1_000_000
        config.rateLimits.authBurst = 1000
        config.rateLimits.readBurst = 10_000
        config.rateLimits.writeBurst = 10_000
        config.api.key = TestServer.apiKey
        if tls {
            let cert = try DevCertificate.shared()
            config.tls.port = 0
            config.tls.cert = cert.cert
            config.tls.key = cert.key
        }
        if let cluster = ProcessInfo.processInfo.environment["HB_TEST_POSTGRES"], !cluster.isEmpty {
            // The suite against PostgreSQL: a database per data directory (a restart on the same
            // directory finds its data again).
            config.database.url = try TestPostgres.database(for: config.dataDir, in: cluster)
        }
        configure(&config)
        // tls.port 0 means "off" in configuration; tests want TLS on a free port.
        server = try HubbubServer(configuration: config, logger: logger, domains: domains, tlsOnFreePort: tls, clock: clock)
        configuration = config
        server.start()
    }

    public func stop() { server.shutdown() }
}

/// Where test servers keep their data unless told otherwise: one directory per test process,
/// removed as the process exits (a directory per server, left behind, filled CI's /tmp with
/// thousands of databases). Directories of test processes that died without exiting are removed
/// by the next one.
public enum TestDataDirectories {
    public static let root: String = {
        let base = NSTemporaryDirectory() + "hubbub-tests"
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] {
            if let pid = Int32(entry), pid != getpid(), kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(atPath: base + "/" + entry)
            }
        }
        let root = base + "/\(getpid())"
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: TestDataDirectories.root) }
        return root
    }()
}

/// A clock tests set and move by hand (`TestServer(clock: fake.clock)`).
public final class FakeClock: @unchecked Sendable {
    private let lock = NSLock()
    private var time: Double

    public init(_ time: Double) { self.time = time }

    public var now: Double {
        get { lock.lock(); defer { lock.unlock() }; return time }
        set { lock.lock(); time = newValue; lock.unlock() }
    }

    public func advance(_ seconds: Double) { now += seconds }

    public var clock: WallClock { WallClock { [self] in now } }
}

/// A self-signed certificate for tests, made once per process with the openssl command.
public enum DevCertificate {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var made: (cert: String, key: String)?

    public static func shared() throws -> (cert: String, key: String) {
        lock.lock()
        defer { lock.unlock() }
        if let made { return made }
        let dir = NSTemporaryDirectory() + "hubbub-cert-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                       "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem", "-days", "2", "-subj", "/CN=localhost",
                       "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw TestError("openssl req failed (is the openssl command installed?)") }
        made = (dir + "/cert.pem", dir + "/key.pem")
        return made!
    }
}

extension TestServer {
    /// A new connection, signed up (and so logged in) as `name` with password `secret123`; and the user's id.
    public func user(_ name: String) async throws -> (ProtocolClient, String) {
        let c = try await ProtocolClient(url: url)
        let r = try await c.ok("account.signup", ["username": .string(name), "email": .string("\(name)@example.com"), "password": "secret123"])
        return (c, r["user"]?["id"]?.string ?? "")
    }
}

extension TestServer {
    /// One operator request (`/api/...`) with the operator key (or `key`), on a new connection:
    /// the status and the body parsed as JSON (nil when it is not JSON).
    public func api(_ method: String, _ path: String, body: [UInt8] = [], key: String? = TestServer.apiKey,
                    chunked: Bool = false) throws -> (status: Int, json: JSON?) {
        let s = try RawSocket(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        head += chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Content-Length: \(body.count)\r\n\r\n"
        s.send(Array(head.utf8))
        if chunked {
            // Uneven pieces, so the body arrives in several reads.
            var rest = body[...]
            var size = 7
            while !rest.isEmpty {
                let piece = rest.prefix(size)
                rest = rest.dropFirst(piece.count)
                s.send(Array((String(piece.count, radix: 16) + "\r\n").utf8) + piece + Array("\r\n".utf8))
                size = size * 3 % 4096 + 1
            }
            s.send("0\r\n\r\n")
        } else {
            s.send(body)
        }
        guard let response = s.readHTTPResponse() else { throw TestError("no HTTP response to \(method) \(path)") }
        return (response.status, try? JSONParser.parse(response.body))
    }
}
