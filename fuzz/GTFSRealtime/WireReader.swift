/// Protobuf's wire format read by hand (protobuf.dev/programming-guides/encoding), independently
/// of SwiftProtobuf: the fields of one message as (number, wire type, value), without nesting.
/// Nil when the bytes are not a sequence of well-formed fields (or use groups, which
/// GTFS-Realtime never does and this reader does not follow).
struct WireField {
    var number: Int
    /// 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit.
    var wireType: Int
    /// Varint (0) or 64/32-bit (1, 5) values; length-delimited (2) bytes.
    var integer: UInt64 = 0
    var bytes: ArraySlice<UInt8> = []
}

func wireFields(_ bytes: ArraySlice<UInt8>) -> [WireField]? {
    var fields: [WireField] = []
    var i = bytes.startIndex
    func varint() -> UInt64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard i < bytes.endIndex else { return nil }
            let b = bytes[i]
            i += 1
            if shift == 63 && b > 1 { return nil } // a tenth byte carries one bit at most
            value |= UInt64(b & 0x7F) << UInt64(shift)
            if b & 0x80 == 0 { return value }
        }
        return nil
    }
    while i < bytes.endIndex {
        guard let key = varint(), key >> 3 >= 1, key >> 3 <= 536_870_911 else { return nil }
        var field = WireField(number: Int(key >> 3), wireType: Int(key & 7))
        switch key & 7 {
        case 0:
            guard let v = varint() else { return nil }
            field.integer = v
        case 1, 5:
            let n = key & 7 == 1 ? 8 : 4
            guard bytes.endIndex - i >= n else { return nil }
            for k in 0..<n { field.integer |= UInt64(bytes[i + k]) << UInt64(8 * k) }
            i += n
        case 2:
            guard let n = varint(), n <= UInt64(bytes.endIndex - i) else { return nil }
            field.bytes = bytes[i..<(i + Int(n))]
            i += Int(n)
        default:
            return nil
        }
        fields.append(field)
    }
    return fields
}
