import CLinux
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection on its loop: TLS (optional), the HTTP head, then WebSocket frames, or a
/// request body and its answer (then the next request: see `WebSocketConnection+HTTPExchange.swift`).
/// Confined to its loop's thread; use `handle` to reach it from elsewhere.
public final class WebSocketConnection {
    /// Where the connection is in its life.
    enum Phase: Equatable {
        /// Client only: the TCP connect is in progress.
        case connecting
        /// The TLS handshake is in progress.
        case tlsHandshake
        /// Reading the HTTP request (server) or the upgrade response (client).
        case httpHead
        /// Reading a request's body for an `HTTPBodyEndpoint`'s handler.
        case readingBody
        /// The body is read; waiting for the handler's answer (input is not read meanwhile).
        case awaitingAnswer
        /// WebSocket frames flow.
        case webSocket
        /// Writing the last bytes (a close frame or an HTTP answer), then closing.
        case closing
        /// All written and our side shut down; reading and discarding until the peer closes
        /// (closing with unread input would reset the connection and lose our last bytes).
        case lingering
        /// Closed and forgotten by the loop.
        case closed
    }

    // Stored properties are laid out in declaration order: small ones sit together, and state
    // that only some connections need for a while lives out of line in `Extras`, so an open idle
    // connection stays near a quarter of a kilobyte. Loop-confined: see `EventLoop` on why the hot
    // ones skip the runtime exclusivity check.
    /// Strong on purpose: the loop holds its open connections and each holds its loop, a cycle that
    /// ends when the loop forgets a closed connection. Reading a strong `let` needs no reference
    /// counting; an unowned one is retained and released around every use (every push).
    let loop: EventLoop
    let fd: Int32
    let generation: UInt32
    /// Messages of at least this many bytes go compressed (the endpoint's policy); `Int32.max`
    /// when the handshake agreed no compression, so a push checks one number, not the setup.
    @exclusivity(unchecked) private var compressFrom = Int32.max
    @exclusivity(unchecked) var phase: Phase
    let isClient: Bool
    @exclusivity(unchecked) var dirty = false
    @exclusivity(unchecked) var epollOut = false
    /// Input is no longer watched (the peer sent EOF while we still write).
    @exclusivity(unchecked) var outputOnly = false
    /// Input is not read for now (a body's handler is catching up, or an answer is awaited).
    @exclusivity(unchecked) var readPaused = false
    /// A close frame is in the queue: nothing may follow it. (Replies to messages that arrived
    /// before a protocol error still go out first, in order.)
    @exclusivity(unchecked) private var closeQueued = false
    @exclusivity(unchecked) private var closeCode = CloseCode.abnormal

    @exclusivity(unchecked) private var ws: WebSocketStateMachine?
    @exclusivity(unchecked) private var tls: TLSSession?
    @exclusivity(unchecked) private var queue = OutboundQueue()
    @exclusivity(unchecked) private var handler: (any WebSocketHandler)?
    /// Free for the application to hang its per-connection state on (loop thread only).
    public var userInfo: AnyObject?
    /// The peer's IP address.
    public let remoteAddress: String
    /// Handshake deadline, or close deadline while closing (0: none).
    @exclusivity(unchecked) var deadline: UInt64
    private var closeReason = ""
    /// The subprotocol agreed in the handshake.
    public private(set) var subprotocol: String?
    @exclusivity(unchecked) private(set) var extras: Extras?

    /// What a connection needs only during its handshake or only in some configurations.
    final class Extras {
        /// Reads the HTTP request (server) or the upgrade response (client) until the handshake is done.
        var http: HTTPHeadParser?
        /// A client connection's settings until its handshake is done.
        var client: ClientSetup?
        /// This connection's own compressor, made on first use and only when its compression keeps
        /// context between messages (it costs about 256 KiB).
        var ownDeflater: Deflater?
        /// The request whose body is being read or whose answer is awaited.
        var exchange: ExchangeState?
        /// Requests answered on this connection so far (keep-alive), to number the next one.
        var exchanges: UInt32 = 0
        var isEmpty: Bool { http == nil && client == nil && ownDeflater == nil && exchange == nil && exchanges == 0 }
    }

    /// The Extras, made when first needed.
    var madeExtras: Extras {
        if let e = extras { return e }
        let e = Extras()
        extras = e
        return e
    }

