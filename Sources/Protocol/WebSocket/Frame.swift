/// The fixed part of a frame (RFC 6455 §5.2): flags, opcode, mask and payload length.
public struct FrameHeader: Equatable, Sendable {
    public var fin: Bool
    /// RSV1 (0x40), RSV2 (0x20), RSV3 (0x10) exactly as on the wire.
    public var rsv: UInt8
    public var opcode: Opcode
    /// The masking key, present on every client-to-server frame.
    public var maskKey: UInt32?
    public var payloadLength: Int
    /// Bytes the header takes on the wire (2 to 14).
    public var headerLength: Int

    @inlinable public var rsv1: Bool { rsv & 0x40 != 0 }

    public init(fin: Bool, rsv: UInt8 = 0, opcode: Opcode, maskKey: UInt32? = nil, payloadLength: Int, headerLength: Int = 0) {
        self.fin = fin
        self.rsv = rsv
        self.opcode = opcode
        self.maskKey = maskKey
        self.payloadLength = payloadLength
        self.headerLength = headerLength
    }
}

/// A complete frame with its payload unmasked.
public struct Frame: Equatable, Sendable {
    public var header: FrameHeader
    public var payload: [UInt8]

    public init(header: FrameHeader, payload: [UInt8]) {
        self.header = header
        self.payload = payload
    }
}

/// What the frame layer accepts; every limit is a parameter.
public struct FrameLimits: Sendable, Equatable {
    /// Which side's frames are parsed: a server requires masked frames, a client refuses them.
    public enum Peer: Sendable { case client, server }
    public var peer: Peer
    /// Largest payload of a single frame (1009 beyond it).
    public var maxFramePayload: Int
    /// RSV bits a negotiated extension gave meaning to (0x40 with permessage-deflate).
    public var allowedRSV: UInt8

    public init(peer: Peer, maxFramePayload: Int, allowedRSV: UInt8 = 0) {
        self.peer = peer
        self.maxFramePayload = maxFramePayload
        self.allowedRSV = allowedRSV
    }
}

/// Parses frame headers; pure and allocation-free.
public enum FrameHeaderParser {
    /// Parses the header at the start of `bytes`: nil when more bytes are needed,
    /// an error when the header breaks the protocol or a limit.
    @inlinable
    public static func parse(_ bytes: UnsafeRawBufferPointer, limits: FrameLimits) throws(WebSocketError) -> FrameHeader? {
        guard bytes.count >= 2 else { return nil }
        let b0 = bytes[0], b1 = bytes[1]
        guard let opcode = Opcode(rawValue: b0 & 0x0F) else {
            throw .protocolError("reserved opcode \(b0 & 0x0F)")
        }
        let fin = b0 & 0x80 != 0
        let rsv = b0 & 0x70
        if rsv & ~limits.allowedRSV != 0 { throw .protocolError("reserved bits set without an extension") }
        if opcode.isControl {
            if !fin { throw .protocolError("fragmented control frame") }
            if rsv != 0 { throw .protocolError("reserved bits on a control frame") }
        } else if opcode == .continuation && rsv != 0 {
            throw .protocolError("reserved bits on a continuation frame")
        }
        let masked = b1 & 0x80 != 0
        switch limits.peer {
        case .client where !masked: throw .protocolError("client frame is not masked")
        case .server where masked: throw .protocolError("server frame is masked")
        default: break
        }
        var length = Int(b1 & 0x7F)
        var offset = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            offset = 4
            if length < 126 { throw .protocolError("payload length not minimally encoded") }
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            var l: UInt64 = 0
            for i in 2..<10 { l = l << 8 | UInt64(bytes[i]) }
            if l & (1 << 63) != 0 { throw .protocolError("payload length has its top bit set") }
            if l <= 0xFFFF { throw .protocolError("payload length not minimally encoded") }
            if l > UInt64(limits.maxFramePayload) { throw WebSocketError(.messageTooBig, "frame over \(limits.maxFramePayload) bytes") }
            length = Int(l)
            offset = 10
        }
        if opcode.isControl && length > 125 { throw .protocolError("control frame over 125 bytes") }
        if length > limits.maxFramePayload { throw WebSocketError(.messageTooBig, "frame over \(limits.maxFramePayload) bytes") }
        var maskKey: UInt32? = nil
        if masked {
            guard bytes.count >= offset + 4 else { return nil }
            maskKey = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            offset += 4
        }
        return FrameHeader(fin: fin, rsv: rsv, opcode: opcode, maskKey: maskKey, payloadLength: length, headerLength: offset)
    }
}

/// XOR masking (RFC 6455 §5.3), eight bytes at a time.
public enum Masking {
    /// Copies `source` into `destination` (same length), applying `key` (as loaded from the wire).
    @inlinable
    public static func apply(key: UInt32, from source: UnsafeRawBufferPointer, to destination: UnsafeMutableRawBufferPointer) {
        let n = source.count
        guard n > 0, let src = source.baseAddress, let dst = destination.baseAddress else { return }
        let key64 = UInt64(key) | UInt64(key) << 32
        var i = 0
        while i + 8 <= n {
            dst.storeBytes(of: src.loadUnaligned(fromByteOffset: i, as: UInt64.self) ^ key64, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        withUnsafeBytes(of: key) { k in
            while i < n {
                dst.storeBytes(of: src.load(fromByteOffset: i, as: UInt8.self) ^ k[i & 3], toByteOffset: i, as: UInt8.self)
                i += 1
            }
        }
    }

    /// Returns `source` with `key` applied.
    @inlinable
    public static func unmask(key: UInt32, _ source: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: source.count) { buffer, count in
            apply(key: key, from: source, to: UnsafeMutableRawBufferPointer(buffer))
            count = source.count
        }
    }
}
