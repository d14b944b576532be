/// The protocol half of one WebSocket connection, for either role: frames in, actions out.
/// Pure and I/O-free: the transport feeds it bytes and the clock and carries out its actions.
public struct WebSocketStateMachine {
    /// Limits and timers for one connection; every value is configurable.
    public struct Configuration: Sendable, Hashable {
        /// Largest payload of one frame (1009 beyond it).
        public var maxFrameSize: Int
        /// Largest message after reassembly and inflation (1009 beyond it).
        public var maxMessageSize: Int
        /// Send a ping after this long without inbound data (0 disables keepalive pings).
        public var pingIntervalNanos: UInt64
        /// Close a connection whose ping got no pong within this time.
        public var pongTimeoutNanos: UInt64
        /// Wait this long for the peer's close frame after sending ours, then drop the connection.
        public var closeTimeoutNanos: UInt64
        /// Close (1001, "idle timeout") after this long without any inbound data, pongs included (0: never).
        public var idleTimeoutNanos: UInt64

        public init(maxFrameSize: Int = 16 << 20, maxMessageSize: Int = 16 << 20, pingIntervalNanos: UInt64 = 30_000_000_000,
                    pongTimeoutNanos: UInt64 = 10_000_000_000, closeTimeoutNanos: UInt64 = 5_000_000_000,
                    idleTimeoutNanos: UInt64 = 120_000_000_000) {
            self.maxFrameSize = maxFrameSize
            self.maxMessageSize = maxMessageSize
            self.pingIntervalNanos = pingIntervalNanos
            self.pongTimeoutNanos = pongTimeoutNanos
            self.closeTimeoutNanos = closeTimeoutNanos
            self.idleTimeoutNanos = idleTimeoutNanos
        }
    }

    /// Which end of the connection this machine plays.
    public enum Role: Sendable { case server, client }

    /// Where the close handshake stands.
    public enum State: Equatable, Sendable {
        /// Messages flow both ways.
        case open
        /// We sent a close frame and wait for the peer's, until the deadline.
        case closeSent(deadline: UInt64)
        /// Done: the transport has been told to close the connection; input is ignored.
        case closed
    }

    /// What the transport must do.
    public enum Action: Equatable, Sendable {
        /// Hand a complete message to the application.
        case deliver(Message)
        /// Write these frame bytes to the peer (pong, ping, close).
        case write([UInt8])
        /// Close the TCP connection once queued bytes are written; `code` is why (for logs and metrics).
        case closeConnection(CloseCode, String)
    }

    /// What every connection of one kind shares, immutable: its role, its limits and the
    /// compression it negotiated. Open connections outnumber the kinds by far, so a transport keeps
    /// one `Setup` per kind and each connection pays one reference for it.
    public final class Setup: Sendable {
        public let role: Role
        public let configuration: Configuration
        /// The negotiated permessage-deflate parameters, if any.
        public let deflate: PerMessageDeflate.Parameters?
        /// The subprotocol agreed in the handshake, if any (here rather than in each connection:
        /// connections of one kind agree the same one).
        public let subprotocol: String?
        let limits: FrameLimits

        public init(role: Role, configuration: Configuration, deflate: PerMessageDeflate.Parameters? = nil, subprotocol: String? = nil) {
            self.role = role
            self.configuration = configuration
            self.deflate = deflate
            self.subprotocol = subprotocol
            limits = FrameLimits(peer: role == .server ? .client : .server, maxFramePayload: configuration.maxFrameSize,
                                 allowedRSV: deflate == nil ? 0 : 0x40)
        }
    }

    public let setup: Setup
    public var role: Role { setup.role }
    public var configuration: Configuration { setup.configuration }
    /// The negotiated permessage-deflate parameters, if any.
    public var deflate: PerMessageDeflate.Parameters? { setup.deflate }

