import Foundation
import Configuration
import DomainSeam
import Logging
import Realtime
import SystemPackage
import Transport
import WebSocket

/// Every setting of the server, with its default (a field's initial value). Each field is read
/// through its line in `coreSettings` (key, range, help; `CoreSettings.swift`), the domains' through
/// their own `Setting`s. The same defaults are written out in `config/hubbub.json`; a test keeps the
/// two in step.
public struct HubbubConfiguration: Sendable, Equatable {
    public var host = "0.0.0.0"
    public var port = 8080
    public var tls = TLS()
    /// Where durable data lives (SQLite files).
    public var dataDir = "data"
    /// Event loop threads; 0 means one per core.
    public var eventLoops = 0
    /// Microseconds a loop polls after its last event before sleeping (0: never polls).
    public var spinMicros = 0
    /// Serve `/broadcast` for benchmarks (off by default).
    public var bench = false
    /// Serve `/echo` for conformance runs and benchmarks (on by default).
    public var echo = true
    public var limits = Limits()
    public var timeouts = Timeouts()
    public var deflate = Deflate()
    /// When non-empty, browsers from other origins are refused (403).
    public var allowedOrigins: [String] = []
    /// trace, debug, info, notice, warning, error, critical.
    public var logLevel = "info"
    public var rateLimits = RateLimits()
    public var sessions = Sessions()
    public var rooms = Rooms()
    public var storage = Storage()
    public var database = DatabaseChoice()
    public var cluster = Cluster()
    public var api = API()
    public var web = Web()
    /// The domains' own settings (`venues.retireAfterSeconds`, `auth.kdfIterations`...), by key;
    /// a key not set has its `Setting`'s default.
    public var domainSettings = SettingValues()

    /// Per-session token buckets (sustained per second, burst).
    public struct RateLimits: Sendable, Equatable {
        public var authPerSecond = 1.0
        public var authBurst = 10
        public var readPerSecond = 50.0
        public var readBurst = 100
        public var writePerSecond = 20.0
        public var writeBurst = 40
        /// Requests refused in a row before the connection is closed with 4003.
        public var abuseThreshold = 100
    }

    public struct Sessions: Sendable, Equatable {
        /// Requests queued and not yet handled; beyond it the connection is closed with 4003.
        public var maxPendingRequests = 256
        public var maxSubscriptions = 100
    }

    public struct Rooms: Sendable, Equatable {
        /// Pushes each room keeps for recovery.
        public var historySize = 1000
        /// Oldest push kept for recovery, in seconds.
        public var historySeconds = 300
        /// Most bytes of pushes each room keeps for recovery.
        public var historyBytes = 256 * 1024
        /// Most bytes all rooms' histories hold together (each room an equal share, at least 4 KiB).
        public var totalHistoryBytes = 64 << 20
        /// How long the room log (in the store) keeps pushes of logged rooms, for recovery beyond
        /// the memory history and on another node.
        public var logRetentionSeconds = 900
    }

    public struct API: Sendable, Equatable {
        /// The operator key: `GET /metrics` and `POST /api/...` need `Authorization: Bearer <key>`.
        /// Empty: `/metrics` answers 401 and `/api/...` 404.
        public var key = ""
    }

    /// The web client served at `/` (pages, hubbub.js).
    public struct Web: Sendable, Equatable {
        /// Serve it (off: `/` answers 404 like any unknown path).
        public var enabled = true
        /// Serve the files of this directory instead of those built in, read again at each request
        /// (while working on the pages: no rebuild, no restart). Empty: the built-in files.
        public var root = ""
    }

    /// Where the durable store lives.
    public struct DatabaseChoice: Sendable, Equatable {
        /// `postgres://user:password@host:port/database[?sslmode=require]`: PostgreSQL, which several
        /// nodes may share. Empty (the default): SQLite in `dataDir`. Also `--database <url>`.
        public var url = ""

