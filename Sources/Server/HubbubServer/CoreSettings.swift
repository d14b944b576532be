import DomainSeam

/// One setting of the core: a `Setting` like a domain's (key, default, range, one line of help)
/// and where its value lives in `HubbubConfiguration`. The default is the field's initial value in
/// `HubbubConfiguration`, so adding a key is two edits: the field and its line in `core` below
/// (and `config/hubbub.json`, which a test keeps equal to the defaults).
public struct CoreSetting: Sendable {
    /// Key, default, range and help, read and checked like any domain setting.
    public let setting: any AnySetting
    /// Stores a value that `setting.check` accepted.
    let apply: @Sendable (inout HubbubConfiguration, SettingValueBox) -> Void

    static func int(_ key: String, _ path: WritableKeyPath<HubbubConfiguration, Int> & Sendable,
                    _ range: ClosedRange<Int>, _ help: String) -> CoreSetting {
        CoreSetting(setting: Setting(key, default: HubbubConfiguration()[keyPath: path], range: range, help: help)) { c, v in
            if let v = Int(v) { c[keyPath: path] = v }
        }
    }

    static func double(_ key: String, _ path: WritableKeyPath<HubbubConfiguration, Double> & Sendable,
                       _ range: ClosedRange<Double>, _ help: String) -> CoreSetting {
        CoreSetting(setting: Setting(key, default: HubbubConfiguration()[keyPath: path], range: range, help: help)) { c, v in
            if let v = Double(v) { c[keyPath: path] = v }
        }
    }

    static func bool(_ key: String, _ path: WritableKeyPath<HubbubConfiguration, Bool> & Sendable, _ help: String) -> CoreSetting {
        CoreSetting(setting: Setting(key, default: HubbubConfiguration()[keyPath: path], help: help)) { c, v in
            if let v = Bool(v) { c[keyPath: path] = v }
        }
    }

    static func string(_ key: String, _ path: WritableKeyPath<HubbubConfiguration, String> & Sendable, _ help: String,
                       secret: Bool = false) -> CoreSetting {
        CoreSetting(setting: Setting(key, default: HubbubConfiguration()[keyPath: path], help: help, secret: secret)) { c, v in
            if let v = String(v) { c[keyPath: path] = v }
        }
    }
}