    // Fields are ordered so the struct packs tightly: it lives inside every open connection.
    private var inflater: Inflater?
    /// Bytes of a frame that has not fully arrived yet (nil: none). Later reads are appended to
    /// it, so a large frame arriving in many reads is copied once, not once per read. A reference,
    /// like `assembling`: a copy of the machine made mid-frame shares it, so drive one copy only.
    private var pending: JoinedBytes?
    /// The fragmented message being reassembled, if any.
    private var assembling: Assembly?
    private var lastInbound: UInt64
    /// When the unanswered ping went out; 0 when none is outstanding (a ping never goes out at
    /// time 0: it waits for a ping interval, which is greater than 0, to pass).
    private var pingSentAt: UInt64 = 0
    private var maskState: UInt64
    public private(set) var state: State = .open
    /// Largest message this connection may send now: the configuration's `maxMessageSize`, or
    /// less for a peer that must send small messages for a while (a client before it logs in).
    /// Beyond it: 1009, refused on the frame's header, before its payload arrives.
    public var maxMessageSize: Int {
        get { lowerMessageLimit == .max ? configuration.maxMessageSize : Int(lowerMessageLimit) }
        set { lowerMessageLimit = newValue < configuration.maxMessageSize ? UInt32(clamping: max(0, newValue)) : .max }
    }
    /// The lowered limit, or `.max` for none: four bytes, not an optional Int's sixteen (with
    /// `framesReceived` it fills eight, and a connection's object stays within a 256-byte block).
    private var lowerMessageLimit: UInt32 = .max
    /// Frames parsed so far (for metrics; the transport reads and resets it).
    public var framesReceived: UInt32 = 0

    /// A message in the middle of reassembly (out of line: most connections never fragment). A
    /// reference: a copy of the machine made mid-message shares it, so drive one copy only.
    final class Assembly {
        let kind: MessageKind
        let compressed: Bool
        var data: [UInt8]
        var utf8 = UTF8Validator()
        init(kind: MessageKind, compressed: Bool, data: [UInt8]) {
            self.kind = kind
            self.compressed = compressed
            self.data = data
        }
    }

    /// - Parameters:
    ///   - inflater: where compressed messages are inflated (shared per event loop when the
    ///     client resets its context per message, else owned by this connection).
    public init(setup: Setup, inflater: Inflater? = nil, now: UInt64 = 0, maskSeed: UInt64 = 0x9E37_79B9_7F4A_7C15) {
        self.setup = setup
        self.inflater = setup.deflate == nil ? nil : inflater
        self.lastInbound = now
        self.maskState = maskSeed | 1
    }

    /// A machine with a setup of its own (tests, tools); a transport shares setups instead.
    public init(role: Role, configuration: Configuration, deflate: PerMessageDeflate.Parameters? = nil,
                inflater: Inflater? = nil, now: UInt64 = 0, maskSeed: UInt64 = 0x9E37_79B9_7F4A_7C15) {
        self.init(setup: Setup(role: role, configuration: configuration, deflate: deflate), inflater: inflater, now: now,
                  maskSeed: maskSeed)
    }

    // MARK: Receiving

    /// One read's bytes, parsed a frame at a time by `next`: the transport's buffer as it is, or
    /// joined to the start of a frame an earlier read left incomplete. Payloads are unmasked in
    /// place and lent from here, so a message costs no copy between the socket and its handler.
    public struct Reader {
        fileprivate let bytes: UnsafeMutableRawBufferPointer
        fileprivate var offset = 0
        /// Owns `bytes` when they had to be joined (nil: they are the transport's).
        fileprivate let joined: JoinedBytes?
    }

    /// The start of a frame kept from earlier reads, with later reads appended (growing by
    /// doubling, so a frame of n bytes costs O(n) copying however many reads it takes).
    final class JoinedBytes {
        private var storage: UnsafeMutableRawBufferPointer
        private(set) var count = 0

        init(_ first: UnsafeRawBufferPointer) {
            storage = .allocate(byteCount: max(first.count, 4096), alignment: 8)
            append(first)
        }

        deinit { storage.deallocate() }

        /// The bytes held, valid until the next `append` or `keep`.
        var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(rebasing: storage[0..<count]) }

