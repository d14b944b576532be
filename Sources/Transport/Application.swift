import WebSocket

/// What the server does with a request; the transport asks it on the connection's loop thread.
public protocol ServerApplication: AnyObject, Sendable {
    /// Routes a request head: to a WebSocket endpoint (the transport validates the upgrade)
    /// or to a plain HTTP response.
    func route(_ head: HTTPHead, secure: Bool) -> Route
}

/// Where a request goes.
public enum Route: Sendable {
    /// Upgrade to WebSocket with this endpoint's policy and handler.
    case webSocket(WebSocketEndpoint)
    /// Answer with a plain HTTP response and close.
    case http(status: Int, contentType: String, body: [UInt8], headers: [(String, String)])

    /// A plain text answer.
    public static func text(_ status: Int, _ body: String) -> Route {
        .http(status: status, contentType: "text/plain; charset=utf-8", body: Array(body.utf8), headers: [])
    }
}

/// A WebSocket endpoint: how upgrades are negotiated and who handles the connection.
public struct WebSocketEndpoint: Sendable {
    public var policy: Handshake.ServerPolicy
    /// Limits and timers for this endpoint's connections (nil: the transport's).
    public var webSocket: WebSocketStateMachine.Configuration?
    /// Makes the handler for a new connection (called on its loop thread; may return a shared,
    /// stateless handler so idle connections cost nothing extra).
    public var makeHandler: @Sendable (WebSocketConnection) -> any WebSocketHandler

    public init(policy: Handshake.ServerPolicy, webSocket: WebSocketStateMachine.Configuration? = nil,
                makeHandler: @escaping @Sendable (WebSocketConnection) -> any WebSocketHandler) {
        self.policy = policy
        self.webSocket = webSocket
        self.makeHandler = makeHandler
    }
}

/// Receives one connection's events, always on that connection's loop thread, in order.
public protocol WebSocketHandler: AnyObject {
    /// A complete message arrived.
    func onMessage(_ message: Message, connection: WebSocketConnection)
    /// The connection is gone (`code` is why: the peer's close code, or 1006 when it just dropped).
    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection)
}

extension WebSocketHandler {
    public func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {}
}
