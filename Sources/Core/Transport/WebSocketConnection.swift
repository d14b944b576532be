import WebSocket

/// A WebSocket, server or client side: frames in through its state machine, messages to its
/// handler, messages out (encoded once per push, compressed per the handshake). It takes its
/// socket over from the `HTTPConnection` or `ClientUpgrade` that negotiated the upgrade.
/// Confined to its loop's thread; use `handle` to reach it from elsewhere.
public final class WebSocketConnection: SocketConnection {
    /// Messages of at least this many bytes go compressed (the endpoint's policy); `Int32.max`
    /// when the handshake agreed no compression, so a push checks one number, not the setup.
    @exclusivity(unchecked) private var compressFrom: Int32
    /// A close frame is in the queue: nothing may follow it. (Replies to messages that arrived
    /// before a protocol error still go out first, in order.)
    @exclusivity(unchecked) private var closeQueued = false
    /// Frames in, actions out: made at the upgrade, so never missing.
    @exclusivity(unchecked) private var machine: WebSocketStateMachine
    /// Hears messages and the close (the application's per-connection state: no other slot is
    /// kept for it); nil once it has been told of the close. Loop thread only.
    @exclusivity(unchecked) public private(set) var handler: (any WebSocketHandler)?
    /// This connection's own compressor, made on first use and only when its compression keeps
    /// context between messages (it costs about 256 KiB).
    private var ownDeflater: Deflater?

    /// Takes over `previous`'s socket once the upgrade is agreed; `start` then installs the handler.
    init(upgrading previous: SocketConnection, subprotocol: String?, deflate: PerMessageDeflate.Parameters?,
         configuration: WebSocketStateMachine.Configuration, minimumCompressed: Int) {
        let loop = previous.loop
        let isClient = previous.isClient
        compressFrom = deflate == nil ? .max : Int32(clamping: minimumCompressed)
        var inflater: Inflater?
        if let d = deflate {
            // Inbound: the peer's compressor resets per message → the loop's shared inflater will do.
            let peerResets = isClient ? d.serverNoContextTakeover : d.clientNoContextTakeover
            inflater = peerResets ? loop.sharedInflater : Inflater(noContextTakeover: false)
        }
        machine = WebSocketStateMachine(setup: loop.webSocketSetup(role: isClient ? .client : .server, configuration: configuration,
                                                                   deflate: deflate, subprotocol: subprotocol),
                                        inflater: inflater, now: loop.now,
                                        maskSeed: UInt64(truncatingIfNeeded: loop.now) ^ UInt64(previous.fd) << 32)
        super.init(takingOver: previous, kind: .webSocket)
    }

    /// Installs the handler, runs `ready` (a client's completion), then reads what followed the
    /// upgrade: `remainder`, and on TLS what the session already holds.
    func start(handler: any WebSocketHandler, remainder: [UInt8], ready: () -> Void = {}) {
        self.handler = handler
        ready()
        if stage.isOpen, !remainder.isEmpty {
            var bytes = remainder
            bytes.withUnsafeMutableBytes { received($0) }
        }
        if tls != nil { driveTLS() }
        if dirty { flush() }
    }

    /// The negotiated permessage-deflate parameters.
    public var compression: PerMessageDeflate.Parameters? { machine.deflate }

    /// The subprotocol agreed in the handshake.
    public var subprotocol: String? { machine.setup.subprotocol }

    /// Largest message the peer may send now (`WebSocketStateMachine.maxMessageSize`): lowered
    /// for a while, never raised past the endpoint's limit. Loop thread only; from elsewhere,
    /// `ConnectionHandle.setMaxMessageSize`.
    public var maxMessageSize: Int {
        get { machine.maxMessageSize }
        set { machine.maxMessageSize = newValue }
    }

    private func contextDeflater(_ d: PerMessageDeflate.Parameters) -> Deflater? {
        // Only a side that keeps its context between messages needs a compressor of its own.
        guard !(isClient ? d.clientNoContextTakeover : d.serverNoContextTakeover) else { return nil }
        if let own = ownDeflater { return own }
        let bits = isClient ? (d.clientMaxWindowBits ?? 15) : d.serverMaxWindowBits
        let pool = loop.shared.deflaters
        let made = Deflater(level: pool.level, windowBits: bits, memoryLevel: pool.memoryLevel, noContextTakeover: false)
        ownDeflater = made
        return made
    }

    // MARK: Input

