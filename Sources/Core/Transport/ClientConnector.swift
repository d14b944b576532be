import CLinux
import HubbubCrypto
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// Where and how a client connection goes.
public struct ClientOptions: Sendable {
    public var host: String
    public var port: Int
    public var path: String
    /// TLS context for wss:// (nil: plain ws://).
    public var tls: TLSContext?
    public var subprotocols: [String]
    public var headers: [(String, String)]
    public var offerDeflate: Bool
    /// Messages under this size go uncompressed.
    public var minimumCompressed: Int
    /// Local address to connect from (spreads many connections over 127.0.0.0/8 source addresses).
    public var sourceAddress: String?
    public var webSocket: WebSocketStateMachine.Configuration
    public var handshakeTimeoutNanos: UInt64

    public init(host: String, port: Int, path: String = "/", tls: TLSContext? = nil, subprotocols: [String] = [],
                headers: [(String, String)] = [], offerDeflate: Bool = false, minimumCompressed: Int = 256,
                sourceAddress: String? = nil,
                webSocket: WebSocketStateMachine.Configuration = .init(pingIntervalNanos: 0, idleTimeoutNanos: 0),
                handshakeTimeoutNanos: UInt64 = 10_000_000_000) {
        self.host = host
        self.port = port
        self.path = path
        self.tls = tls
        self.subprotocols = subprotocols
        self.headers = headers
        self.offerDeflate = offerDeflate
        self.minimumCompressed = minimumCompressed
        self.sourceAddress = sourceAddress
        self.webSocket = webSocket
        self.handshakeTimeoutNanos = handshakeTimeoutNanos
    }
}

extension EventLoop {
    /// Opens a client WebSocket on this loop. `completion` runs on the loop thread once the
    /// upgrade succeeded (the handler is then installed) or failed.
    public func connect(_ options: ClientOptions,
                        makeHandler: @escaping @Sendable (WebSocketConnection) -> any WebSocketHandler,
                        completion: @escaping @Sendable (Result<WebSocketConnection, TransportError>) -> Void) {
        execute { loop in
            let fd = clinux_connect(options.host, Int32(options.port), options.sourceAddress)
            guard fd >= 0 else {
                return completion(.failure(.connect("\(options.host):\(options.port): \(String(cString: strerror(-fd)))")))
            }
            let host = options.host.contains(":") ? "[\(options.host)]" : options.host // IPv6 literal
            let hostHeader = options.port == (options.tls == nil ? 80 : 443) ? host : "\(host):\(options.port)"
            let setup = ClientSetup(hostHeader: hostHeader, path: options.path, serverName: options.tls == nil ? nil : options.host,
                                    subprotocols: options.subprotocols, headers: options.headers, offerDeflate: options.offerDeflate,
                                    minimumCompressed: options.minimumCompressed, webSocket: options.webSocket,
                                    handshakeTimeoutNanos: options.handshakeTimeoutNanos,
                                    key: Digest.randomBytes(16), makeHandler: makeHandler, completion: completion)
            if !loop.adopt(fd: fd, ip: options.host, tls: options.tls, client: setup) {
                completion(.failure(.connect("cannot set up the connection")))
            }
        }
    }

    /// A loop of its own for clients (tests, the load generator): started on a new thread.
    public static func makeClientLoop(index: Int = 0, configuration: TransportConfiguration = .init()) throws -> EventLoop {
        let shared = SharedState(application: nil, tls: nil, limiter: ConnectionLimiter(maxTotal: .max, maxPerIP: .max),
                                 metrics: .discarding(), deflaters: DeflaterPool(), logger: .init(label: "hubbub.client"))
        let loop = try EventLoop(index: index, configuration: configuration, shared: shared)
        _ = startThread(name: "hubbub-client-\(index)") { loop.run() }
        return loop
    }

    /// Stops a client loop: its thread ends after the tasks already queued, closing what is open.
    public func shutdownClientLoop() { stop() }
}

extension EventLoop {
    /// Runs `body` with the connection if it is still open (loop thread only).
    public func withConnection(_ handle: ConnectionHandle, _ body: (WebSocketConnection) -> Void) {
        if let c = connection(for: handle) { body(c) }
    }
}
