import Accounts
import Foundation
import GRDB
import HubbubCrypto
import Logging
import Storage
import Synchronization
import VenueService
import Transport
import WebSocket

/// The Hubbub server: configuration in, listening sockets and endpoints out.
public final class HubbubServer: Sendable {
    public let configuration: HubbubConfiguration
    let transport: Server
    let store: Store
    let venues: VenueDirectory<LoopSink>
    private let logger: Logger
    private let retirer = Mutex<Task<Void, Never>?>(nil)

    /// - Parameter tlsOnFreePort: serve TLS on a free port even though `tls.port` is 0 (tests).
    public init(configuration: HubbubConfiguration, logger: Logger, tlsOnFreePort: Bool = false) throws {
        self.configuration = configuration
        self.logger = logger
        var tlsContext: TLSContext?
        if configuration.tls.port > 0 || tlsOnFreePort {
            tlsContext = try TLSContext.server(certificatePath: configuration.tls.cert, privateKeyPath: configuration.tls.key)
        }
        let exposition = MetricsExposition.shared
        store = try Store(configuration: .init(directory: configuration.dataDir), migrations: HubbubServer.migrations(),
                          logger: logger)
        var accountConfig = AccountService.Configuration()
        accountConfig.pbkdf2Iterations = configuration.auth.kdfIterations
        accountConfig.passwordMinLength = configuration.auth.passwordMinLength
        accountConfig.tokenLifetimeSeconds = Double(configuration.auth.tokenLifetimeHours) * 3600
        let accounts = try AccountService(store: store, secret: try HubbubServer.tokenSecret(configuration), configuration: accountConfig)
        var venueConfig = VenueDirectory<LoopSink>.Configuration()
        venueConfig.history = .init(count: configuration.rooms.historySize, maxAgeSeconds: Double(configuration.rooms.historySeconds))
        let venues = VenueDirectory(store: store, sink: LoopSink(), configuration: venueConfig)
        self.venues = venues
        let r = configuration.rateLimits
        let services = Services(
            configuration: .init(rateBudgets: [.auth: .init(perSecond: r.authPerSecond, burst: Double(r.authBurst)),
                                               .read: .init(perSecond: r.readPerSecond, burst: Double(r.readBurst)),
                                               .write: .init(perSecond: r.writePerSecond, burst: Double(r.writeBurst))],
                                 abuseThreshold: r.abuseThreshold, maxPendingRequests: configuration.sessions.maxPendingRequests,
                                 maxSubscriptions: configuration.sessions.maxSubscriptions),
            accounts: accounts, venues: venues, logger: logger)
        let app = HubbubApplication(configuration: configuration, metrics: exposition, services: services)
        let d = configuration.deflate
        var transportConfiguration = configuration.transport(tlsContext: tlsContext)
        if tlsOnFreePort { transportConfiguration.tlsPort = 0 }
        transport = try Server(configuration: transportConfiguration, application: app, logger: logger,
                               deflaters: DeflaterPool(level: d.level, memoryLevel: d.memoryLevel))
        if configuration.bench { app.attach(broadcast: BroadcastHub(loops: transport.eventLoops)) }
    }

    /// The bound plain port (resolved when configured as 0).
    public var port: Int { transport.port }
    /// The bound TLS port, if TLS is on.
    public var tlsPort: Int? { transport.tlsPort }

    /// The URLs served, for the ready line.
    public var urls: [String] {
        let host = configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host
        var out = ["ws://\(host):\(port)/ws", "http://\(host):\(port)/healthz", "http://\(host):\(port)/metrics"]
        if configuration.echo { out.append("ws://\(host):\(port)/echo") }
        if configuration.bench { out.append("ws://\(host):\(port)/broadcast") }
        if let t = tlsPort {
            out.append("wss://\(host):\(t)/ws")
            if configuration.echo { out.append("wss://\(host):\(t)/echo") }
            if configuration.bench { out.append("wss://\(host):\(t)/broadcast") }
        }
        return out
    }

    /// Starts serving; returns at once.
    public func start() {
        transport.start()
        // Venue actors nobody watches are retired after a while; their state is on disk.
        let venues = self.venues
        retirer.withLock { $0 = Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: 60_000_000_000)
                await venues.retireIdle(now: Date().timeIntervalSince1970)
            }
        } }
        logger.info("hubbub ready: \(urls.joined(separator: " "))",
                    metadata: ["loops": "\(transport.eventLoops.count)", "dataDir": "\(configuration.dataDir)"])
    }

    /// Open WebSocket connections.
    public var openConnections: Int { transport.openWebSockets }

    /// Graceful stop: no new connections, 1001 `restart` to everyone, drain, then return.
    public func shutdown() {
        logger.info("shutting down", metadata: ["open": "\(transport.openWebSockets)"])
        transport.shutdown()
        retirer.withLock { $0?.cancel() }
        store.close()
        logger.info("stopped")
    }
}

extension HubbubServer {
    /// Every domain's tables, in order.
    static func migrations() -> DatabaseMigrator {
        var m = DatabaseMigrator()
        AccountSchema.register(&m)
        VenueSchema.register(&m)
        return m
    }

    /// The token key: from configuration, else a random one kept (0600) in the data directory so
    /// tokens survive restarts.
    static func tokenSecret(_ configuration: HubbubConfiguration) throws -> [UInt8] {
        if !configuration.auth.tokenSecret.isEmpty { return Array(configuration.auth.tokenSecret.utf8) }
        let path = (configuration.dataDir as NSString).appendingPathComponent("token-secret")
        if let text = try? String(contentsOfFile: path, encoding: .utf8), let bytes = Base64.decode(text.trimmingCharacters(in: .whitespacesAndNewlines)),
           bytes.count >= 32 {
            return bytes
        }
        let secret = Digest.randomBytes(32)
        FileManager.default.createFile(atPath: path, contents: Data(Base64.encode(secret).utf8), attributes: [.posixPermissions: 0o600])
        return secret
    }
}