    func dropEmptyExtras() {
        if extras?.isEmpty == true { extras = nil }
    }

    private func contextDeflater(_ d: PerMessageDeflate.Parameters) -> Deflater? {
        // Only a side that keeps its context between messages needs a compressor of its own.
        guard !(isClient ? d.clientNoContextTakeover : d.serverNoContextTakeover) else { return nil }
        if let own = extras?.ownDeflater { return own }
        let bits = isClient ? (d.clientMaxWindowBits ?? 15) : d.serverMaxWindowBits
        let pool = loop.shared.deflaters
        let made = Deflater(level: pool.level, windowBits: bits, memoryLevel: pool.memoryLevel, noContextTakeover: false)
        madeExtras.ownDeflater = made
        return made
    }

    /// Whether the connection runs over TLS.
    public var isSecure: Bool { tls != nil }
    /// The negotiated permessage-deflate parameters.
    public var compression: PerMessageDeflate.Parameters? { ws?.deflate }

    /// Largest message the peer may send now (`WebSocketStateMachine.maxMessageSize`): lowered
    /// for a while, never raised past the endpoint's limit. Loop thread only; from elsewhere,
    /// `ConnectionHandle.setMaxMessageSize`.
    public var maxMessageSize: Int {
        get { ws?.maxMessageSize ?? 0 }
        set { ws?.maxMessageSize = newValue }
    }

    /// A thread-safe reference to this connection.
    public var handle: ConnectionHandle { ConnectionHandle(loop: loop, fd: fd, generation: generation) }

    init(loop: EventLoop, fd: Int32, generation: UInt32, remoteAddress: String, tls: TLSContext?, client: ClientSetup?) throws {
        self.loop = loop
        self.fd = fd
        self.generation = generation
        self.remoteAddress = remoteAddress
        self.isClient = client != nil
        if let tls {
            self.tls = try TLSSession(context: tls, isServer: client == nil, serverName: client?.serverName,
                                      verifyHost: tls.verifiesPeer)
        }
        deadline = loop.now + (client?.handshakeTimeoutNanos ?? loop.configuration.handshakeTimeoutNanos)
        if let client {
            phase = .connecting
            madeExtras.client = client
        } else {
            phase = tls != nil ? .tlsHandshake : .httpHead
            madeExtras.http = HTTPHeadParser(kind: .request, limits: loop.configuration.http)
        }
    }

    // MARK: Events from the loop

    func readable() {
        if phase == .connecting { return writable() }
        let n = clinux_read(fd, loop.readBuffer.baseAddress, loop.readBuffer.count)
        if n <= 0 {
            if n < 0 && (clinux_errno() == EAGAIN || clinux_errno() == EWOULDBLOCK) { return }
            return peerClosed()
        }
        loop.stats.bytesIn += n
        if phase == .lingering { return } // discarded: we are only waiting for the peer's FIN
        let bytes = UnsafeRawBufferPointer(rebasing: loop.readBuffer[0..<n])
        if let tls {
            tls.feedCiphertext(bytes)
            driveTLS()
        } else {
            received(bytes)
        }
    }

    func writable() {
        if phase == .connecting {
            let err = clinux_socket_error(fd)
            if err != 0 { return failClient("TCP connect: \(String(cString: strerror(err)))") }
            loop.setWriteInterest(self, false)
            if tls != nil {
                phase = .tlsHandshake
                driveTLS()
            } else {
                sendClientRequest()
            }
            return
        }
        flush()
    }

    private func peerClosed() {
        switch phase {
        case .closing: finishAfterPeerEOF()
        case .lingering: closeNow(code: closeCode, reason: closeReason)
        default: closeNow(code: .abnormal, reason: "connection dropped")
        }
    }

    /// The peer stopped sending while our last bytes are still queued: write them before closing
    /// (stop watching input, which would only report EOF again), or give up at the deadline.
    private func finishAfterPeerEOF() {
        flush()
        guard phase == .closing || phase == .lingering else { return }
        phase = .lingering
        loop.watchOutputOnly(self)
    }