        /// The URL without its password, for the log.
        public var redacted: String {
            guard !url.isEmpty else { return "sqlite" }
            guard var c = URLComponents(string: url) else { return "postgres (unparsable url)" }
            if c.password != nil { c.password = "redacted" }
            return c.string ?? "postgres"
        }
    }

    /// Several nodes on one PostgreSQL (`database.url`): how this node is found and how long it
    /// holds a room.
    public struct Cluster: Sendable, Equatable {
        /// `host:port` other nodes reach this node's plain port at, for forwarded ops. Empty: the
        /// configured host (127.0.0.1 for 0.0.0.0) and the bound port.
        public var advertise = ""
        /// A room's lease: a dead node's rooms move to another after at most this.
        public var leaseSeconds = 6
        /// How long a forwarded op may wait for the owner's reply.
        public var forwardTimeoutSeconds = 10
    }

    public struct Storage: Sendable, Equatable {
        /// Most changes in one group transaction.
        public var maxBatch = 1000
        /// Most changes waiting for the disk; more are refused (`unavailable`) rather than queued.
        public var maxPendingWrites = 100_000
        /// Read queries that may run at once.
        public var maxReaders = 4
        /// SQLite page cache per connection (the writer and each reader), in KiB.
        public var cacheKiB = 2048
        /// The writer's page cache, in KiB: bulk writes (a feed's ingest) touch many pages, and a
        /// page evicted between two transactions is read back and written again.
        public var writerCacheKiB = 32_768
        /// How long SQLite waits for a lock another process holds on the database file (a backup,
        /// an operator's `sqlite3`), in seconds, before the store answers an error.
        public var busyTimeoutSeconds = 5
    }

    public struct TLS: Sendable, Equatable {
        /// wss:// port; 0 disables TLS.
        public var port = 0
        public var cert = ""
        public var key = ""
    }

    public struct Limits: Sendable, Equatable {
        public var maxConnections = 200_000
        public var maxConnectionsPerIp = 10_000
        public var maxFrameBytes = 1 << 20
        public var maxMessageBytes = 1 << 20
        /// `/echo` takes bigger messages: conformance suites send up to 16 MiB.
        public var echoMaxMessageBytes = 16 << 20
        /// Outbound queue per connection; past it the client is closed with 4001.
        public var maxOutboundBytes = 1 << 20
        public var maxRequestBytes = 8192
        public var maxHeaders = 64
        /// Largest message a `/ws` connection may send before it logs in (sign-up, log-in and
        /// `auth` need far less); beyond it the connection is closed with 1009. Hostile clients
        /// need no account to send, so what they can make the server parse stays small.
        public var maxMessageBytesBeforeLogin = 16 << 10
        /// Containers nested in a request (deeper: `too_large`).
        public var maxJsonDepth = 32
        /// Keys in one object of a request (more: `too_large`).
        public var maxJsonKeysPerObject = 1000
        /// Values in one request, containers included (more: `too_large`); a 5,000-track
        /// playlist is about 30,000.
        public var maxJsonValues = 100_000
    }

    public struct Timeouts: Sendable, Equatable {
        public var handshakeMs = 10_000
        /// A request body may go this long without a byte arriving (408 after it).
        public var bodyIdleMs = 10_000
        public var pingIntervalMs = 30_000
        public var pongTimeoutMs = 10_000
        public var idleMs = 120_000
        public var closeMs = 5_000
        public var shutdownMs = 10_000
        public var tickMs = 250
    }

    public struct Deflate: Sendable, Equatable {
        public var enabled = true
        public var serverNoContextTakeover = true
        public var clientNoContextTakeover = true
        public var serverMaxWindowBits = 15
        public var memoryLevel = 8
        public var level = 6
        public var minimumSize = 256
    }

    public init() {}

