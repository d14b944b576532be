import Synchronization

/// A message encoded once and shared by every connection it goes to: the plain frame is built
/// at creation; the compressed frame (for connections whose server side resets its context per
/// message) is built at most once per window size, on first use, by whichever thread needs it.
public final class OutboundMessage: Sendable {
    public let kind: MessageKind
    public let payload: [UInt8]
    /// The uncompressed, unmasked server frame.
    public let frame: SharedBytes
    private let compressed = Mutex<[Int: SharedBytes]>([:])

    public init(kind: MessageKind, payload: [UInt8]) {
        self.kind = kind
        self.payload = payload
        self.frame = payload.withUnsafeBytes { FrameEncoder.sharedFrame(opcode: kind.opcode, payload: $0) }
    }

    public convenience init(text: String) { self.init(kind: .text, payload: Array(text.utf8)) }

    /// The RSV1 frame compressed with a fresh context and `windowBits`.
    public func compressedFrame(windowBits: Int, pool: DeflaterPool) -> SharedBytes {
        if let hit = compressed.withLock({ $0[windowBits] }) { return hit }
        let body = pool.withDeflater(windowBits: windowBits) { $0.compress(payload) }
        let built = body.withUnsafeBytes { FrameEncoder.sharedFrame(opcode: kind.opcode, payload: $0, rsv1: true) }
        compressed.withLock { $0[windowBits] = built }
        return built
    }
}

/// Compressors that reset per message, lent out one caller at a time. Compressor state is large
/// (about 256 KiB at memLevel 8), so a few are shared instead of one per connection.
public final class DeflaterPool: Sendable {
    private let idle = Mutex<[Int: [UncheckedDeflater]]>([:])
    public let level: Int
    public let memoryLevel: Int

    struct UncheckedDeflater: @unchecked Sendable { let deflater: Deflater }

    public init(level: Int = 6, memoryLevel: Int = 8) {
        self.level = level
        self.memoryLevel = memoryLevel
    }

    public func withDeflater<T>(windowBits: Int, _ body: (Deflater) -> T) -> T {
        let d = idle.withLock { $0[windowBits]?.popLast() }?.deflater
            ?? Deflater(level: level, windowBits: windowBits, memoryLevel: memoryLevel, noContextTakeover: true)
        defer { idle.withLock { $0[windowBits, default: []].append(UncheckedDeflater(deflater: d)) } }
        return body(d)
    }
}
