import Cluster
import DomainSeam
import Foundation
import HubbubCrypto
import Logging
import Realtime
import RoomLog
import ServiceLifecycle
import Storage
import Synchronization
import Transport
import WebClient
import UnixSignals
import WebSocket

/// The Hubbub server: configuration in, listening sockets and endpoints out. Its parts run as
/// services of one `ServiceGroup`, started in this order and stopped in the reverse one: the
/// store, the room log's keeper (and with several nodes the event bus and the log follower), each
/// domain's background services, the transport (and with several nodes the cluster's service).
/// So a stop first drains the connections (1001 `restart`), then stops the domains' timers, then
/// commits and closes the store. docs/architecture.md, "Lifecycle", has the list.
public final class HubbubServer: Sendable {
    public let configuration: HubbubConfiguration
    let transport: Server
    private let logger: Logger
    private let group: ServiceGroup
    private let running = Mutex<Task<Void, Never>?>(nil)
    private let stopped = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - domains: the domains to run (tests add their own).
    ///   - tlsOnFreePort: serve TLS on a free port even though `tls.port` is 0 (tests).
    ///   - stopsOnSignals: SIGTERM and SIGINT start the graceful stop (the executable; not tests).
    ///   - clock: the domains' time (tests move a clock of their own).
    public init(configuration: HubbubConfiguration, logger: Logger, domains: [any Domain.Type] = HubbubServer.standardDomains,
                tlsOnFreePort: Bool = false, stopsOnSignals: Bool = false, clock: WallClock = .system) throws {
        self.configuration = configuration
        self.logger = logger
        logger.info("configuration", metadata: configuration.summary(domains: domains))
        if configuration.api.key.isEmpty {
            logger.warning("no api.key is configured: GET /metrics answers 401 and /api/... 404 (set --api-key or HUBBUB_API_KEY)")
        }
        var tlsContext: TLSContext?
        if configuration.tls.port > 0 || tlsOnFreePort {
            tlsContext = try TLSContext.server(certificatePath: configuration.tls.cert, privateKeyPath: configuration.tls.key)
        }
        var migrator = SQLMigrations()
        RoomLogSchema.migrations(&migrator)
        ClusterSchema.migrations(&migrator)
        for d in domains { d.migrations(&migrator) }
        var storage = Store.Configuration(directory: configuration.dataDir)
        storage.maxBatch = configuration.storage.maxBatch
        storage.maxPendingWrites = configuration.storage.maxPendingWrites
        storage.maxReaders = configuration.storage.maxReaders
        storage.cacheKiB = configuration.storage.cacheKiB
        storage.writerCacheKiB = configuration.storage.writerCacheKiB
        storage.busyTimeoutSeconds = Double(configuration.storage.busyTimeoutSeconds)
        storage.postgresURL = configuration.database.url
        // Metrics made before the registry is bootstrapped would go nowhere: the store makes its own.
        _ = MetricsExposition.shared
        let store = try Store(configuration: storage, migrations: migrator, logger: logger)

        let sink = LoopSink()
        let r = configuration.rooms
        let capabilities = Capabilities()
        // Several nodes (PostgreSQL): this node's id, and the bus domains tell the others through.
        let nodeID = "n" + Digest.randomToken(length: 10)
        let health = ClusterHealth(staleAfterSeconds: Double(configuration.cluster.leaseSeconds))
        let events = store.dialect == .postgres ? ClusterEventBus(nodeID: nodeID, store: store, health: health, logger: logger) : nil
        if let events { capabilities.provide(ClusterEvents.self, events) }
        let signedIn = SignedInSessions(capabilities: capabilities)
        capabilities.provide(SignedInConnections.self, signedIn)
        capabilities.provide(ReaderLanguages.self, signedIn)
        let erasure = DomainErasure()
        capabilities.provide(UserErasure.self, erasure)
        let roomHistory = Room.HistoryLimits(count: r.historySize, maxAgeSeconds: Double(r.historySeconds), maxBytes: r.historyBytes,
                                             budget: HistoryBudget(limitBytes: r.totalHistoryBytes))
        let feed = RoomFeed(sink: sink, source: StoreRoomLog(store: store),
                            configuration: .init(history: roomHistory, maxRecovered: r.historySize), logger: logger)
        feed.setReaderLanguage { [signedIn] in signedIn.language(of: $0) }
        let context = DomainContext(store: store, sink: sink, settings: configuration.domainSettings, roomHistory: roomHistory,
                                    capabilities: capabilities, logger: logger, dataDirectory: configuration.dataDir,
                                    clock: clock, feed: feed)
        let built = try domains.map { try $0.init(context: context) }
        erasure.attach(built)
        for d in built.flatMap(\.rooms) { if let source = d.source { feed.use(source, for: d.prefix) } }
        // Several nodes (PostgreSQL): leases on logged rooms, links to the other nodes.
        var cluster: (ownership: Ownership, links: PeerLinks, leases: RoomLeases)?
        if store.dialect == .postgres {
            let links = PeerLinks(timeoutSeconds: Double(configuration.cluster.forwardTimeoutSeconds), logger: logger)
            let logged = Dictionary(built.flatMap(\.rooms).map { ($0.prefix, $0) }, uniquingKeysWith: { a, _ in a })
            var ownershipConfiguration = Ownership.Configuration()
            ownershipConfiguration.leaseSeconds = Double(configuration.cluster.leaseSeconds)
            let ownership = Ownership(nodeID: nodeID, store: store, links: links, health: health,
                                      configuration: ownershipConfiguration, logger: logger) { lease in
                if let name = RoomName(lease) { logged[name.prefix]?.acquired(name.id) }
            }
            cluster = (ownership, links, RoomLeases(ownership: ownership, logged: logged))
        }
        let registry = try DomainRegistry(domains: built, feed: feed, owners: cluster?.leases)
        capabilities.provide(LoggedRooms.self, LoggedRoomJoin(logged: registry.rooms, feed: feed, owners: cluster?.leases))

        let rl = configuration.rateLimits
        let sessions = SessionContext(
            registry: registry, owners: cluster?.leases, signedIn: signedIn, sink: sink,
            limits: .init(rateBudgets: [.auth: .init(perSecond: rl.authPerSecond, burst: Double(rl.authBurst)),
                                        .read: .init(perSecond: rl.readPerSecond, burst: Double(rl.readBurst)),
                                        .write: .init(perSecond: rl.writePerSecond, burst: Double(rl.writeBurst))],
                          abuseThreshold: rl.abuseThreshold, maxPendingRequests: configuration.sessions.maxPendingRequests,
                          maxSubscriptions: configuration.sessions.maxSubscriptions,
                          maxMessageBytesBeforeLogin: configuration.limits.maxMessageBytesBeforeLogin,
                          json: JSONParser.Limits(maxDepth: configuration.limits.maxJsonDepth,
                                                  maxKeysPerObject: configuration.limits.maxJsonKeysPerObject,
                                                  maxValues: configuration.limits.maxJsonValues)),
            logger: logger)
        let web: WebResponder? = switch (configuration.web.enabled, configuration.web.root) {
        case (false, _): nil
        case (true, ""): WebResponder(.fixed(try WebAssets.builtIn()))
        case (true, let root): WebResponder(.directory(URL(fileURLWithPath: root)))
        }
        let app = HubbubApplication(configuration: configuration, metrics: MetricsExposition.shared, sessions: sessions,
                                     api: try DomainEndpoints(registry.endpoints, owners: cluster?.leases, logger: logger), web: web,
                                     storeFault: { store.fault },
                                     cluster: cluster.map { ($0.ownership, $0.links, health) })
        let d = configuration.deflate
        var transportConfiguration = configuration.transport(tlsContext: tlsContext)
        if tlsOnFreePort { transportConfiguration.tlsPort = 0 }
        transport = try Server(configuration: transportConfiguration, application: app, logger: logger,
                               deflaters: DeflaterPool(level: d.level, memoryLevel: d.memoryLevel))
        sink.attach(transport.eventLoops)
        if configuration.bench { app.attach(broadcast: BroadcastHub(loops: transport.eventLoops)) }

        let retention = Double(r.logRetentionSeconds)
        let logKeeper = Periodic(every: 60) { now in
            feed.trim(now: now)
            do {
                try await store.write { db in
                    try RoomLogSchema.ensurePartitions(around: now, ahead: 3600, db)
                    try RoomLogSchema.dropBefore(now - retention, db)
                }
            } catch {
                logger.warning("could not keep the room log", metadata: ["error": "\(error)"])
            }
        }
        var services: [any Service] = [StoreService(store: store), logKeeper]
        if let events { services.append(events) }
        if store.dialect == .postgres {
            // Other nodes may write the same rooms: hear their commits.
            services.append(RoomLogFollower(store: store, feed: feed, health: health, logger: logger))
        }
        services += registry.services
        let transport = self.transport
        services += [TransportService(transport: transport, logger: logger, ready: "hubbub ready: \(HubbubServer.urls(configuration, transport).joined(separator: " "))")]
        if let cluster {
            // After the transport: on a graceful stop it gives the leases back before the connections drain.
            let advertise = configuration.cluster.advertise, host = configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host
            services.append(ClusterService(ownership: cluster.ownership, links: cluster.links,
                                           address: { advertise.isEmpty ? "\(host):\(transport.port)" : advertise },
                                           leaseSeconds: Double(configuration.cluster.leaseSeconds), logger: logger))
        }
        var groupConfiguration = ServiceGroupConfiguration(services: services.map { .init(service: $0) }, logger: logger)
        if stopsOnSignals { groupConfiguration.gracefulShutdownSignals = [.sigterm, .sigint] }
        group = ServiceGroup(configuration: groupConfiguration)
    }