    override func received(_ bytes: UnsafeMutableRawBufferPointer) {
        // Empty until a frame needs an action (a pong, a close): a read of messages allocates none.
        var actions: [WebSocketStateMachine.Action] = []
        // A frame at a time, its actions and its message handled before the next is parsed: the
        // machine is not in the middle of a change while a handler runs (a handler may close).
        // The lent payload lives in the loop's read buffer, which nothing reads into meanwhile.
        var reader = machine.startReading(bytes, now: loop.now)
        reading: while true {
            let step = machine.next(&reader, into: &actions)
            if !actions.isEmpty { perform(&actions) }
            switch step {
            case .message(let kind, let payload):
                loop.stats.messagesIn += 1
                guard let handler else { continue }
                switch payload {
                case .lent(let bytes): handler.onMessage(kind, bytes: bytes, connection: self)
                case .owned(let data): handler.onMessage(Message(kind: kind, data: data), connection: self)
                }
            case .frame: continue
            case .end: break reading
            }
        }
        machine.finishReading(reader)
        loop.stats.framesIn += Int(machine.framesReceived)
        machine.framesReceived = 0
    }

    override func tickOpen(now: UInt64) {
        var actions: [WebSocketStateMachine.Action] = []
        machine.tick(now: now, into: &actions)
        if !actions.isEmpty { perform(&actions) }
    }

    private func perform(_ actions: inout [WebSocketStateMachine.Action]) {
        for action in actions {
            switch action {
            case .deliver(let message):
                // Only `receive` (tests, tools) makes these; `next` lends its messages instead.
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
                beginClosing(code: code, reason: reason, timeoutNanos: machine.configuration.closeTimeoutNanos)
            }
        }
        actions.removeAll(keepingCapacity: true)
    }

    // MARK: Output

    /// Sends a message encoded once for many receivers. Loop thread only.
    public func send(_ message: OutboundMessage) {
        guard stage.isOpen, !closeQueued else { return }
        if isClient {
            return message.payload.withUnsafeBytes { sendFrame(message.kind, payload: $0) }
        }
        guard message.payload.count >= Int(compressFrom), let d = machine.deflate else {
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
        guard stage.isOpen, !closeQueued else { return }
        let mask = isClient ? machine.nextMaskKey() : nil
        var frame: SharedBytes
        if payload.count >= Int(compressFrom), let d = machine.deflate, !(isClient && (d.clientMaxWindowBits ?? 15) < 9) {
            let body: [UInt8]
            if let own = contextDeflater(d) {
                body = own.compress(payload)
            } else {
                let bits = isClient ? (d.clientMaxWindowBits ?? 15) : d.serverMaxWindowBits
                body = loop.shared.deflaters.withDeflater(windowBits: bits) { $0.compress(payload) }
            }
            frame = body.withUnsafeBytes { FrameEncoder.sharedFrame(opcode: kind.opcode, payload: $0, rsv1: true, maskKey: mask) }
        } else {
            let count = FrameEncoder.headerLength(payload: payload.count, masked: mask != nil) + payload.count
            if cork(count: count, { FrameEncoder.write(into: $0, opcode: kind.opcode, payload: payload, maskKey: mask) }) {
                loop.stats.framesOut += 1
                loop.stats.messagesOut += 1
                return
            }
            frame = FrameEncoder.sharedFrame(opcode: kind.opcode, payload: payload, maskKey: mask)
        }
        enqueue(frame, bounded: true, message: true)
    }

    /// Writes bytes exactly as given, outside any framing (for tests of how peers treat bad input).
    public func writeRaw(_ bytes: [UInt8]) {
        guard stage.isOpen else { return }
        enqueue(SharedBytes.copy(bytes), bounded: false)
    }

    /// Starts the close handshake (the connection closes when the peer answers or after the close timeout).
    public func close(code: CloseCode = .normal, reason: String = "") {
        guard stage.isOpen, let frame = machine.close(code: code, reason: reason, now: loop.now) else { return }
        closeQueued = true
        enqueue(SharedBytes.copy(frame), bounded: false)
    }

    /// The client cannot keep up: drop what has not started going out, say 4001, and close.
    override func outboundOverflow() {
        loop.shared.metrics.slowConsumers.increment()
        // TLS records are numbered: dropping ciphertext would corrupt the stream, so only plain text drops.
        if tls == nil { queue.dropUnstarted() }
        if let frame = machine.close(code: .slowConsumer, reason: "slow consumer", now: loop.now), !closeQueued {
            closeQueued = true
            enqueue(SharedBytes.copy(frame), bounded: false)
        }
        beginClosing(code: .slowConsumer, reason: "slow consumer", timeoutNanos: machine.configuration.closeTimeoutNanos)
    }

    /// Drops the TCP connection without a close handshake, as a lost network would (the load
    /// harness's reconnect storms); the handler sees 1006.
    public func drop() { closeNow(code: .abnormal, reason: "dropped") }

    override func closed(code: CloseCode, reason: String) {
        if let h = handler {
            handler = nil
            loop.shared.metrics.closedWebSocket()
            loop.shared.metrics.closed(code)
            h.onClose(code: code, reason: reason, connection: self)
        }
    }
}
