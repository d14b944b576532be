import CLinux
import WebSocket
#if canImport(Glibc)
import Glibc
#endif

/// One socket of a loop, whatever speaks over it: reading, TLS, the outbound queue, and closing
/// (our last bytes written, our side shut down, the peer's FIN awaited). What speaks over it is a
/// subclass, one per stage of a connection's life:
/// - `HTTPConnection`: a server socket until it upgrades (HTTP/1.1 requests, keep-alive, bodies);
/// - `ClientUpgrade`: a client socket until its upgrade is answered (connect, TLS, the request);
/// - `WebSocketConnection`: the WebSocket either of them becomes, which takes over the socket.
/// Confined to its loop's thread; `handle` reaches it from elsewhere.
public class SocketConnection {
    /// Which subclass this is: the loop's dispatch reads a byte, not the type.
    enum Kind: UInt8 {
        case http, client, webSocket
    }

    /// Where the socket is in its closing, whatever speaks over it (eight bytes: what closing
    /// needs is out of line, made when it begins).
    enum Stage {
        /// Input is read and handed to `received`.
        case open
        /// Writing the last bytes (a close frame or an HTTP answer), then shutting our side down.
        case closing(Closing)
        /// All written and our side shut down; input is read and discarded until the peer closes
        /// (closing with unread input would reset the connection and lose our last bytes).
        case lingering(Closing)
        /// Closed and forgotten by the loop.
        case closed

        var isOpen: Bool { if case .open = self { true } else { false } }
        var isClosed: Bool { if case .closed = self { true } else { false } }
    }

    /// Why a socket is closing (what `closeNow` will report) and until when it may take.
    final class Closing {
        let code: CloseCode
        let reason: String
        /// When to stop waiting for the queue to drain or the peer's FIN, in the loop's clock.
        var deadline: UInt64
        init(code: CloseCode, reason: String, deadline: UInt64) {
            self.code = code
            self.reason = reason
            self.deadline = deadline
        }
    }

    // Loop-confined: see `EventLoop` on why the hot properties skip the runtime exclusivity check.
    /// Strong on purpose: the loop holds its open connections and each holds its loop, a cycle that
    /// ends when the loop forgets a closed connection. Reading a strong `let` needs no reference
    /// counting; an unowned one is retained and released around every use (every push).
    let loop: EventLoop
    let fd: Int32
    let generation: UInt32
    let kind: Kind
    /// We opened it (a client socket, at any stage): no connection limit to give back.
    let isClient: Bool
    @exclusivity(unchecked) var stage = Stage.open
    /// Bytes were queued since the last flush (the loop's `dirty` list has the descriptor).
    @exclusivity(unchecked) var dirty = false
    /// The loop watches for writability (the kernel's buffer was full).
    @exclusivity(unchecked) var epollOut = false
    /// Input is no longer watched (the peer sent EOF while we still write).
    @exclusivity(unchecked) var outputOnly = false
    /// Input is not read for now (a body's handler is catching up, or an answer is awaited).
    @exclusivity(unchecked) var readPaused = false
    @exclusivity(unchecked) var tls: TLSSession?
    @exclusivity(unchecked) var queue = OutboundQueue()
    /// The peer's IP address.
    public let remoteAddress: String

    init(loop: EventLoop, fd: Int32, generation: UInt32, kind: Kind, isClient: Bool, remoteAddress: String, tls: TLSSession?) {
        self.loop = loop
        self.fd = fd
        self.generation = generation
        self.kind = kind
        self.isClient = isClient
        self.remoteAddress = remoteAddress
        self.tls = tls
    }

    /// Takes over `previous`'s socket (an upgrade): its TLS session, queue and watch state. The
    /// previous owner is left closed without closing the descriptor, and must then be replaced in
    /// the loop by this one (`EventLoop.replace`).
    init(takingOver previous: SocketConnection, kind: Kind) {
        loop = previous.loop
        fd = previous.fd
        generation = previous.generation
        self.kind = kind
        isClient = previous.isClient
        remoteAddress = previous.remoteAddress
        tls = previous.tls
        swap(&queue, &previous.queue)
        dirty = previous.dirty
        // Upgraded while its events are handled: `events` ends on the previous object and
        // flushes nothing, so this one goes on the loop's list.
        if dirty && loop.serving == fd { loop.dirty.append(fd) }
        epollOut = previous.epollOut
        outputOnly = previous.outputOnly
        readPaused = previous.readPaused
        previous.tls = nil
        previous.dirty = false
        previous.stage = .closed
    }

