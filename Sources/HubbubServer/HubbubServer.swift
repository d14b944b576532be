import Logging
import Transport
import WebSocket

/// The Hubbub server: configuration in, listening sockets and endpoints out.
public final class HubbubServer: Sendable {
    public let configuration: HubbubConfiguration
    let transport: Server
    private let logger: Logger

    /// - Parameter tlsOnFreePort: serve TLS on a free port even though `tls.port` is 0 (tests).
    public init(configuration: HubbubConfiguration, logger: Logger, tlsOnFreePort: Bool = false) throws {
        self.configuration = configuration
        self.logger = logger
        var tlsContext: TLSContext?
        if configuration.tls.port > 0 || tlsOnFreePort {
            tlsContext = try TLSContext.server(certificatePath: configuration.tls.cert, privateKeyPath: configuration.tls.key)
        }
        let exposition = MetricsExposition.shared
        let app = HubbubApplication(configuration: configuration, metrics: exposition)
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
        var out = ["http://\(host):\(port)/healthz", "http://\(host):\(port)/metrics"]
        if configuration.echo { out.append("ws://\(host):\(port)/echo") }
        if configuration.bench { out.append("ws://\(host):\(port)/broadcast") }
        if let t = tlsPort {
            if configuration.echo { out.append("wss://\(host):\(t)/echo") }
            if configuration.bench { out.append("wss://\(host):\(t)/broadcast") }
        }
        return out
    }

    /// Starts serving; returns at once.
    public func start() {
        transport.start()
        logger.info("hubbub ready: \(urls.joined(separator: " "))",
                    metadata: ["loops": "\(transport.eventLoops.count)", "dataDir": "\(configuration.dataDir)"])
    }

    /// Open WebSocket connections.
    public var openConnections: Int { transport.openWebSockets }

    /// Graceful stop: no new connections, 1001 `restart` to everyone, drain, then return.
    public func shutdown() {
        logger.info("shutting down", metadata: ["open": "\(transport.openWebSockets)"])
        transport.shutdown()
        logger.info("stopped")
    }
}