        func append(_ more: UnsafeRawBufferPointer) {
            guard more.count > 0 else { return }
            if count + more.count > storage.count {
                let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: max(storage.count * 2, count + more.count), alignment: 8)
                if count > 0 { grown.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[0..<count])) }
                storage.deallocate()
                storage = grown
            }
            UnsafeMutableRawBufferPointer(rebasing: storage[count..<(count + more.count)]).copyMemory(from: more)
            count += more.count
        }

        /// Keeps only the bytes from `offset` on (moved to the front: what is left after whole
        /// frames is at most the start of one).
        func keep(from offset: Int) {
            guard offset > 0 else { return }
            let rest = count - offset
            if rest > 0, let base = storage.baseAddress { base.copyMemory(from: base + offset, byteCount: rest) }
            count = rest
        }
    }

    /// A complete message's bytes: lent from the reader (a single-frame message, the common case)
    /// or owned (reassembled from fragments, or inflated).
    public enum Payload {
        /// Valid until the next call to `next` or `finishReading` with the same reader.
        case lent(UnsafeRawBufferPointer)
        case owned([UInt8])

        public func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            switch self {
            case .lent(let bytes): return try body(bytes)
            case .owned(let array): return try array.withUnsafeBytes(body)
            }
        }

        /// The bytes as an array (a copy when lent).
        public var array: [UInt8] {
            switch self {
            case .lent(let bytes): Array(bytes)
            case .owned(let array): array
            }
        }
    }

    /// What one call to `next` found.
    public enum Step {
        /// A complete message for the application.
        case message(MessageKind, Payload)
        /// A frame the application does not see (a control frame, a fragment): carry out the
        /// actions, then call `next` again.
        case frame
        /// Nothing more in this read: an incomplete frame waits for more bytes, or the
        /// connection is closed.
        case end
    }

    /// Starts reading `bytes` from the peer (its payloads are unmasked in place). Call `next`
    /// until it says `.end`, carrying out the actions after each step, then `finishReading`.
    public mutating func startReading(_ bytes: UnsafeMutableRawBufferPointer, now: UInt64) -> Reader {
        lastInbound = now
        guard let joined = pending else { return Reader(bytes: bytes, joined: nil) }
        joined.append(UnsafeRawBufferPointer(bytes))
        return Reader(bytes: joined.bytes, joined: joined)
    }

    /// Parses the next frame of `reader`; appends what the transport must do (a pong, a close)
    /// to `actions`. One frame gives at most one message, and its actions come before it.
    public mutating func next(_ reader: inout Reader, into actions: inout [Action]) -> Step {
        guard state != .closed, reader.offset < reader.bytes.count else { return .end }
        let rest = UnsafeMutableRawBufferPointer(rebasing: reader.bytes[reader.offset...])
        let header: FrameHeader
        do {
            guard let h = try FrameHeaderParser.parse(UnsafeRawBufferPointer(rest), limits: setup.limits) else { return .end }
            header = h
        } catch {
            fail(error, into: &actions)
            return .end
        }
        if header.opcode == .text || header.opcode == .binary || header.opcode == .continuation {
            // Refuse an oversized message before its payload arrives.
            let sofar = assembling?.data.count ?? 0
            if sofar + header.payloadLength > maxMessageSize {
                fail(WebSocketError(.messageTooBig, "message over \(maxMessageSize) bytes"), into: &actions)
                return .end
            }
        }
        let total = header.headerLength + header.payloadLength
        guard rest.count >= total else { return .end }
        let payload = UnsafeMutableRawBufferPointer(rebasing: rest[header.headerLength..<total])
        if let key = header.maskKey { Masking.apply(key: key, from: UnsafeRawBufferPointer(payload), to: payload) }
        reader.offset += total
        framesReceived += 1
        return handleFrame(header, UnsafeRawBufferPointer(payload), into: &actions)
    }

    /// Ends a read: keeps the start of an incomplete frame for the next one.
    public mutating func finishReading(_ reader: Reader) {
        guard state != .closed, reader.offset < reader.bytes.count else {
            pending = nil
            return
        }
        if let joined = reader.joined {
            joined.keep(from: reader.offset)
            pending = joined
        } else {
            pending = JoinedBytes(UnsafeRawBufferPointer(rebasing: reader.bytes[reader.offset...]))
        }
    }

    /// Feeds bytes from the peer; appends what to do to `actions`, each message as a copy
    /// (tests and tools; the transport reads with `next` and borrows instead).
    public mutating func receive(_ bytes: UnsafeRawBufferPointer, now: UInt64, into actions: inout [Action]) {
        guard state != .closed, bytes.count > 0 else { return }
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
        defer { copy.deallocate() }
        copy.copyMemory(from: bytes)
        var reader = startReading(copy, now: now)
        while true {
            switch next(&reader, into: &actions) {
            case .message(let kind, let payload): actions.append(.deliver(Message(kind: kind, data: payload.array)))
            case .frame: continue
            case .end: return finishReading(reader)
            }
        }
    }

    private mutating func handleFrame(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, into actions: inout [Action]) -> Step {
        switch header.opcode {
        case .ping:
            if case .open = state { actions.append(.write(encodeControl(.pong, Array(payload)))) }
        case .pong:
            pingSentAt = 0
        case .close:
            handleClose(payload, into: &actions)
        case .text, .binary:
            guard assembling == nil else {
                fail(.protocolError("new message before the previous one finished"), into: &actions)
                return .frame
            }
            let kind: MessageKind = header.opcode == .text ? .text : .binary
            if header.fin && !header.rsv1 {
                // The common case: one frame, one message, lent without a copy.
                var utf8 = UTF8Validator()
                if kind == .text && !(utf8.feed(payload) && utf8.isComplete) {
                    fail(WebSocketError(.invalidPayload, "invalid UTF-8 in text message"), into: &actions)
                    return .frame
                }
                return deliver(kind, .lent(payload))
            }
            let assembly = Assembly(kind: kind, compressed: header.rsv1, data: Array(payload))
            if kind == .text && !header.rsv1 && !assembly.utf8.feed(payload) {
                fail(WebSocketError(.invalidPayload, "invalid UTF-8 in text message"), into: &actions)
                return .frame
            }
            assembling = assembly
            if header.fin { return finishMessage(into: &actions) }
        case .continuation:
            guard let assembly = assembling else {
                fail(.protocolError("continuation frame without a message to continue"), into: &actions)
                return .frame
            }
            assembly.data.append(contentsOf: payload)
            if assembly.kind == .text && !assembly.compressed && !assembly.utf8.feed(payload) {
                fail(WebSocketError(.invalidPayload, "invalid UTF-8 in text message"), into: &actions)
                return .frame
            }
            if header.fin { return finishMessage(into: &actions) }
        }
        return .frame
    }

    private mutating func finishMessage(into actions: inout [Action]) -> Step {
        guard let message = assembling else { return .frame }
        assembling = nil
        if message.compressed {
            guard let inflater else {
                fail(.protocolError("compressed message without permessage-deflate"), into: &actions)
                return .frame
            }
            do {
                message.data = try inflater.decompress(message.data, limit: maxMessageSize)
            } catch {
                fail(error, into: &actions)
                return .frame
            }
            if message.kind == .text && !UTF8Validator.isValid(message.data) {
                fail(WebSocketError(.invalidPayload, "invalid UTF-8 in text message"), into: &actions)
                return .frame
            }
        } else if message.kind == .text && !message.utf8.isComplete {
            fail(WebSocketError(.invalidPayload, "text message ends inside a UTF-8 character"), into: &actions)
            return .frame
        }
        return deliver(message.kind, .owned(message.data))
    }

    private func deliver(_ kind: MessageKind, _ payload: Payload) -> Step {
        // After we sent close, the peer's late messages are dropped (RFC 6455 §1.4).
        if case .open = state { return .message(kind, payload) }
        return .frame
    }

    private mutating func handleClose(_ payload: UnsafeRawBufferPointer, into actions: inout [Action]) {
        var code = CloseCode.noStatus
        var reason = ""
        if payload.count == 1 {
            fail(.protocolError("close frame with a 1-byte payload"), into: &actions)
            return
        }
        if payload.count >= 2 {
            code = CloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
            guard code.isValidOnWire else {
                fail(.protocolError("invalid close code \(code.rawValue)"), into: &actions)
                return
            }
            let reasonBytes = Array(payload[2...])
            guard UTF8Validator.isValid(reasonBytes) else {
                fail(WebSocketError(.invalidPayload, "invalid UTF-8 in close reason"), into: &actions)
                return
            }
            reason = String(decoding: reasonBytes, as: UTF8.self)
        }
        switch state {
        case .open:
            // Echo the peer's code (RFC 6455 §5.5.1), then close.
            let reply: [UInt8] = code == .noStatus ? [] : [payload[0], payload[1]]
            actions.append(.write(encodeControl(.close, reply)))
            state = .closed
            actions.append(.closeConnection(code, reason))
        case .closeSent:
            state = .closed
            actions.append(.closeConnection(code, reason))
        case .closed:
            break
        }
    }

    /// Fails the connection: a close frame with the error's code, then close.
    private mutating func fail(_ error: WebSocketError, into actions: inout [Action]) {
        guard state != .closed else { return }
        if case .open = state {
            actions.append(.write(encodeControl(.close, FrameEncoder.closePayload(code: error.code, reason: error.reason))))
        }
        state = .closed
        assembling = nil
        pending = nil
        actions.append(.closeConnection(error.code, error.reason))
    }

    // MARK: Sending

    /// Starts the close handshake: returns the close frame to write (nil when already closing).
    public mutating func close(code: CloseCode, reason: String = "", now: UInt64) -> [UInt8]? {
        guard case .open = state else { return nil }
        state = .closeSent(deadline: now + configuration.closeTimeoutNanos)
        // Keep any message in reassembly: the peer may finish it before it sees our close, and
        // its continuation frames are no protocol error (they are parsed and dropped by deliver).
        return encodeControl(.close, FrameEncoder.closePayload(code: code, reason: reason))
    }

    /// Whether application messages may still be sent.
    public var canSend: Bool { state == .open }

    /// Checks timers; call periodically. Appends a ping to write or a close when one is due.
    public mutating func tick(now: UInt64, into actions: inout [Action]) {
        switch state {
        case .closed:
            return
        case .closeSent(let deadline):
            if now >= deadline {
                state = .closed
                actions.append(.closeConnection(.abnormal, "close handshake timed out"))
            }
        case .open:
            if configuration.idleTimeoutNanos > 0 && now >= lastInbound + configuration.idleTimeoutNanos {
                if let frame = close(code: .goingAway, reason: "idle timeout", now: now) { actions.append(.write(frame)) }
                return
            }
            guard configuration.pingIntervalNanos > 0 else { return }
            if pingSentAt != 0 {
                if now >= pingSentAt + configuration.pongTimeoutNanos {
                    state = .closed
                    actions.append(.closeConnection(.abnormal, "no pong within the timeout"))
                }
            } else if now >= lastInbound + configuration.pingIntervalNanos {
                pingSentAt = now
                actions.append(.write(encodeControl(.ping, [])))
            }
        }
    }

    /// Encodes a control frame, masked when we are the client.
    public mutating func encodeControl(_ opcode: Opcode, _ payload: [UInt8]) -> [UInt8] {
        FrameEncoder.frame(opcode: opcode, payload: payload, maskKey: role == .client ? nextMaskKey() : nil)
    }

    /// A fresh masking key for a client frame (xorshift; keys need to be unpredictable to
    /// intermediaries, not secret).
    public mutating func nextMaskKey() -> UInt32 {
        maskState ^= maskState << 13
        maskState ^= maskState >> 7
        maskState ^= maskState << 17
        return UInt32(truncatingIfNeeded: maskState >> 16)
    }
}