    /// A thread-safe reference to this connection.
    public var handle: ConnectionHandle { ConnectionHandle(loop: loop, fd: fd, generation: generation) }

    /// Whether the connection runs over TLS.
    public var isSecure: Bool { tls != nil }

    // MARK: What a stage says

    /// Plaintext from the peer, while the stage is `.open` (the loop's buffer: a stage may
    /// change it in place, as a WebSocket unmasks its payloads).
    func received(_ bytes: UnsafeMutableRawBufferPointer) {}

    /// The TLS handshake has just completed.
    func tlsReady() {}

    /// The TLS handshake failed: answer nothing more and close.
    func tlsFailed(_ why: String) {
        beginClosing(code: .abnormal, reason: "TLS handshake failed", timeoutNanos: Self.closeTimeoutNanos)
    }

    /// The backlog passed `maxOutboundBytes`.
    func outboundOverflow() {}

    /// The stage's own timers while the socket is open.
    func tickOpen(now: UInt64) {}

    /// The socket is closed: tell whoever waits on this stage.
    func closed(code: CloseCode, reason: String) {}

    /// How long closing may take when the stage has no timeout of its own.
    static let closeTimeoutNanos: UInt64 = 2_000_000_000

    // MARK: Events from the loop

    /// Handles what epoll reported, then writes what that produced: now, not after the whole
    /// batch, so the peer (often on the other core) can start on it while the loop goes on.
    @inline(__always)
    final func events(_ mask: UInt32) {
        loop.serving = fd
        if mask & UInt32(CLINUX_EPOLLOUT) != 0 { writable() }
        if mask & UInt32(CLINUX_EPOLLIN | CLINUX_EPOLLHUP | CLINUX_EPOLLERR | CLINUX_EPOLLRDHUP) != 0, !stage.isClosed {
            readable()
        }
        loop.serving = -1
        if dirty { flush() }
    }

    func readable() {
        let n = clinux_recv(fd, loop.readBuffer.baseAddress, loop.readBuffer.count)
        if n <= 0 {
            if n < 0 && (clinux_errno() == EAGAIN || clinux_errno() == EWOULDBLOCK) { return }
            return peerClosed()
        }
        loop.stats.bytesIn += n
        if case .lingering = stage { return } // discarded: we are only waiting for the peer's FIN
        let bytes = UnsafeMutableRawBufferPointer(rebasing: loop.readBuffer[0..<n])
        if let tls {
            tls.feedCiphertext(UnsafeRawBufferPointer(bytes))
            driveTLS()
        } else if stage.isOpen {
            received(bytes)
        }
    }

    func writable() { flush() }

    private final func peerClosed() {
        switch stage {
        case .closing: finishAfterPeerEOF()
        case .lingering(let c): closeNow(code: c.code, reason: c.reason)
        case .open, .closed: closeNow(code: .abnormal, reason: "connection dropped")
        }
    }

    /// The peer stopped sending while our last bytes are still queued: write them before closing
    /// (stop watching input, which would only report EOF again), or give up at the deadline.
    private final func finishAfterPeerEOF() {
        flush()
        switch stage {
        case .closing(let c), .lingering(let c):
            stage = .lingering(c)
            loop.watchOutputOnly(self)
        case .open, .closed:
            return
        }
    }

    final func tick(now: UInt64) {
        tls?.releaseIdleBuffers()
        queue.releaseIfIdle()
        switch stage {
        case .open: tickOpen(now: now)
        case .closing(let c), .lingering(let c): if now >= c.deadline { closeNow(code: c.code, reason: c.reason) }
        case .closed: break
        }
    }

    // MARK: TLS