    /// The transport settings these values describe.
    public func transport(tlsContext: TLSContext?) -> TransportConfiguration {
        var t = TransportConfiguration()
        t.host = host
        t.port = port
        t.tlsPort = tls.port > 0 ? tls.port : nil
        t.tls = tlsContext
        t.eventLoops = eventLoops > 0 ? eventLoops : System.coreCount
        t.spinMicros = spinMicros
        t.maxConnections = limits.maxConnections
        t.maxConnectionsPerIP = limits.maxConnectionsPerIp
        t.maxOutboundBytes = limits.maxOutboundBytes
        t.http = HTTPHeadParser.Limits(maxBytes: limits.maxRequestBytes, maxHeaders: limits.maxHeaders)
        t.handshakeTimeoutNanos = UInt64(timeouts.handshakeMs) * 1_000_000
        t.bodyIdleTimeoutNanos = UInt64(timeouts.bodyIdleMs) * 1_000_000
        t.tickIntervalMillis = timeouts.tickMs
        t.shutdownTimeoutNanos = UInt64(timeouts.shutdownMs) * 1_000_000
        t.webSocket = WebSocketStateMachine.Configuration(
            maxFrameSize: limits.maxFrameBytes, maxMessageSize: limits.maxMessageBytes,
            pingIntervalNanos: UInt64(timeouts.pingIntervalMs) * 1_000_000, pongTimeoutNanos: UInt64(timeouts.pongTimeoutMs) * 1_000_000,
            closeTimeoutNanos: UInt64(timeouts.closeMs) * 1_000_000, idleTimeoutNanos: UInt64(timeouts.idleMs) * 1_000_000)
        return t
    }

    /// permessage-deflate policy.
    public var deflatePolicy: PerMessageDeflate.Configuration {
        PerMessageDeflate.Configuration(enabled: deflate.enabled, serverNoContextTakeover: deflate.serverNoContextTakeover,
                                        clientNoContextTakeover: deflate.clientNoContextTakeover,
                                        serverMaxWindowBits: deflate.serverMaxWindowBits, memoryLevel: deflate.memoryLevel,
                                        compressionLevel: deflate.level, minimumSize: deflate.minimumSize)
    }
}

/// A setting that could not be used, named by its key.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public var key: String
    public var problem: String
    public var description: String { "configuration \(key): \(problem)" }
}