    /// The bound plain port (resolved when configured as 0).
    public var port: Int { transport.port }
    /// The bound TLS port, if TLS is on.
    public var tlsPort: Int? { transport.tlsPort }

    /// The URLs served, for the ready line.
    public var urls: [String] { HubbubServer.urls(configuration, transport) }

    static func urls(_ configuration: HubbubConfiguration, _ transport: Server) -> [String] {
        let host = configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host
        let port = transport.port
        var out = ["ws://\(host):\(port)/ws", "http://\(host):\(port)/healthz", "http://\(host):\(port)/metrics"]
        if configuration.web.enabled { out.insert("http://\(host):\(port)/", at: 0) }
        if configuration.echo { out.append("ws://\(host):\(port)/echo") }
        if configuration.bench { out.append("ws://\(host):\(port)/broadcast") }
        if let t = transport.tlsPort {
            out.append("wss://\(host):\(t)/ws")
            if configuration.echo { out.append("wss://\(host):\(t)/echo") }
            if configuration.bench { out.append("wss://\(host):\(t)/broadcast") }
        }
        return out
    }

    /// Runs every service until a graceful shutdown (SIGTERM or SIGINT when `signals` is set, or
    /// `shutdown()`), then stops them in reverse order and returns.
    public func run() async throws {
        try await group.run()
    }