    func tick(now: UInt64) {
        tls?.shrinkIdleBIOs()
        queue.releaseIfIdle()
        switch phase {
        case .connecting, .tlsHandshake, .httpHead:
            if deadline != 0 && now >= deadline {
                loop.shared.metrics.handshakeFailed("timeout")
                if isClient { failClient("handshake timed out") } else { closeNow(code: .abnormal, reason: "handshake timeout") }
            }
        case .webSocket:
            var actions = takeActions()
            ws!.tick(now: now, into: &actions)
            perform(&actions)
        case .readingBody:
            if now >= deadline { bodyStalled() }
        case .awaitingAnswer:
            break
        case .closing, .lingering:
            if now >= deadline { closeNow(code: closeCode, reason: closeReason) }
        case .closed:
            break
        }
    }

    // MARK: TLS

    func driveTLS() {
        guard let tls else { return }
        if !tls.handshakeDone {
            switch tls.handshake() {
            case .wantMore:
                flushTLSOutput()
                return
            case .failed(let why):
                loop.shared.metrics.tlsHandshake("failed")
                loop.shared.metrics.handshakeFailed("tls")
                flushTLSOutput()
                if isClient { return failClient(why) }
                closeCode = .abnormal
                closeReason = "TLS handshake failed"
                return beginClosing()
            case .closed:
                return closeNow(code: .abnormal, reason: "TLS closed during handshake")
            case .ready:
                loop.shared.metrics.tlsHandshake("ok")
                flushTLSOutput()
                if isClient { sendClientRequest() } else { phase = .httpHead }
            }
        }
        while phase != .closed && !readPaused {
            guard let n = tls.readPlaintext(into: loop.plainBuffer) else {
                flushTLSOutput()
                if phase == .closing { return finishAfterPeerEOF() }
                return closeNow(code: .abnormal, reason: "TLS closed or failed")
            }
            if n == 0 { break }
            received(UnsafeRawBufferPointer(rebasing: loop.plainBuffer[0..<n]))
        }
        flushTLSOutput()
    }

    private func flushTLSOutput() {
        if let chunk = tls?.takeCiphertext() {
            queue.append(chunk)
            loop.markDirty(self)
        }
    }

    // MARK: Input

    func received(_ bytes: UnsafeRawBufferPointer) {
        switch phase {
        case .httpHead:
            switch extras!.http!.feed(bytes) {
            case .needMore:
                return
            case .error(let e):
                loop.shared.metrics.handshakeFailed(e.label)
                if isClient { return failClient("bad HTTP response: \(e.message)") }
                return respondAndClose(HTTPResponse.error(e))
            case .head(let head, let remainder):
                extras?.http = nil
                dropEmptyExtras()
                if isClient { clientGotResponse(head, remainder: remainder) } else { serverGotRequest(head, remainder: remainder) }
            }
        case .webSocket:
            var actions = takeActions()
            ws!.receive(bytes, now: loop.now, into: &actions)
            loop.stats.framesIn += Int(ws!.framesReceived)
            ws!.framesReceived = 0
            perform(&actions)
        case .readingBody:
            receivedBody(bytes)
        case .awaitingAnswer:
            holdNextRequest(bytes)
        default:
            return
        }
    }

    private func takeActions() -> [WebSocketStateMachine.Action] {
        var a = loop.actions
        loop.actions = []
        a.removeAll(keepingCapacity: true)
        return a
    }

    private func perform(_ actions: inout [WebSocketStateMachine.Action]) {
        for action in actions {
            switch action {
            case .deliver(let message):
                loop.stats.messagesIn += 1
                handler?.onMessage(message, connection: self)
            case .write(let bytes):
                guard !closeQueued else { continue }
                let isClose = bytes.first.map({ $0 & 0x0F }) == Opcode.close.rawValue
                if isClose { closeQueued = true }
                // Pongs count against the backlog limit: a client that pings and never reads is a
                // slow consumer like any other. The close frame always gets through.
                enqueue(bytes.withUnsafeBytes { SharedBytes.copy($0) }, bounded: !isClose)
            case .closeConnection(let code, let reason):
                closeCode = code
                closeReason = reason
                beginClosing()
            }
        }
        actions.removeAll(keepingCapacity: true)
        if loop.actions.capacity < actions.capacity { loop.actions = actions }
    }

