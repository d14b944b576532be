import WebSocket

/// A server socket until it upgrades: HTTP/1.1 requests one after another (keep-alive), a
/// request's body for an `HTTPBodyEndpoint` (`HTTPConnection+Exchange.swift`), and the upgrade,
/// where a `WebSocketConnection` takes the socket over and this object is dropped.
final class HTTPConnection: SocketConnection {
    /// Where the connection is, request after request.
    enum State {
        /// The TLS handshake is in progress (TLS port).
        case tlsHandshake
        /// Reading a request's head: the first one, or the next on a kept-alive connection.
        case readingHead(HTTPHeadParser)
        /// Reading a request's body for an `HTTPBodyEndpoint`'s handler.
        case readingBody(ExchangeState)
        /// The body is read; input is paused until the handler answers (what followed is held).
        case awaitingAnswer(ExchangeState)
        /// Answered for good (the socket is closing), or upgraded: input is not read here.
        case done
    }

    @exclusivity(unchecked) var state: State
    /// The handshake's, the next request's or the body's deadline, in the loop's clock (0: none).
    @exclusivity(unchecked) var deadline: UInt64 = 0
    /// Requests with a body taken so far (keep-alive), to number the next one.
    var exchanges: UInt32 = 0

    init(loop: EventLoop, fd: Int32, generation: UInt32, remoteAddress: String, tls: TLSSession?) {
        state = tls == nil ? .readingHead(HTTPHeadParser(kind: .request, limits: loop.configuration.http)) : .tlsHandshake
        super.init(loop: loop, fd: fd, generation: generation, kind: .http, isClient: false, remoteAddress: remoteAddress, tls: tls)
        deadline = loop.now + loop.configuration.handshakeTimeoutNanos
    }

    override func tlsReady() {
        state = .readingHead(HTTPHeadParser(kind: .request, limits: loop.configuration.http))
    }

    override func received(_ mutableBytes: UnsafeMutableRawBufferPointer) {
        let bytes = UnsafeRawBufferPointer(mutableBytes)
        switch state {
        case .readingHead(var parser):
            // Out of the state while it is fed, so that its buffer is not shared (no copy).
            state = .done
            switch parser.feed(bytes) {
            case .needMore:
                state = .readingHead(parser)
            case .error(let e):
                loop.shared.metrics.handshakeFailed(e.label)
                respondAndClose(HTTPResponse.error(e))
            case .head(let head, let remainder):
                gotRequest(head, remainder: remainder)
            }
        case .readingBody(let exchange):
            receivedBody(bytes, exchange)
        case .awaitingAnswer(let exchange):
            holdNextRequest(bytes, exchange)
        case .tlsHandshake, .done:
            return
        }
    }

    override func tickOpen(now: UInt64) {
        switch state {
        case .tlsHandshake, .readingHead:
            if deadline != 0 && now >= deadline {
                loop.shared.metrics.handshakeFailed("timeout")
                closeNow(code: .abnormal, reason: "handshake timeout")
            }
        case .readingBody(let exchange):
            if now >= deadline { bodyStalled(exchange) }
        case .awaitingAnswer, .done:
            break
        }
    }

    override func closed(code: CloseCode, reason: String) {
        switch state {
        case .readingBody(let exchange), .awaitingAnswer(let exchange): exchange.abort("connection closed: \(reason)")
        case .tlsHandshake, .readingHead, .done: break
        }
        state = .done
    }

    private func gotRequest(_ head: HTTPHead, remainder: [UInt8]) {
        guard let app = loop.shared.application else { return respondAndClose(HTTPResponse.error(HTTPError(503, "no application"))) }
        switch app.route(head, secure: tls != nil) {
        case .http(let status, let contentType, let body, let headers):
            loop.shared.metrics.httpRequests.increment()
            // A page's files come one request after another: a bodiless HTTP/1.1 request keeps its
            // connection (pipelined ones are answered and closed: no recursion over a read's worth
            // of tiny requests).
            let keepAlive = head.startLine.2 == "HTTP/1.1" && !head.hasToken("Connection", "close") && remainder.isEmpty
                && (try? HTTPBodyFraming.of(head).get()) == HTTPBodyFraming.none
            let response = HTTPResponse.make(status: status, headers: headers, contentType: contentType, body: body, keepAlive: keepAlive)
            guard keepAlive else { return respondAndClose(response) }
            answerAndAwaitNextRequest(response)
        case .body(let endpoint):
            startExchange(head, endpoint, remainder: remainder)
        case .webSocket(let endpoint):
            guard Handshake.isUpgradeRequest(head) else {
                loop.shared.metrics.handshakeFailed("not_upgrade")
                return respondAndClose(HTTPResponse.error(HTTPError(426, "\(head.path) is a WebSocket endpoint: send an upgrade request",
                                                                    headers: ["Upgrade": "websocket", "Sec-WebSocket-Version": "13"])))
            }
            switch Handshake.accept(head, policy: endpoint.policy) {
            case .failure(let e):
                loop.shared.metrics.handshakeFailed(e.label)
                respondAndClose(HTTPResponse.error(e))
            case .success(let accepted):
                upgrade(accepted, endpoint, remainder: remainder)
            }
        }
    }

    /// Sends the 101 and hands the socket to a `WebSocketConnection`, which reads what followed
    /// the request (in `remainder`, and on TLS in the session).
    private func upgrade(_ accepted: Handshake.Accepted, _ endpoint: WebSocketEndpoint, remainder: [UInt8]) {
        enqueue(SharedBytes.copy(accepted.response), bounded: false, countFrame: false)
        // A TLS write failure closes the connection inside enqueue: no WebSocket, no handler.
        guard stage.isOpen else { return }
        let ws = WebSocketConnection(upgrading: self, subprotocol: accepted.subprotocol, deflate: accepted.deflate,
                                     configuration: endpoint.webSocket ?? loop.configuration.webSocket,
                                     minimumCompressed: endpoint.policy.deflate.minimumSize)
        // In the loop before the handler is made: the handler may look its connection up.
        loop.replace(self, with: ws)
        loop.shared.metrics.handshakes.increment()
        loop.shared.metrics.opened()
        ws.start(handler: endpoint.makeHandler(ws), remainder: remainder)
    }

    /// Sends a kept-alive answer and goes back to reading the next request's head (idle for at
    /// most the handshake timeout); false when the connection closed meanwhile.
    @discardableResult
    func answerAndAwaitNextRequest(_ response: [UInt8]) -> Bool {
        enqueue(SharedBytes.copy(response), bounded: false, countFrame: false)
        guard stage.isOpen else { return false }
        state = .readingHead(HTTPHeadParser(kind: .request, limits: loop.configuration.http))
        deadline = loop.now + loop.configuration.handshakeTimeoutNanos
        return true
    }

    /// Sends a last answer and closes once it is written.
    func respondAndClose(_ response: [UInt8]) {
        state = .done
        if readPaused { loop.setReadInterest(self, true) } // to see the peer's FIN while lingering
        enqueue(SharedBytes.copy(response), bounded: false, countFrame: false)
        beginClosing(code: .abnormal, reason: "HTTP response sent", timeoutNanos: Self.closeTimeoutNanos)
    }
}