    /// Starts serving in the background and returns (the ports are bound already: connections
    /// wait in the backlog until the loops run).
    public func start() {
        let group = self.group
        let stopped = self.stopped
        let logger = self.logger
        running.withLock { $0 = Task.detached {
            do { try await group.run() } catch { logger.error("a service failed", metadata: ["error": "\(error)"]) }
            stopped.signal()
        } }
    }

    /// Open WebSocket connections.
    public var openConnections: Int { transport.openWebSockets }

    /// Graceful stop of a server begun with `start()`: no new connections, 1001 `restart` to
    /// everyone, drain, stop the domains' services, close the store; returns when all is done.
    public func shutdown() {
        guard running.withLock({ $0 }) != nil else { return }
        Task.detached { [group] in await group.triggerGracefulShutdown() }
        stopped.wait()
        running.withLock { $0 = nil }
    }
}

/// The store as a service: open from the start; on shutdown (after the transport and the
/// domains), commits what is queued and closes.
struct StoreService: Service {
    let store: Store

    func run() async throws {
        try? await gracefulShutdown()
        store.close()
    }
}

/// The transport as a service: accepts until shutdown, then drains (1001 `restart` to every
/// WebSocket, at most `timeouts.shutdownMs`) before the services started before it stop.
struct TransportService: Service {
    let transport: Server
    let logger: Logger
    let ready: String

    func run() async throws {
        transport.start()
        logger.info("\(ready)", metadata: ["loops": "\(transport.eventLoops.count)"])
        try? await gracefulShutdown()
        logger.info("shutting down", metadata: ["open": "\(transport.openWebSockets)"])
        // The drain blocks while the loops finish: on a thread of its own, not the cooperative pool.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let transport = self.transport
            Thread.detachNewThread {
                transport.shutdown()
                done.resume()
            }
        }
        logger.info("stopped")
    }
}