    private func serverGotRequest(_ head: HTTPHead, remainder: [UInt8]) {
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
                enqueue(SharedBytes.copy(accepted.response), bounded: false, countFrame: false)
                // A TLS write failure closes the connection inside enqueue: no WebSocket, no handler.
                guard phase != .closed else { return }
                subprotocol = accepted.subprotocol
                startWebSocket(deflate: accepted.deflate, configuration: endpoint.webSocket ?? loop.configuration.webSocket,
                               minimumCompressed: endpoint.policy.deflate.minimumSize)
                loop.shared.metrics.handshakes.increment()
                loop.shared.metrics.opened()
                handler = endpoint.makeHandler(self)
                if !remainder.isEmpty { remainder.withUnsafeBytes { received($0) } }
            }
        }
    }

    private func startWebSocket(deflate: PerMessageDeflate.Parameters?, configuration: WebSocketStateMachine.Configuration, minimumCompressed: Int) {
        compressFrom = deflate == nil ? .max : Int32(clamping: minimumCompressed)
        var inflater: Inflater?
        if let d = deflate {
            // Inbound: the peer's compressor resets per message → the loop's shared inflater will do.
            let peerResets = isClient ? d.serverNoContextTakeover : d.clientNoContextTakeover
            inflater = peerResets ? loop.sharedInflater : Inflater(noContextTakeover: false)
        }
        ws = WebSocketStateMachine(setup: loop.webSocketSetup(role: isClient ? .client : .server, configuration: configuration, deflate: deflate),
                                   inflater: inflater, now: loop.now, maskSeed: UInt64(truncatingIfNeeded: loop.now) ^ UInt64(fd) << 32)
        phase = .webSocket
        deadline = 0
    }

    /// Sends a kept-alive answer and goes back to reading the next request's head (idle for at
    /// most the handshake timeout); false when the connection closed meanwhile.
    @discardableResult
    func answerAndAwaitNextRequest(_ response: [UInt8]) -> Bool {
        enqueue(SharedBytes.copy(response), bounded: false, countFrame: false)
        guard phase != .closed else { return false }
        phase = .httpHead
        deadline = loop.now + loop.configuration.handshakeTimeoutNanos
        madeExtras.http = HTTPHeadParser(kind: .request, limits: loop.configuration.http)
        return true
    }

    func respondAndClose(_ response: [UInt8]) {
        if readPaused { loop.setReadInterest(self, true) } // to see the peer's FIN while lingering
        enqueue(SharedBytes.copy(response), bounded: false, countFrame: false)
        closeCode = .abnormal
        closeReason = "HTTP response sent"
        beginClosing()
    }

    // MARK: Output

    /// Sends a message encoded once for many receivers. Loop thread only.
    public func send(_ message: OutboundMessage) {
        guard phase == .webSocket, !closeQueued else { return }
        if isClient {
            return message.payload.withUnsafeBytes { sendFrame(message.kind, payload: $0) }
        }
        guard message.payload.count >= Int(compressFrom), let d = ws!.deflate else {
            // The common case, once per receiver of a push: the shared frame goes in as it is
            // (handed straight over: a local copy would cost reference counting per receiver).
            return enqueue(message.frame, bounded: true, message: true)
        }
        if let own = contextDeflater(d) {
            enqueue(own.compress(message.payload).withUnsafeBytes { FrameEncoder.sharedFrame(opcode: message.kind.opcode, payload: $0, rsv1: true) },
                    bounded: true, message: true)
        } else {
            enqueue(message.compressedFrame(windowBits: d.serverMaxWindowBits, pool: loop.shared.deflaters), bounded: true, message: true)
        }
    }

    /// Sends a message to this connection only. Loop thread only.
    public func send(_ message: Message) {
        message.data.withUnsafeBytes { sendFrame(message.kind, payload: $0) }
    }

    /// Sends text. Loop thread only.
    public func send(text: String) {
        var t = text
        t.withUTF8 { sendFrame(.text, payload: UnsafeRawBufferPointer($0)) }
    }

    /// Builds and queues one frame for this connection (masked when we are the client).
    public func sendFrame(_ kind: MessageKind, payload: UnsafeRawBufferPointer) {
        guard phase == .webSocket, !closeQueued else { return }
        let mask = isClient ? ws!.nextMaskKey() : nil
        var frame: SharedBytes
        if payload.count >= Int(compressFrom), let d = ws!.deflate, !(isClient && (d.clientMaxWindowBits ?? 15) < 9) {
            let body: [UInt8]
            if let own = contextDeflater(d) {
                body = own.compress(payload)
            } else {
                let bits = isClient ? (d.clientMaxWindowBits ?? 15) : d.serverMaxWindowBits
                body = loop.shared.deflaters.withDeflater(windowBits: bits) { $0.compress(payload) }
            }
            frame = body.withUnsafeBytes { FrameEncoder.sharedFrame(opcode: kind.opcode, payload: $0, rsv1: true, maskKey: mask) }
        } else {
            frame = FrameEncoder.sharedFrame(opcode: kind.opcode, payload: payload, maskKey: mask)
        }
        enqueue(frame, bounded: true, message: true)
    }

    /// Writes bytes exactly as given, outside any framing (for tests of how peers treat bad input).
    public func writeRaw(_ bytes: [UInt8]) {
        guard phase == .webSocket else { return }
        enqueue(SharedBytes.copy(bytes), bounded: false)
    }

    /// Starts the close handshake (the connection closes when the peer answers or after the close timeout).
    public func close(code: CloseCode = .normal, reason: String = "") {
        switch phase {
        case .webSocket:
            if let frame = ws!.close(code: code, reason: reason, now: loop.now) {
                closeQueued = true
                enqueue(SharedBytes.copy(frame), bounded: false)
                closeCode = code
                closeReason = reason
            }
        case .closing, .lingering, .closed:
            return
        default:
            closeNow(code: code, reason: reason)
        }
    }

    func enqueue(_ bytes: SharedBytes, bounded: Bool, countFrame: Bool = true, message: Bool = false) {
        if countFrame { loop.stats.framesOut += 1 }
        if message { loop.stats.messagesOut += 1 }
        if let tls {
            guard bytes.withBytes({ tls.writePlaintext($0) }) else { return closeNow(code: .abnormal, reason: "TLS write failed") }
            if let chunk = tls.takeCiphertext() { queue.append(chunk) }
        } else {
            queue.append(bytes)
        }
        loop.markDirty(self)
        // One message bigger than the limit may go out on its own; a backlog over the limit may not.
        if bounded && queue.backlogBytes > loop.configuration.maxOutboundBytes { slowConsumer() }
    }

    /// The client cannot keep up: drop what has not started going out, say 4001, and close.
    private func slowConsumer() {
        loop.shared.metrics.slowConsumers.increment()
        // TLS records are numbered: dropping ciphertext would corrupt the stream, so only plain text drops.
        if tls == nil { queue.dropUnstarted() }
        if let frame = ws?.close(code: .slowConsumer, reason: "slow consumer", now: loop.now), !closeQueued {
            closeQueued = true
            enqueue(SharedBytes.copy(frame), bounded: false)
        }
        closeCode = .slowConsumer
        closeReason = "slow consumer"
        beginClosing()
    }

    private func beginClosing() {
        guard phase != .closing && phase != .closed && phase != .lingering else { return }
        phase = .closing
        deadline = loop.now + (ws?.configuration.closeTimeoutNanos ?? 2_000_000_000)
        if let tls {
            tls.shutdown()
            flushTLSOutput()
        }
        loop.markDirty(self)
    }

    func flush() {
        dirty = false
        guard phase != .closed else { return }
        var written = 0
        let result = queue.write(to: fd, iovecs: loop.iovecs, written: &written)
        loop.stats.bytesOut += written
        switch result {
        case .drained:
            loop.setWriteInterest(self, false)
            if phase == .closing { linger() } else if phase == .lingering && loop.watchesOutputOnly(self) {
                closeNow(code: closeCode, reason: closeReason)
            }
        case .blocked:
            loop.setWriteInterest(self, true)
        case .failed:
            closeNow(code: .abnormal, reason: "write failed")
        }
    }

    /// Everything is written: send FIN and wait (briefly) for the peer's.
    private func linger() {
        phase = .lingering
        _ = clinux_shutdown_write(fd)
        deadline = min(deadline, loop.now + 2_000_000_000)
    }

    /// Drops the TCP connection without a close handshake, as a lost network would (the load
    /// harness's reconnect storms); the handler sees 1006.
    public func drop() { closeNow(code: .abnormal, reason: "dropped") }

    /// Ends the connection at once (shutdown deadline): one that was closing keeps its close code.
    func abort(reason: String) {
        if phase == .closing || phase == .lingering { closeNow(code: closeCode, reason: closeReason) } else { closeNow(code: .goingAway, reason: reason) }
    }

    /// Closes the socket now and tells the handler.
    func closeNow(code: CloseCode, reason: String) {
        guard phase != .closed else { return }
        let wasOpen = handler != nil
        phase = .closed
        loop.forget(self)
        _ = clinux_close(fd)
        if !isClient { loop.shared.limiter.release(remoteAddress) }
        if wasOpen {
            loop.shared.metrics.closedWebSocket()
            loop.shared.metrics.closed(code)
            let h = handler
            handler = nil
            h?.onClose(code: code, reason: reason, connection: self)
        }
        if extras?.client != nil { failClient("closed: \(reason)") }
        if let exchange = extras?.exchange { exchange.abort("connection closed: \(reason)") }
        queue = OutboundQueue()
        ws = nil
        tls = nil
        extras = nil
        userInfo = nil
    }

    // MARK: Client side

    private func sendClientRequest() {
        guard let setup = extras?.client else { return }
        let request = Handshake.clientRequest(host: setup.hostHeader, path: setup.path, subprotocols: setup.subprotocols,
                                              offerDeflate: setup.offerDeflate, extraHeaders: setup.headers, key: setup.key)
        setup.expectedKey = request.key
        phase = .httpHead
        madeExtras.http = HTTPHeadParser(kind: .response, limits: loop.configuration.http)
        enqueue(SharedBytes.copy(request.bytes), bounded: false, countFrame: false)
    }

    private func clientGotResponse(_ head: HTTPHead, remainder: [UInt8]) {
        guard let setup = extras?.client else { return }
        switch Handshake.checkResponse(head, key: setup.expectedKey, offeredDeflate: setup.offerDeflate,
                                       offeredSubprotocols: setup.subprotocols) {
        case .failure(let e):
            failClient(e.message)
        case .success(let accepted):
            extras?.client = nil
            dropEmptyExtras()
            subprotocol = accepted.subprotocol
            startWebSocket(deflate: accepted.deflate, configuration: setup.webSocket, minimumCompressed: setup.minimumCompressed)
            handler = setup.makeHandler(self)
            setup.completion(.success(self))
            if !remainder.isEmpty { remainder.withUnsafeBytes { received($0) } }
        }
    }

    private func failClient(_ why: String) {
        guard let setup = extras?.client else { return }
        extras?.client = nil
        setup.completion(.failure(TransportError.connect(why)))
        closeNow(code: .abnormal, reason: why)
    }
}