extension HubbubConfiguration {
    /// Every setting of the core, in the order `--help` lists them (grouped by the key's first part).
    /// `allowedOrigins` (a list) and `database` (`--database URL`, the same as `database.url`) are
    /// read beside these.
    public static let coreSettings: [CoreSetting] = [
        .string("host", \.host, "listen address"),
        .int("port", \.port, 0...65535, "ws:// and http:// port (0: a free one)"),
        .int("tls.port", \.tls.port, 0...65535, "wss:// port (0: no TLS); needs tls.cert and tls.key"),
        .string("tls.cert", \.tls.cert, "the certificate chain, a PEM file"),
        .string("tls.key", \.tls.key, "the private key, a PEM file"),
        .string("dataDir", \.dataDir, "where durable data lives (SQLite files)"),
        .string("database.url", \.database.url,
                "postgres://user:password@host:port/database: PostgreSQL, which several nodes may share (empty: SQLite in dataDir)",
                secret: true),
        .string("cluster.advertise", \.cluster.advertise,
                "host:port other nodes reach this node's plain port at (empty: the host and the bound port)"),
        .int("cluster.leaseSeconds", \.cluster.leaseSeconds, 2...300,
             "how long a node holds a room without renewing: a dead node's rooms move after at most this"),
        .int("cluster.forwardTimeoutSeconds", \.cluster.forwardTimeoutSeconds, 1...300,
             "how long an op forwarded to a room's owner waits for its reply"),
        .int("eventLoops", \.eventLoops, 0...256, "epoll threads (0: one per core)"),
        .int("spinMicros", \.spinMicros, 0...1_000_000, "microseconds a loop polls after its last event before it sleeps (0: never polls)"),
        .bool("bench", \.bench, "serve /broadcast for benchmarks"),
        .bool("echo", \.echo, "serve /echo for conformance runs and benchmarks"),
        .string("logLevel", \.logLevel, "trace, debug, info, notice, warning, error or critical"),

        .int("limits.maxConnections", \.limits.maxConnections, 1...10_000_000, "connections at once; more get 503 and are closed"),
        .int("limits.maxConnectionsPerIp", \.limits.maxConnectionsPerIp, 1...10_000_000, "connections from one address; more get 503"),
        .int("limits.maxFrameBytes", \.limits.maxFrameBytes, 125...(1 << 30), "one frame's payload (1009 beyond)"),
        .int("limits.maxMessageBytes", \.limits.maxMessageBytes, 125...(1 << 30),
             "one message after reassembly and inflation (1009 beyond)"),
        .int("limits.echoMaxMessageBytes", \.limits.echoMaxMessageBytes, 125...(1 << 30),
             "frame and message limit on /echo (conformance suites send 16 MiB)"),
        .int("limits.maxOutboundBytes", \.limits.maxOutboundBytes, 1024...(1 << 30),
             "backlog queued to one client; beyond it the client is closed with 4001"),
        .int("limits.maxRequestBytes", \.limits.maxRequestBytes, 256...(1 << 20), "an HTTP request head (431 beyond)"),
        .int("limits.maxHeaders", \.limits.maxHeaders, 4...1000, "HTTP header fields (431 beyond)"),
        .int("limits.maxMessageBytesBeforeLogin", \.limits.maxMessageBytesBeforeLogin, 125...(1 << 30),
             "one message on /ws before the connection logs in (1009 beyond, on the frame's header)"),
        .int("limits.maxJsonDepth", \.limits.maxJsonDepth, 1...1000, "containers nested in one request (too_large beyond)"),
        .int("limits.maxJsonKeysPerObject", \.limits.maxJsonKeysPerObject, 1...10_000_000,
             "keys in one object of a request (too_large beyond)"),
        .int("limits.maxJsonValues", \.limits.maxJsonValues, 1...100_000_000,
             "values in one request, containers included (too_large beyond; a 5,000-track playlist is about 30,000)"),

        .int("timeouts.handshakeMs", \.timeouts.handshakeMs, 100...600_000,
             "TLS and the HTTP upgrade must finish within this; also the idle time between kept-alive requests"),
        .int("timeouts.bodyIdleMs", \.timeouts.bodyIdleMs, 100...600_000, "a request body may go this long without a byte (408 after)"),
        .int("timeouts.pingIntervalMs", \.timeouts.pingIntervalMs, 0...3_600_000, "a ping after this long without inbound data (0: never)"),
        .int("timeouts.pongTimeoutMs", \.timeouts.pongTimeoutMs, 100...3_600_000, "no pong by then: the connection is dropped"),
        .int("timeouts.idleMs", \.timeouts.idleMs, 0...86_400_000, "no inbound data at all by then: close 1001 (0: never)"),
        .int("timeouts.closeMs", \.timeouts.closeMs, 100...600_000, "how long to wait for the peer's close frame"),
        .int("timeouts.shutdownMs", \.timeouts.shutdownMs, 0...600_000, "graceful shutdown limit"),
        .int("timeouts.tickMs", \.timeouts.tickMs, 10...10_000, "timer resolution"),

        .bool("deflate.enabled", \.deflate.enabled, "accept permessage-deflate"),
        .bool("deflate.serverNoContextTakeover", \.deflate.serverNoContextTakeover,
              "compress each message alone: one compressed frame serves every receiver"),
        .bool("deflate.clientNoContextTakeover", \.deflate.clientNoContextTakeover,
              "ask clients to do the same: no connection keeps an inflater"),
        .int("deflate.serverMaxWindowBits", \.deflate.serverMaxWindowBits, 9...15, "compression window"),
        .int("deflate.memoryLevel", \.deflate.memoryLevel, 1...9, "zlib memLevel"),
        .int("deflate.level", \.deflate.level, 1...9, "zlib compression level"),
        .int("deflate.minimumSize", \.deflate.minimumSize, 0...(1 << 30), "smaller messages go uncompressed"),

        .double("rateLimits.authPerSecond", \.rateLimits.authPerSecond, 0.001...1_000_000,
                "sign-up, log-in and auth per session per second (rate_limited beyond)"),
        .int("rateLimits.authBurst", \.rateLimits.authBurst, 1...1_000_000, "auth ops a session may send at once"),
        .double("rateLimits.readPerSecond", \.rateLimits.readPerSecond, 0.001...1_000_000, "read ops per session per second"),
        .int("rateLimits.readBurst", \.rateLimits.readBurst, 1...1_000_000, "read ops a session may send at once"),
        .double("rateLimits.writePerSecond", \.rateLimits.writePerSecond, 0.001...1_000_000, "write ops per session per second"),
        .int("rateLimits.writeBurst", \.rateLimits.writeBurst, 1...1_000_000, "write ops a session may send at once"),
        .int("rateLimits.abuseThreshold", \.rateLimits.abuseThreshold, 1...1_000_000,
             "requests refused in a row before the connection is closed with 4003"),

        .int("sessions.maxPendingRequests", \.sessions.maxPendingRequests, 1...1_000_000,
             "requests queued and not yet handled; beyond it the connection is closed with 4003"),
        .int("sessions.maxSubscriptions", \.sessions.maxSubscriptions, 1...100_000, "rooms per connection"),

        .int("rooms.historySize", \.rooms.historySize, 0...1_000_000, "pushes each room keeps in memory for recovery"),
        .int("rooms.historySeconds", \.rooms.historySeconds, 0...86_400, "oldest push a room keeps in memory, in seconds"),
        .int("rooms.historyBytes", \.rooms.historyBytes, 0...(1 << 30), "most bytes of pushes each room keeps in memory"),
        .int("rooms.totalHistoryBytes", \.rooms.totalHistoryBytes, 0...(1 << 40),
             "most bytes all rooms' histories hold together (each room an equal share, at least 4 KiB)"),
        .int("rooms.logRetentionSeconds", \.rooms.logRetentionSeconds, 60...604_800,
             "how long the room log in the store keeps pushes, for recovery beyond memory and on another node"),

        .string("api.key", \.api.key, "operator key for GET /metrics and POST /api/... (empty: /metrics 401, /api 404)", secret: true),
        .bool("web.enabled", \.web.enabled, "serve the web client at /"),
        .string("web.root", \.web.root, "serve the web client from this directory, read at each request (empty: the built-in files)"),

        .int("storage.maxBatch", \.storage.maxBatch, 1...100_000, "most changes in one group commit"),
        .int("storage.maxPendingWrites", \.storage.maxPendingWrites, 1...10_000_000,
             "most changes waiting for the disk; beyond it a write is answered unavailable at once"),
        .int("storage.maxReaders", \.storage.maxReaders, 1...64, "read queries at once"),
        .int("storage.cacheKiB", \.storage.cacheKiB, 64...(1 << 20), "SQLite page cache per connection, in KiB"),
        .int("storage.writerCacheKiB", \.storage.writerCacheKiB, 64...(1 << 22), "the writer's own SQLite page cache, in KiB"),
        .int("storage.busyTimeoutSeconds", \.storage.busyTimeoutSeconds, 0...600,
             "how long SQLite waits for a lock another process holds before answering an error"),
    ]

    /// The log levels `logLevel` takes.
    static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
}
