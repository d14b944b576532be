import CHubbubZlib

/// Raw-deflate compression of whole messages for permessage-deflate (RFC 7692 §7.2.1).
/// Not thread-safe: one owner at a time (a connection, an event loop, or a pool checkout).
public final class Deflater {
    private let stream: UnsafeMutablePointer<z_stream>
    public let windowBits: Int
    public let noContextTakeover: Bool

    /// - Parameters:
    ///   - level: zlib compression level (1 fastest … 9 smallest).
    ///   - windowBits: LZ77 window, 9–15 (zlib cannot produce 8-bit windows for raw deflate).
    ///   - memoryLevel: zlib memLevel 1–9 (memory for the compressor's state).
    ///   - noContextTakeover: start every message with an empty window.
    public init(level: Int = 6, windowBits: Int = 15, memoryLevel: Int = 8, noContextTakeover: Bool) {
        self.windowBits = max(9, min(15, windowBits))
        self.noContextTakeover = noContextTakeover
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = hubbub_deflateInit2(stream, Int32(level), -Int32(self.windowBits), Int32(max(1, min(9, memoryLevel))))
        precondition(rc == Z_OK, "deflateInit2 failed: \(rc)")
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// Compresses one message; the result has the trailing 00 00 FF FF removed, as RFC 7692 requires.
    public func compress(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        if noContextTakeover { deflateReset(stream) }
        var out = [UInt8]()
        out.reserveCapacity(Int(deflateBound(stream, UInt(input.count))) + 16)
        var chunk = [UInt8](repeating: 0, count: max(256, min(65536, input.count / 2 + 64)))
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        repeat {
            chunk.withUnsafeMutableBufferPointer { c in
                stream.pointee.next_out = c.baseAddress
                stream.pointee.avail_out = uInt(c.count)
                _ = deflate(stream, Z_SYNC_FLUSH)
                out.append(contentsOf: c[0..<(c.count - Int(stream.pointee.avail_out))])
            }
        } while stream.pointee.avail_out == 0
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        if out.count >= 4 && out[out.count - 4] == 0 && out[out.count - 3] == 0 && out[out.count - 2] == 0xFF && out[out.count - 1] == 0xFF {
            out.removeLast(4)
        }
        if out.isEmpty { out = [0x00] } // an empty stored block, for an empty message
        return out
    }

    public func compress(_ input: [UInt8]) -> [UInt8] { input.withUnsafeBytes { compress($0) } }
}

/// Raw-inflate of whole messages for permessage-deflate, with a cap on the inflated size so a
/// deflate bomb fails with 1009 instead of exhausting memory.
public final class Inflater {
    private let stream: UnsafeMutablePointer<z_stream>
    public let noContextTakeover: Bool
    private var scratch = [UInt8](repeating: 0, count: 16384)

    /// Always inflates with a 15-bit window: a larger window reads every stream a smaller one wrote.
    public init(noContextTakeover: Bool) {
        self.noContextTakeover = noContextTakeover
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = hubbub_inflateInit2(stream, -15)
        precondition(rc == Z_OK, "inflateInit2 failed: \(rc)")
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Inflates one message's compressed bytes (tail 00 00 FF FF added here).
    /// Throws 1009 past `limit` inflated bytes and 1007 on corrupt data.
    public func decompress(_ input: [UInt8], limit: Int) throws(WebSocketError) -> [UInt8] {
        if noContextTakeover { inflateReset(stream) }
        var out = [UInt8]()
        out.reserveCapacity(min(limit, max(input.count * 3, 256)))
        try feed(input, into: &out, limit: limit)
        try feed([0x00, 0x00, 0xFF, 0xFF], into: &out, limit: limit)
        return out
    }

    private func feed(_ input: [UInt8], into out: inout [UInt8], limit: Int) throws(WebSocketError) {
        var failure: WebSocketError?
        input.withUnsafeBytes { inp in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: inp.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(inp.count)
            scratch.withUnsafeMutableBufferPointer { c in
                while true {
                    stream.pointee.next_out = c.baseAddress
                    stream.pointee.avail_out = uInt(c.count)
                    let rc = inflate(stream, Z_SYNC_FLUSH)
                    let produced = c.count - Int(stream.pointee.avail_out)
                    if out.count + produced > limit {
                        failure = WebSocketError(.messageTooBig, "inflated message over \(limit) bytes")
                        return
                    }
                    out.append(contentsOf: c[0..<produced])
                    if rc == Z_STREAM_END {
                        // A final block: the next message must start a fresh stream.
                        inflateReset(stream)
                        if stream.pointee.avail_in == 0 { return }
                        continue
                    }
                    if rc == Z_BUF_ERROR || (rc == Z_OK && stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0) { return }
                    if rc != Z_OK {
                        failure = WebSocketError(.invalidPayload, "corrupt deflate data")
                        return
                    }
                }
            }
        }
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        if let failure { throw failure }
    }
}
