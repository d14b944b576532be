import WebSocket

/// One request with a body, on its connection: the body parser, the endpoint's handler, and what
/// the connection does once it is answered. Loop-confined.
final class ExchangeState {
    let number: UInt32
    var parser: HTTPBodyParser
    /// nil once it has answered or been told of an abort: it hears nothing more.
    var handler: (any HTTPBodyHandler)?
    /// Whether the connection may take another request after the answer.
    let keepAlive: Bool
    /// Input that arrived after the body (the next request, pipelined), held until the answer.
    var pending: [UInt8] = []

    init(number: UInt32, parser: HTTPBodyParser, keepAlive: Bool) {
        self.number = number
        self.parser = parser
        self.keepAlive = keepAlive
    }

    func abort(_ reason: String) {
        let h = handler
        handler = nil
        h?.onAbort(reason: reason)
    }
}

extension HTTPConnection {
    /// Starts reading a request's body for `endpoint` (or refuses it at once, from its head alone).
    func startExchange(_ head: HTTPHead, _ endpoint: HTTPBodyEndpoint, remainder: [UInt8]) {
        let framing: HTTPBodyFraming
        switch HTTPBodyFraming.of(head) {
        case .failure(let e): return refuseRequest(e)
        case .success(let f): framing = f
        }
        if case .length(let n) = framing, n > endpoint.maxBytes {
            return refuseRequest(HTTPError(413, "request body larger than \(endpoint.maxBytes) bytes"))
        }
        if let expect = head.value("Expect") {
            guard expect.lowercased() == "100-continue" else { return refuseRequest(HTTPError(417, "unsupported Expect: \(expect)")) }
            // The client waits for this before sending the body; it is sent only to a body we will read.
            if framing != .none { enqueue(SharedBytes.copy(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)), bounded: false, countFrame: false) }
        }
        guard stage.isOpen else { return }
        exchanges &+= 1
        let keepAlive = head.startLine.2 == "HTTP/1.1" && !head.hasToken("Connection", "close")
        let exchange = ExchangeState(number: exchanges,
                                     parser: HTTPBodyParser(framing: framing, limits: .init(maxBytes: endpoint.maxBytes)),
                                     keepAlive: keepAlive)
        // In the state before the handler is made: a close meanwhile tells it.
        state = .readingBody(exchange)
        deadline = loop.now + loop.configuration.bodyIdleTimeoutNanos
        exchange.handler = endpoint.makeHandler(head, HTTPExchange(connection: handle, number: exchange.number))
        guard stage.isOpen else { return }
        remainder.withUnsafeBytes { receivedBody($0, exchange) }
    }

    /// Feeds body bytes to the parser and their data to the handler.
    func receivedBody(_ bytes: UnsafeRawBufferPointer, _ exchange: ExchangeState) {
        deadline = loop.now + loop.configuration.bodyIdleTimeoutNanos
        var data: [Range<Int>] = []
        let progress = exchange.parser.feed(bytes, data: &data)
        for range in data where !range.isEmpty {
            exchange.handler?.onBodyPart(UnsafeRawBufferPointer(rebasing: bytes[range]))
        }
        switch progress {
        case .needMore:
            return
        case .error(let e):
            exchange.abort(e.message)
            refuseRequest(e)
        case .complete(let consumed, let trailers):
            state = .awaitingAnswer(exchange)
            deadline = 0
            // Whatever follows is the next request: kept, and input paused, until the answer.
            exchange.pending = Array(bytes[consumed...])
            loop.setReadInterest(self, false)
            let h = exchange.handler
            h?.onBodyEnd(trailers: trailers)
        }
    }

    /// Input that arrived while the answer is awaited (read before the pause took effect).
    func holdNextRequest(_ bytes: UnsafeRawBufferPointer, _ exchange: ExchangeState) {
        exchange.pending += Array(bytes)
        loop.setReadInterest(self, false)
    }

    /// The sender stopped sending mid-body.
    func bodyStalled(_ exchange: ExchangeState) {
        exchange.abort("request body timed out")
        refuseRequest(HTTPError(408, "the request body stopped arriving"))
    }

    /// The handler's answer to request `number`. After a complete body on a keep-alive
    /// connection, the connection goes back to reading the next request's head (what was held
    /// is parsed first); otherwise it closes after the answer.
    func answerExchange(_ number: UInt32, status: Int, contentType: String, body: [UInt8], headers: [(String, String)]) {
        let exchange: ExchangeState, complete: Bool
        switch state {
        case .readingBody(let e): (exchange, complete) = (e, false)
        case .awaitingAnswer(let e): (exchange, complete) = (e, true)
        case .tlsHandshake, .readingHead, .done: return
        }
        guard exchange.number == number, exchange.handler != nil else { return }
        exchange.handler = nil
        state = .done
        loop.shared.metrics.httpRequests.increment()
        let reuse = complete && exchange.keepAlive
        let response = HTTPResponse.make(status: status, headers: headers, contentType: contentType, body: body, keepAlive: reuse)
        guard reuse else { return respondAndClose(response) }
        guard answerAndAwaitNextRequest(response) else { return }
        loop.setReadInterest(self, true)
        if !exchange.pending.isEmpty {
            var held = exchange.pending
            held.withUnsafeMutableBytes { received($0) }
        }
        if isSecure, case .readingHead = state { driveTLS() } // plaintext decrypted before the pause
    }

    /// Pauses or resumes reading request `number`'s body (its handler's back-pressure).
    func setExchangeReading(_ number: UInt32, _ on: Bool) {
        guard case .readingBody(let exchange) = state, exchange.number == number else { return }
        loop.setReadInterest(self, on)
        if on {
            deadline = loop.now + loop.configuration.bodyIdleTimeoutNanos
            if isSecure { driveTLS() }
        } else {
            deadline = .max // a paused body is not the sender's delay
        }
    }

    /// Answers a request we will not handle and closes (its body, if any, is not read).
    private func refuseRequest(_ e: HTTPError) {
        loop.shared.metrics.httpRequests.increment()
        respondAndClose(HTTPResponse.error(e))
    }
}
