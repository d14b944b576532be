import Synchronization
import Transport
import WebSocket

/// A WebSocket client for tests, tools and the load generator: ws:// and wss://, masking,
/// permessage-deflate, on Hubbub's own event loops.
///
/// ```swift
/// let ws = try await WebSocketClient.connect(to: "ws://127.0.0.1:8080/echo", compression: true)
/// ws.send(text: "hello")
/// let reply = try await ws.receive()
/// ```
public final class WebSocketClient: Sendable {
    /// Something that happened on the connection, in order.
    public enum Event: Sendable, Equatable {
        case message(Message)
        case closed(CloseCode, String)
    }

    /// Options for connecting.
    public struct Options: Sendable {
        /// Offer permessage-deflate.
        public var compression = false
        /// Verify the server's certificate against this CA file (nil: accept any certificate — tests only).
        public var caFile: String?
        public var subprotocols: [String] = []
        public var headers: [(String, String)] = []
        /// Local address to connect from.
        public var sourceAddress: String?
        public var maxMessageSize = 64 << 20
        public var handshakeTimeoutMillis = 10_000
        public init() {}
    }

    public let handle: ConnectionHandle
    /// The subprotocol and compression the server agreed to.
    public let subprotocol: String?
    public let compression: PerMessageDeflate.Parameters?
    private let events: IteratorBox
    private let closedWith = Mutex<(CloseCode, String)?>(nil)

    private init(handle: ConnectionHandle, subprotocol: String?, compression: PerMessageDeflate.Parameters?, events: AsyncStream<Event>) {
        self.handle = handle
        self.subprotocol = subprotocol
        self.compression = compression
        self.events = IteratorBox(events.makeAsyncIterator())
    }

    /// Connects to a `ws://` or `wss://` URL and completes the upgrade.
    public static func connect(to url: String, options: Options = Options(), loop: EventLoop? = nil) async throws -> WebSocketClient {
        let target = try ClientURL(url)
        var tls: TLSContext?
        if target.secure { tls = try TLSContext.client(verify: options.caFile != nil, caFile: options.caFile) }
        var ws = WebSocketStateMachine.Configuration(pingIntervalNanos: 0, idleTimeoutNanos: 0)
        ws.maxMessageSize = options.maxMessageSize
        ws.maxFrameSize = options.maxMessageSize
        let clientOptions = ClientOptions(host: target.host, port: target.port, path: target.path, tls: tls,
                                          subprotocols: options.subprotocols, headers: options.headers,
                                          offerDeflate: options.compression, sourceAddress: options.sourceAddress, webSocket: ws,
                                          handshakeTimeoutNanos: UInt64(options.handshakeTimeoutMillis) * 1_000_000)
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        let eventLoop = try loop ?? ClientLoops.shared.next()
        let connection: WebSocketClient = try await withCheckedThrowingContinuation { done in
            eventLoop.connect(clientOptions, makeHandler: { _ in StreamHandler(continuation) }) { result in
                switch result {
                case .success(let c):
                    done.resume(returning: WebSocketClient(handle: c.handle, subprotocol: c.subprotocol, compression: c.compression,
                                                           events: stream))
                case .failure(let e):
                    continuation.finish()
                    done.resume(throwing: e)
                }
            }
        }
        return connection
    }

    /// Queues a message (returns at once; order is kept).
    public func send(_ message: Message) {
        handle.loop.execute { [handle] loop in loop.withConnection(handle) { $0.send(message) } }
    }

    public func send(text: String) { send(.text(text)) }
    public func send(binary: [UInt8]) { send(.binary(binary)) }

    /// Sends raw bytes as they are, bypassing framing (for tests of how servers treat bad input).
    public func sendRaw(_ bytes: [UInt8]) {
        handle.loop.execute { [handle] loop in loop.withConnection(handle) { $0.writeRaw(bytes) } }
    }

