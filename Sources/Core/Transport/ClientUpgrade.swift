import CLinux
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// A client socket until its upgrade is answered: the TCP connect, the TLS handshake (wss://),
/// the upgrade request and its response. On success a `WebSocketConnection` takes the socket over;
/// either way the completion runs once.
final class ClientUpgrade: SocketConnection {
    /// Where the upgrade is.
    enum State {
        /// The TCP connect is in progress; EPOLLOUT reports how it ended.
        case connecting
        /// The TLS handshake is in progress (wss://).
        case tlsHandshake
        /// The upgrade request is queued; reading the response's head (`expectedKey` is the
        /// `Sec-WebSocket-Accept` it must carry).
        case awaitingResponse(HTTPHeadParser, expectedKey: String)
        /// The completion has run: upgraded, or failed and closed.
        case finished
    }

    private let setup: ClientSetup
    @exclusivity(unchecked) private var state = State.connecting
    /// When the whole upgrade must be done by, in the loop's clock.
    private let deadline: UInt64

    init(loop: EventLoop, fd: Int32, generation: UInt32, host: String, tls: TLSSession?, setup: ClientSetup) {
        self.setup = setup
        deadline = loop.now + setup.handshakeTimeoutNanos
        super.init(loop: loop, fd: fd, generation: generation, kind: .client, isClient: true, remoteAddress: host, tls: tls)
    }

    override func readable() {
        if case .connecting = state { return writable() }
        super.readable()
    }

    override func writable() {
        guard case .connecting = state else { return flush() }
        let err = clinux_socket_error(fd)
        if err != 0 { return fail("TCP connect: \(String(cString: strerror(err)))") }
        loop.setWriteInterest(self, false)
        if tls != nil {
            state = .tlsHandshake
            driveTLS()
        } else {
            sendRequest()
        }
    }

    override func tlsReady() { sendRequest() }

    override func tlsFailed(_ why: String) { fail(why) }

    override func received(_ mutableBytes: UnsafeMutableRawBufferPointer) {
        let bytes = UnsafeRawBufferPointer(mutableBytes)
        // The parser is fed as a copy (its buffer copied once, while the response is awaited):
        // there is one response per client connection.
        guard case .awaitingResponse(var parser, let key) = state else { return }
        switch parser.feed(bytes) {
        case .needMore:
            state = .awaitingResponse(parser, expectedKey: key)
        case .error(let e):
            loop.shared.metrics.handshakeFailed(e.label)
            fail("bad HTTP response: \(e.message)")
        case .head(let head, let remainder):
            gotResponse(head, expectedKey: key, remainder: remainder)
        }
    }

    override func tickOpen(now: UInt64) {
        if case .finished = state { return }
        if now >= deadline {
            loop.shared.metrics.handshakeFailed("timeout")
            fail("handshake timed out")
        }
    }

    override func closed(code: CloseCode, reason: String) {
        if case .finished = state { return }
        state = .finished
        setup.completion(.failure(TransportError.connect("closed: \(reason)")))
    }

    private func sendRequest() {
        let request = Handshake.clientRequest(host: setup.hostHeader, path: setup.path, subprotocols: setup.subprotocols,
                                              offerDeflate: setup.offerDeflate, extraHeaders: setup.headers, key: setup.key)
        state = .awaitingResponse(HTTPHeadParser(kind: .response, limits: loop.configuration.http), expectedKey: request.key)
        enqueue(SharedBytes.copy(request.bytes), bounded: false, countFrame: false)
    }

    private func gotResponse(_ head: HTTPHead, expectedKey: String, remainder: [UInt8]) {
        switch Handshake.checkResponse(head, key: expectedKey, offeredDeflate: setup.offerDeflate,
                                       offeredSubprotocols: setup.subprotocols) {
        case .failure(let e):
            fail(e.message)
        case .success(let accepted):
            state = .finished
            let ws = WebSocketConnection(upgrading: self, subprotocol: accepted.subprotocol, deflate: accepted.deflate,
                                         configuration: setup.webSocket, minimumCompressed: setup.minimumCompressed)
            loop.replace(self, with: ws)
            ws.start(handler: setup.makeHandler(ws), remainder: remainder) {
                self.setup.completion(.success(ws))
            }
        }
    }

    /// Runs the completion with the failure (once) and closes.
    private func fail(_ why: String) {
        if case .finished = state { return }
        state = .finished
        setup.completion(.failure(TransportError.connect(why)))
        closeNow(code: .abnormal, reason: why)
    }
}

/// Everything a client connection needs until its upgrade is answered.
final class ClientSetup {
    let hostHeader: String
    let path: String
    let serverName: String?
    let subprotocols: [String]
    let headers: [(String, String)]
    let offerDeflate: Bool
    let minimumCompressed: Int
    let webSocket: WebSocketStateMachine.Configuration
    let handshakeTimeoutNanos: UInt64
    let key: [UInt8]
    let makeHandler: (WebSocketConnection) -> any WebSocketHandler
    let completion: (Result<WebSocketConnection, TransportError>) -> Void

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
