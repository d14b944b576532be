import CLinux
import Logging
import Synchronization
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// The listening server: one event loop per configured thread, each with its own listening
/// sockets (SO_REUSEPORT lets the kernel spread new connections across loops).
public final class Server: Sendable {
    public let configuration: TransportConfiguration
    public let metrics: TransportMetrics
    let loops: [EventLoop]
    private let threads: Mutex<[pthread_t]> = Mutex([])
    /// The ports actually bound (useful when configured as 0).
    public let port: Int
    public let tlsPort: Int?
    private let logger: Logger

    public init(configuration: TransportConfiguration, application: any ServerApplication, logger: Logger,
                metrics: TransportMetrics = TransportMetrics(), deflaters: DeflaterPool = DeflaterPool()) throws {
        if configuration.tlsPort != nil && configuration.tls == nil {
            throw TransportError.connect("a TLS port needs a certificate and key")
        }
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        // Every connection is a descriptor: ask for room for the configured maximum (plus the
        // store, listeners and loops); root may raise the hard limit, others get what they have.
        let wanted = configuration.maxConnections + 1024
        let limit = clinux_raise_nofile_to(wanted)
        if limit < wanted {
            logger.warning("file descriptor limit is below limits.maxConnections", metadata: [
                "limit": "\(limit)", "maxConnections": "\(configuration.maxConnections)"])
        }
        let shared = EventLoop.SharedState(application: application, tls: configuration.tls,
                                           limiter: ConnectionLimiter(maxTotal: configuration.maxConnections,
                                                                      maxPerIP: configuration.maxConnectionsPerIP),
                                           metrics: metrics, deflaters: deflaters, logger: logger)
        var loops: [EventLoop] = []
        for i in 0..<max(1, configuration.eventLoops) {
            loops.append(try EventLoop(index: i, configuration: configuration, shared: shared))
        }
        self.loops = loops
        // Bind every loop's socket to the same port; with port 0 the first bind picks it.
        var plainPort = configuration.port
        var securePort = configuration.tlsPort
        for loop in loops {
            let fd = try Server.listen(configuration.host, plainPort, configuration.listenBacklog)
            if plainPort == 0 { plainPort = Int(clinux_local_port(fd)) }
            loop.addListener(fd: fd, tls: false)
            if let p = securePort {
                let tfd = try Server.listen(configuration.host, p, configuration.listenBacklog)
                if p == 0 { securePort = Int(clinux_local_port(tfd)) }
                loop.addListener(fd: tfd, tls: true)
            }
        }
        port = plainPort
        tlsPort = securePort
    }

    private static func listen(_ host: String, _ port: Int, _ backlog: Int) throws -> Int32 {
        let fd = clinux_listen(host, Int32(port), Int32(backlog))
        guard fd >= 0 else { throw TransportError.listen(host, port, -fd) }
        return fd
    }

    /// Starts the loop threads; returns at once.
    public func start() {
        let started = loops.map { loop in startThread(name: "hubbub-loop-\(loop.index)") { loop.run() } }
        threads.withLock { $0 = started }
    }

    /// Open WebSocket connections right now.
    public var openWebSockets: Int { metrics.openWebSockets }

    /// The event loops (for placing client connections or per-loop work).
    public var eventLoops: [EventLoop] { loops }

    /// Graceful shutdown: stop accepting, close every WebSocket with 1001 `restart`, wait for
    /// them to go (at most the configured timeout), and join the loop threads.
    public func shutdown() {
        for loop in loops { loop.beginShutdown(timeoutNanos: configuration.shutdownTimeoutNanos) }
        let ts = threads.withLock { t -> [pthread_t] in let c = t; t = []; return c }
        for t in ts { pthread_join(t, nil) }
    }
}
