import WebSocket

/// Everything the transport needs to know; every limit has a documented default.
public struct TransportConfiguration: Sendable {
    /// Address to listen on.
    public var host: String = "0.0.0.0"
    /// Plain (ws://, http://) port; 0 picks a free port.
    public var port: Int = 8080
    /// TLS (wss://, https://) port; nil for none.
    public var tlsPort: Int? = nil
    /// The server certificate and key, required when `tlsPort` is set.
    public var tls: TLSContext? = nil
    /// Event loops (threads with their own epoll); default: one per core.
    public var eventLoops: Int = max(1, System.coreCount)
    /// Most connections at once, all kinds; more are accepted and closed at once.
    public var maxConnections: Int = 200_000
    /// Most connections from one IP address.
    public var maxConnectionsPerIP: Int = 10_000
    /// Time for a client to finish the TLS and HTTP handshakes (slowloris defence).
    public var handshakeTimeoutNanos: UInt64 = 10_000_000_000
    /// How often timers (handshake, ping, pong, idle, close) are checked.
    public var tickIntervalMillis: Int = 250
    /// Most bytes queued to one connection; past it the client is closed with 4001.
    public var maxOutboundBytes: Int = 1 << 20
    /// Limits on the HTTP request head.
    public var http: HTTPHeadParser.Limits = .init()
    /// Longest a request body may go without a byte arriving (408 after it): slow senders cannot
    /// hold a connection by trickling.
    public var bodyIdleTimeoutNanos: UInt64 = 10_000_000_000
    /// Frame and message limits, keepalive and close timers.
    public var webSocket: WebSocketStateMachine.Configuration = .init()
    /// Time to let clients go after SIGTERM before the process exits anyway.
    public var shutdownTimeoutNanos: UInt64 = 10_000_000_000
    /// Microseconds a loop keeps polling after its last event before it sleeps in epoll_wait
    /// (0: sleep at once). Trades idle CPU for latency where waking a CPU is slow.
    public var spinMicros: Int = 0
    /// listen(2) backlog.
    public var listenBacklog: Int = 4096

    public init() {}
}

/// Facts about the machine.
public enum System {
    /// Online CPU cores.
    public static var coreCount: Int {
        let n = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        return n > 0 ? n : 1
    }
}

#if canImport(Glibc)
import Glibc
#endif
