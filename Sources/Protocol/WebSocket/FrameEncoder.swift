/// Builds frames for the wire; pure.
public enum FrameEncoder {
    /// Header length for a payload of `length` bytes, with or without a mask.
    @inlinable
    public static func headerLength(payload length: Int, masked: Bool) -> Int {
        (length < 126 ? 2 : length <= 0xFFFF ? 4 : 10) + (masked ? 4 : 0)
    }

    /// Writes a header into `out` (which must hold `headerLength` bytes); returns bytes written.
    @inlinable
    public static func writeHeader(into out: UnsafeMutableRawBufferPointer, opcode: Opcode, fin: Bool = true,
                                   rsv1: Bool = false, length: Int, maskKey: UInt32?) -> Int {
        out[0] = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        var offset: Int
        if length < 126 {
            out[1] = maskBit | UInt8(length)
            offset = 2
        } else if length <= 0xFFFF {
            out[1] = maskBit | 126
            out[2] = UInt8(length >> 8)
            out[3] = UInt8(length & 0xFF)
            offset = 4
        } else {
            out[1] = maskBit | 127
            for i in 0..<8 { out[2 + i] = UInt8(truncatingIfNeeded: UInt64(length) >> (56 - 8 * UInt64(i))) }
            offset = 10
        }
        if let key = maskKey {
            out.storeBytes(of: key, toByteOffset: offset, as: UInt32.self)
            offset += 4
        }
        return offset
    }

    /// Writes header and payload (masked with `maskKey` when given) into `raw`, which holds exactly
    /// `headerLength + payload.count` bytes.
    public static func write(into raw: UnsafeMutableRawBufferPointer, opcode: Opcode, payload: UnsafeRawBufferPointer, fin: Bool = true,
                             rsv1: Bool = false, maskKey: UInt32? = nil) {
        let written = writeHeader(into: raw, opcode: opcode, fin: fin, rsv1: rsv1, length: payload.count, maskKey: maskKey)
        let body = UnsafeMutableRawBufferPointer(rebasing: raw[written..<(written + payload.count)])
        if let key = maskKey {
            Masking.apply(key: key, from: payload, to: body)
        } else if payload.count > 0 {
            body.copyMemory(from: payload)
        }
    }

    /// A complete frame: header then payload (masked with `maskKey` when given).
    public static func frame(opcode: Opcode, payload: UnsafeRawBufferPointer, fin: Bool = true, rsv1: Bool = false,
                             maskKey: UInt32? = nil) -> [UInt8] {
        let total = headerLength(payload: payload.count, masked: maskKey != nil) + payload.count
        return [UInt8](unsafeUninitializedCapacity: total) { buffer, count in
            write(into: UnsafeMutableRawBufferPointer(buffer), opcode: opcode, payload: payload, fin: fin, rsv1: rsv1, maskKey: maskKey)
            count = total
        }
    }

    /// A complete frame in one stable allocation, ready to queue for `writev`.
    public static func sharedFrame(opcode: Opcode, payload: UnsafeRawBufferPointer, fin: Bool = true, rsv1: Bool = false,
                                   maskKey: UInt32? = nil) -> SharedBytes {
        let total = headerLength(payload: payload.count, masked: maskKey != nil) + payload.count
        return SharedBytes.create(count: total) { raw in
            write(into: raw, opcode: opcode, payload: payload, fin: fin, rsv1: rsv1, maskKey: maskKey)
        }
    }

    /// A complete frame from an array payload.
    public static func frame(opcode: Opcode, payload: [UInt8], fin: Bool = true, rsv1: Bool = false, maskKey: UInt32? = nil) -> [UInt8] {
        payload.withUnsafeBytes { frame(opcode: opcode, payload: $0, fin: fin, rsv1: rsv1, maskKey: maskKey) }
    }

    /// The payload of a close frame: the code, then the reason cut to fit 125 bytes on a character boundary.
    public static func closePayload(code: CloseCode, reason: String) -> [UInt8] {
        var out: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var budget = 123
        for scalar in reason.unicodeScalars {
            let utf8 = Array(String(scalar).utf8)
            if utf8.count > budget { break }
            out.append(contentsOf: utf8)
            budget -= utf8.count
        }
        return out
    }
}