    /// The next event: a message, or the close (after which it returns nil). One reader at a time.
    public func nextEvent() async -> Event? {
        let event = await events.next()
        if case .closed(let code, let reason)? = event { closedWith.withLock { $0 = (code, reason) } }
        return event
    }

    /// The next message; throws `ClientError.closed` when the connection closed instead.
    public func receive() async throws -> Message {
        switch await nextEvent() {
        case .message(let m)?: return m
        case .closed(let code, let reason)?: throw ClientError.closed(code, reason)
        case nil:
            let c = closedWith.withLock { $0 }
            throw ClientError.closed(c?.0 ?? .abnormal, c?.1 ?? "")
        }
    }

    /// Waits for the close and returns its code and reason (skipping any messages before it).
    public func waitForClose() async -> (CloseCode, String) {
        while let e = await nextEvent() {
            if case .closed(let code, let reason) = e { return (code, reason) }
        }
        return closedWith.withLock { $0 } ?? (.abnormal, "")
    }

    /// Starts the close handshake.
    public func close(code: CloseCode = .normal, reason: String = "") {
        handle.close(code: code, reason: reason)
    }
}

/// The single reader's position in the event stream (one consumer task at a time).
final class IteratorBox: @unchecked Sendable {
    private var iterator: AsyncStream<WebSocketClient.Event>.Iterator
    init(_ it: AsyncStream<WebSocketClient.Event>.Iterator) { iterator = it }
    func next() async -> WebSocketClient.Event? { await iterator.next() }
}

/// Errors from the client.
public enum ClientError: Error, Equatable, CustomStringConvertible {
    case badURL(String)
    case closed(CloseCode, String)

    public var description: String {
        switch self {
        case .badURL(let u): return "not a ws:// or wss:// URL: \(u)"
        case .closed(let code, let reason): return "connection closed (\(code.rawValue) \(reason))"
        }
    }
}

/// Feeds a connection's events into an AsyncStream (runs on the loop thread).
final class StreamHandler: WebSocketHandler {
    let continuation: AsyncStream<WebSocketClient.Event>.Continuation
    init(_ c: AsyncStream<WebSocketClient.Event>.Continuation) { continuation = c }

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        continuation.yield(.message(message))
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
        continuation.yield(.closed(code, reason))
        continuation.finish()
    }
}

/// A parsed ws:// or wss:// URL.
public struct ClientURL: Sendable, Equatable {
    public var secure: Bool
    public var host: String
    public var port: Int
    public var path: String

    public init(_ url: String) throws {
        let rest: Substring
        if url.hasPrefix("ws://") {
            secure = false
            rest = url.dropFirst(5)
        } else if url.hasPrefix("wss://") {
            secure = true
            rest = url.dropFirst(6)
        } else {
            throw ClientError.badURL(url)
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        path = slash == rest.endIndex ? "/" : String(rest[slash...])
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            port = after.hasPrefix(":") ? Int(after.dropFirst()) ?? -1 : (secure ? 443 : 80)
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            port = Int(authority[authority.index(after: colon)...]) ?? -1
        } else {
            host = String(authority)
            port = secure ? 443 : 80
        }
        guard !host.isEmpty, (1...65535).contains(port) else { throw ClientError.badURL(url) }
    }
}

/// Event loops shared by clients in this process (created on first use).
public final class ClientLoops: Sendable {
    public static let shared = ClientLoops(count: 1)
    private let loops: Mutex<[EventLoop]> = Mutex([])
    private let counter = Atomic<Int>(0)
    private let count: Int

    public init(count: Int) { self.count = count }

    /// A loop, round robin.
    public func next() throws -> EventLoop {
        let all = try loops.withLock { l -> [EventLoop] in
            if l.isEmpty {
                var config = TransportConfiguration()
                config.maxOutboundBytes = 1 << 30
                config.spinMicros = 50
                for i in 0..<count { l.append(try EventLoop.makeClientLoop(index: i, configuration: config)) }
            }
            return l
        }
        return all[counter.add(1, ordering: .relaxed).newValue % all.count]
    }
}
