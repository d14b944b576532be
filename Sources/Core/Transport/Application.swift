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
    /// Read the request's body and stream it to this endpoint's handler, which answers when it likes.
    case body(HTTPBodyEndpoint)

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
    /// A complete message arrived, its bytes lent for the call only (copy what you keep). The
    /// transport calls this for every single-frame message; by default it copies them into a
    /// `Message` for `onMessage(_:connection:)`. A handler that is done with the bytes when it
    /// returns (an echo, a parse) implements it and costs no copy.
    func onMessage(_ kind: MessageKind, bytes: UnsafeRawBufferPointer, connection: WebSocketConnection)
    /// The connection is gone (`code` is why: the peer's close code, or 1006 when it just dropped).
    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection)
}

extension WebSocketHandler {
    public func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {}

    public func onMessage(_ kind: MessageKind, bytes: UnsafeRawBufferPointer, connection: WebSocketConnection) {
        onMessage(Message(kind: kind, data: Array(bytes)), connection: connection)
    }
}

/// An endpoint that takes a request body (`POST /api/...`): the transport reads the body as it
/// arrives (Content-Length or chunked, `Expect: 100-continue`), hands it over in pieces, answers
/// 413 past `maxBytes`, 400 for malformed framing and 408 when the sender stalls, and keeps the
/// connection for the next request once the handler has answered.
public struct HTTPBodyEndpoint: Sendable {
    /// Largest body this endpoint takes (413 beyond it, before any of it is read when the
    /// Content-Length says so).
    public var maxBytes: Int
    /// Makes the handler of one request (loop thread); it answers through the exchange.
    public var makeHandler: @Sendable (HTTPHead, HTTPExchange) -> any HTTPBodyHandler

    public init(maxBytes: Int, makeHandler: @escaping @Sendable (HTTPHead, HTTPExchange) -> any HTTPBodyHandler) {
        self.maxBytes = maxBytes
        self.makeHandler = makeHandler
    }
}

/// Receives one request's body on its connection's loop thread, in order: pieces, then the end
/// or an abort. It answers through its `HTTPExchange`, from any thread, once (later answers are
/// ignored); an answer before the end of the body closes the connection after it.
public protocol HTTPBodyHandler: AnyObject {
    /// The next piece of the body; the bytes are valid only during the call.
    func onBodyPart(_ bytes: UnsafeRawBufferPointer)
    /// The body is complete (with the trailer fields of a chunked body).
    func onBodyEnd(trailers: [HTTPBodyParser.HTTPField])
    /// The request ended without a complete body (malformed, too large, too slow, connection lost):
    /// the transport has answered or the connection is gone; drop what was gathered.
    func onAbort(reason: String)
}

/// One request on its connection, from any thread: answer it, or hold its body back while the
/// handler catches up (reading pauses; the sender's TCP window fills).
public struct HTTPExchange: Sendable {
    let connection: ConnectionHandle
    /// Which request of the connection this is (keep-alive): an answer for an earlier one is dropped.
    let number: UInt32

    /// Sends the response (once; the first answer wins).
    public func respond(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8],
                        headers: [(String, String)] = []) {
        let number = self.number
        connection.loop.execute { loop in
            loop.httpConnection(for: connection)?.answerExchange(number, status: status, contentType: contentType, body: body, headers: headers)
        }
    }

    /// Stops reading the body until `resumeReading`.
    public func pauseReading() { setReading(false) }

    /// Reads the body again.
    public func resumeReading() { setReading(true) }

    private func setReading(_ on: Bool) {
        let number = self.number
        connection.loop.execute { loop in loop.httpConnection(for: connection)?.setExchangeReading(number, on) }
    }
}