/// Everything a client connection needs before its handshake completes (kept in the connection's
/// `Extras` until then).
final class ClientSetup {
    var hostHeader: String
    var path: String
    var serverName: String?
    var subprotocols: [String]
    var headers: [(String, String)]
    var offerDeflate: Bool
    var minimumCompressed: Int
    var webSocket: WebSocketStateMachine.Configuration
    var handshakeTimeoutNanos: UInt64
    var key: [UInt8]
    var expectedKey = ""
    var makeHandler: (WebSocketConnection) -> any WebSocketHandler
    var completion: (Result<WebSocketConnection, TransportError>) -> Void

    init(hostHeader: String, path: String, serverName: String?, subprotocols: [String], headers: [(String, String)],
         offerDeflate: Bool, minimumCompressed: Int, webSocket: WebSocketStateMachine.Configuration,
         handshakeTimeoutNanos: UInt64, key: [UInt8], makeHandler: @escaping (WebSocketConnection) -> any WebSocketHandler,
         completion: @escaping (Result<WebSocketConnection, TransportError>) -> Void) {
        self.hostHeader = hostHeader
        self.path = path
        self.serverName = serverName
        self.subprotocols = subprotocols
        self.headers = headers
        self.offerDeflate = offerDeflate
        self.minimumCompressed = minimumCompressed
        self.webSocket = webSocket
        self.handshakeTimeoutNanos = handshakeTimeoutNanos
        self.key = key
        self.makeHandler = makeHandler
        self.completion = completion
    }
}
