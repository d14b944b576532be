// Helpers every fuzz target is built with (scripts/fuzz.sh compiles this file into each binary).

/// Reads control values off the front of the input; the rest is the payload.
struct Input {
    let bytes: [UInt8]
    var position: Int

    init(bytes: [UInt8], position: Int = 0) {
        self.bytes = bytes
        self.position = position
    }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func u16() -> Int { Int(byte()) << 8 | Int(byte()) }

    var rest: [UInt8] { position < bytes.count ? Array(bytes[position...]) : [] }

    mutating func take(_ n: Int) -> [UInt8] {
        let end = min(bytes.count, position + n)
        defer { position = end }
        return position < end ? Array(bytes[position..<end]) : []
    }
}

/// A broken invariant: traps, which libFuzzer reports as a crash and saves the input for.
func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("invariant broken: \(message())", file: file, line: line) }
}

/// Independent UTF-8 oracle: the standard library's strict decoder.
func isValidUTF8(_ bytes: some Sequence<UInt8>) -> Bool {
    var iterator = bytes.makeIterator()
    var decoder = UTF8()
    while true {
        switch decoder.decode(&iterator) {
        case .scalarValue: continue
        case .emptyInput: return true
        case .error: return false
        }
    }
}

/// Cut points (sorted, inside 1..<count) derived from a seed byte: byte by byte, one cut, or
/// many cuts of random sizes, so streaming readers see every kind of split.
func cuts(count: Int, seed: UInt8) -> [Int] {
    guard count > 1 else { return [] }
    switch seed % 4 {
    case 0 where count <= 4096: return Array(1..<count) // byte by byte
    case 1: return [1 + Int(seed) % (count - 1)]
    default:
        var out: [Int] = []
        var s = UInt32(seed) &* 2654435761 | 1
        var at = 0
        while true {
            s ^= s << 13; s ^= s >> 17; s ^= s << 5
            at += 1 + Int(s % 97)
            if at >= count { break }
            out.append(at)
        }
        return out
    }
}

/// `bytes` cut at `cuts(count:seed:)`, as the pieces a streaming reader is fed.
func pieces(_ bytes: [UInt8], seed: UInt8) -> [ArraySlice<UInt8>] {
    var out: [ArraySlice<UInt8>] = []
    var start = 0
    for end in cuts(count: bytes.count, seed: seed) + [bytes.count] {
        out.append(bytes[start..<end])
        start = end
    }
    return out
}