extension HubbubConfiguration {
    /// Reads settings from, in order of precedence: the command line (`--tls-port 8443`),
    /// `HUBBUB_*` environment variables (`HUBBUB_TLS_PORT`), the JSON file named by `--config`
    /// (or `HUBBUB_CONFIG`), then the defaults.
    public static func load(arguments: [String], environment: [String: String],
                            domains: [any Domain.Type] = HubbubServer.standardDomains) async throws -> HubbubConfiguration {
        let cli = CommandLineArgumentsProvider(arguments: arguments)
        let env = EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "hubbub")
        var providers: [any ConfigProvider] = [cli, env]
        let first = ConfigReader(providers: providers)
        let file = first.string(forKey: "config")
        if let file {
            do {
                providers.append(try await FileProvider<JSONSnapshot>(filePath: FilePath(file)))
            } catch {
                throw ConfigurationError(key: "config", problem: "cannot read \(file): \(error)")
            }
        }
        let log = KeyLog()
        let configuration = try HubbubConfiguration(reader: ConfigReader(providers: providers), log: log,
                                                    domainSettings: domains.flatMap { $0.settings })
        // A misspelt setting must not be ignored silently: an operator would believe a limit in force
        // that is not. Every --flag, HUBBUB_ variable and key of the file has to name a known setting.
        let keys = log.keys + ["config"]
        let flags = Set(keys.map(cliName)).union(["help"])
        for argument in arguments.dropFirst() where argument.hasPrefix("--") {
            let name = String(argument.dropFirst(2).split(separator: "=", maxSplits: 1).first ?? "")
            guard flags.contains(name) else {
                throw ConfigurationError(key: name, problem: "unknown option --\(name)\(Spelling.suggestion(for: "--" + name, among: flags.map { "--" + $0 })) (see --help and config/hubbub.json)")
            }
        }
        let variables = Set(keys.map(environmentName))
        for name in environment.keys.sorted() where name.hasPrefix("HUBBUB_") && !variables.contains(name) {
            throw ConfigurationError(key: name, problem: "unknown environment variable\(Spelling.suggestion(for: name, among: variables)) (every HUBBUB_ variable is a setting: see --help and config/hubbub.json)")
        }
        if let file { try checkFileKeys(file, known: Set(keys)) }
        return configuration
    }

    /// The environment variable of a key, as swift-configuration reads it: `limits.maxHeaders` → `HUBBUB_LIMITS_MAX_HEADERS`.
    static func environmentName(_ key: String) -> String {
        "HUBBUB_" + cliName(key).uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// Refuses a key of the JSON file that names no setting (objects are read as dotted paths:
    /// `{"limits": {"maxHeaders": 64}}` is `limits.maxHeaders`).
    private static func checkFileKeys(_ file: String, known: Set<String>) throws {
        let json: JSON
        do {
            json = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: file))), limits: .trusted)
        } catch {
            throw ConfigurationError(key: "config", problem: "cannot read \(file): \(error)")
        }
        func walk(_ value: JSON, _ path: String) throws {
            if case .object(let pairs) = value {
                for (key, child) in pairs { try walk(child, path.isEmpty ? key : path + "." + key) }
            } else if !known.contains(path) {
                throw ConfigurationError(key: path, problem: "unknown key in \(file)\(Spelling.suggestion(for: path, among: known)) (config/hubbub.json lists every key)")
            }
        }
        guard case .object = json else { throw ConfigurationError(key: "config", problem: "\(file) is not a JSON object") }
        try walk(json, "")
    }

    /// What the server runs with, for the start-up log: where it listens and keeps data, and every
    /// domain setting that differs from its default. Secrets (`api.key`, settings marked secret) say
    /// only whether they are set.
    public func summary(domains: [any Domain.Type] = HubbubServer.standardDomains) -> Logger.Metadata {
        var out: Logger.Metadata = [
            "host": "\(host)", "port": "\(port)", "tls.port": "\(tls.port)", "dataDir": "\(dataDir)", "database": "\(database.redacted)",
            "eventLoops": "\(eventLoops)", "api.key": .string(api.key.isEmpty ? "not set" : "set (redacted)"),
        ]
        for setting in domains.flatMap({ $0.settings }) {
            guard let value = domainSettings.values[setting.key] else { continue }
            out[setting.key] = .string(setting.isSecret ? "set (redacted)" : value.description)
        }
        return out
    }

    /// `hubbub --help`: how settings are given, then every key of the core and of each domain with
    /// its default and meaning, grouped by the key's first part. Prints no value but the defaults,
    /// and no secret's default either.
    public static func helpText(domains: [any Domain.Type] = HubbubServer.standardDomains) -> String {
        var text = """
            usage: hubbub [--port N] [--tls-port N --tls-cert PEM --tls-key PEM] [--data-dir DIR] [--config FILE]
                          [--database URL] [--any-setting VALUE ...]

            Every setting below is an option (limits.maxMessageBytes → --limits-max-message-bytes), an environment
            variable (HUBBUB_LIMITS_MAX_MESSAGE_BYTES) and a key of the JSON file named by --config or HUBBUB_CONFIG
            (config/hubbub.json lists every key with its default). Command line beats environment beats file; an
            unknown key stops the start. A flag's value may be left out for true (--bench) or given (--echo false);
            --no-echo is --echo false.
              --config FILE     JSON settings
              --database URL    the same as --database-url (prefer HUBBUB_DATABASE_URL: it keeps the password off
                                the command line)
              --allowed-origins browsers from other origins are refused with 403 (a list; default: any origin)

            """
        let all: [any AnySetting] = coreSettings.map(\.setting) + domains.flatMap { $0.settings }
        // Grouped by the key's first part, groups in the order they first appear.
        func group(_ s: any AnySetting) -> String { s.key.contains(".") ? String(s.key.prefix { $0 != "." }) : "server" }
        var groups: [String] = []
        for s in all where !groups.contains(group(s)) { groups.append(group(s)) }
        for name in groups {
            text += "\n\(name):\n"
            for setting in all where group(setting) == name {
                let shown = setting.isSecret ? "secret, never printed" : "default \(helpDefault(setting.defaultSetting))"
                text += "  --\(cliName(setting.key)) (\(shown))\n      \(setting.help)\n"
            }
        }
        return text
    }

    private static func helpDefault(_ value: SettingValueBox) -> String {
        if case .string(let s) = value { return s.isEmpty ? "empty" : s }
        return value.description
    }

    /// The command-line form of a key, as swift-configuration spells it: `limits.maxHeaders` → `limits-max-headers`.
    public static func cliName(_ key: String) -> String {
        key.split(separator: ".").map { part -> String in
            var out = ""
            var previous: Character?
            for c in part {
                if let p = previous, p.isLowercase, c.isUppercase { out.append("-") }
                out.append(c)
                previous = c
            }
            return out.lowercased()
        }.joined(separator: "-")
    }

    /// The keys a configuration read, so unknown options can be refused.
    final class KeyLog: @unchecked Sendable {
        var keys: [String] = []
    }

    init(reader r: ConfigReader, log: KeyLog = KeyLog(), domainSettings: [any AnySetting] = []) throws {
        self.init()
        let v = Values(reader: r, log: log)
        for core in Self.coreSettings {
            if let value = try v.setting(core.setting) { core.apply(&self, value) }
        }
        try v.string("database", &database.url) // --database <url>
        log.keys.append("allowedOrigins")
        if let origins = r.stringArray(forKey: "allowedOrigins") { allowedOrigins = origins }
        for setting in domainSettings {
            // Kept only when it differs from the default, so equal settings compare equal.
            if let value = try v.setting(setting), value != setting.defaultSetting { self.domainSettings.set(setting.key, value) }
        }
        guard Self.logLevels.contains(logLevel) else {
            throw ConfigurationError(key: "logLevel", problem: "unknown level \(logLevel)\(Spelling.suggestion(for: logLevel, among: Self.logLevels))")
        }
        if tls.port > 0 && (tls.cert.isEmpty || tls.key.isEmpty) {
            throw ConfigurationError(key: "tls.port", problem: "a TLS port needs tls.cert and tls.key (--tls-cert, --tls-key)")
        }
    }

    /// Typed reads that refuse a value of the wrong type instead of silently using the default.
    private struct Values {
        let reader: ConfigReader
        let log: KeyLog

        func string(_ key: String, _ target: inout String) throws {
            log.keys.append(key)
            if let s = reader.string(forKey: ConfigKey(key)) { target = s }
        }



        /// A domain's setting, read as its default's type and checked against its range.
        func setting(_ s: any AnySetting) throws -> SettingValueBox? {
            log.keys.append(s.key)
            let key = ConfigKey(s.key)
            let found: SettingValueBox?
            switch s.defaultSetting {
            case .int: found = reader.int(forKey: key).map { .int($0) }
            case .double: found = reader.double(forKey: key).map { .double($0) }
            case .bool: found = reader.bool(forKey: key).map { .bool($0) }
            case .string: found = reader.string(forKey: key).map { .string($0) }
            }
            guard let found else {
                if let text = reader.string(forKey: key) {
                    throw ConfigurationError(key: s.key, problem: "'\(text)' is not \(s.defaultSetting.kindDescription)")
                }
                return nil
            }
            if let problem = s.check(found) { throw ConfigurationError(key: s.key, problem: problem) }
            return found
        }

    }
}