    /// Advances the handshake, then decrypts and hands on what has arrived (while input is
    /// wanted: a paused connection leaves it in the session until it resumes).
    final func driveTLS() {
        guard let tls else { return }
        if !tls.handshakeDone {
            switch tls.handshake() {
            case .wantMore:
                return flushTLSOutput()
            case .failed(let why):
                loop.shared.metrics.tlsHandshake("failed")
                loop.shared.metrics.handshakeFailed("tls")
                flushTLSOutput()
                return tlsFailed(why)
            case .closed:
                return closeNow(code: .abnormal, reason: "TLS closed during handshake")
            case .ready:
                loop.shared.metrics.tlsHandshake("ok")
                flushTLSOutput()
                tlsReady()
            }
        }
        // `self.tls`, not the local: an upgrade in `received` hands the session to the WebSocket,
        // which then reads the rest itself.
        while !stage.isClosed && !readPaused, let session = self.tls, session.hasPendingInput {
            guard let n = session.readPlaintext(into: loop.plainBuffer) else {
                flushTLSOutput()
                if case .closing = stage { return finishAfterPeerEOF() }
                return closeNow(code: .abnormal, reason: "TLS closed or failed")
            }
            if n == 0 { break }
            // While closing, input is read (a close_notify, the peer's close frame) and dropped.
            if stage.isOpen { received(UnsafeMutableRawBufferPointer(rebasing: loop.plainBuffer[0..<n])) }
        }
        flushTLSOutput()
    }

    final func flushTLSOutput() {
        if let chunk = tls?.takeCiphertext() {
            queue.append(chunk)
            loop.markDirty(self)
        }
    }

    // MARK: Output

    /// Queues bytes (encrypted first on TLS); `bounded` ones count against `maxOutboundBytes`.
    final func enqueue(_ bytes: SharedBytes, bounded: Bool, countFrame: Bool = true, message: Bool = false) {
        spillCork()
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
        if bounded && queue.backlogBytes > loop.configuration.maxOutboundBytes { outboundOverflow() }
    }

    final func flush() {
        dirty = false
        guard !stage.isClosed else { return }
        var written = 0
        if loop.corkFD == fd, !writeCork(written: &written) { return closeNow(code: .abnormal, reason: "write failed") }
        let result = queue.write(to: fd, iovecs: loop.iovecs, written: &written)
        loop.stats.bytesOut += written
        switch result {
        case .drained:
            loop.setWriteInterest(self, false)
            switch stage {
            case .closing(let c): linger(c)
            case .lingering(let c) where outputOnly: closeNow(code: c.code, reason: c.reason)
            case .open, .lingering, .closed: break
            }
        case .blocked:
            loop.setWriteInterest(self, true)
        case .failed:
            closeNow(code: .abnormal, reason: "write failed")
        }
    }

    // MARK: Closing

    /// Writes what is queued, then closes (at the latest after `timeoutNanos`) reporting `code`
    /// and `reason`.
    final func beginClosing(code: CloseCode, reason: String, timeoutNanos: UInt64) {
        guard stage.isOpen else { return }
        stage = .closing(Closing(code: code, reason: reason, deadline: loop.now + timeoutNanos))
        if let tls {
            tls.shutdown()
            flushTLSOutput()
        }
        loop.markDirty(self)
    }

    /// Everything is written: send FIN and wait (briefly) for the peer's.
    private final func linger(_ closing: Closing) {
        stage = .lingering(closing)
        _ = clinux_shutdown_write(fd)
        closing.deadline = min(closing.deadline, loop.now + Self.closeTimeoutNanos)
    }

    /// Ends the connection at once (shutdown deadline): one that was closing keeps its close code.
    final func abort(reason: String) {
        switch stage {
        case .closing(let c), .lingering(let c): closeNow(code: c.code, reason: c.reason)
        case .open, .closed: closeNow(code: .goingAway, reason: reason)
        }
    }

    /// Closes the socket now and tells the stage (`closed`).
    final func closeNow(code: CloseCode, reason: String) {
        guard !stage.isClosed else { return }
        stage = .closed
        releaseCork()
        loop.forget(self)
        _ = clinux_close(fd)
        if !isClient { loop.shared.limiter.release(remoteAddress) }
        closed(code: code, reason: reason)
        queue = OutboundQueue()
        tls = nil
    }
}
