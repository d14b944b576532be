/// Incremental UTF-8 validation (Björn Höhrmann's DFA): feed bytes in pieces of any size and
/// learn at the first byte that can no longer start or continue a valid sequence. Overlong
/// forms, surrogates (U+D800–U+DFFF) and code points above U+10FFFF are rejected.
public struct UTF8Validator: Sendable {
    /// The DFA state: `accept` between characters, `reject` once invalid, other values mid-character.
    public private(set) var state: UInt8 = UTF8Validator.accept

    static let accept: UInt8 = 0
    static let reject: UInt8 = 12

    public init() {}

    /// True when everything fed so far is valid and no character is cut off.
    public var isComplete: Bool { state == Self.accept }
    /// True once an invalid byte has been seen.
    public var isInvalid: Bool { state == Self.reject }

    /// Feeds `bytes`; returns false as soon as they cannot be valid UTF-8 (fail fast).
    
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var s = state
        // ASCII fast path: 8 bytes at a time while between characters.
        var i = 0
        let n = bytes.count
        guard let base = bytes.baseAddress else { return s != Self.reject }
        while i < n {
            if s == Self.accept {
                while i + 8 <= n {
                    let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    if word & 0x8080_8080_8080_8080 != 0 { break }
                    i += 8
                }
                if i >= n { break }
            }
            let byte = base.load(fromByteOffset: i, as: UInt8.self)
            let type = UTF8Validator.types[Int(byte)]
            s = UTF8Validator.transitions[Int(s) + Int(type)]
            if s == Self.reject {
                state = s
                return false
            }
            i += 1
        }
        state = s
        return true
    }

    /// Feeds an array of bytes.
    
    public mutating func feed(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// Validates a complete byte string.
    public static func isValid(_ bytes: [UInt8]) -> Bool {
        var v = UTF8Validator()
        return v.feed(bytes) && v.isComplete
    }

    /// Starts over for the next message.
    public mutating func reset() { state = Self.accept }

    static let types: [UInt8] = [
        0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
        0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
        0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
        0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
        1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,
        7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7, 7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,
        8,8,2,2,2,2,2,2,2,2,2,2,2,2,2,2, 2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
        10,3,3,3,3,3,3,3,3,3,3,3,3,4,3,3, 11,6,6,6,5,8,8,8,8,8,8,8,8,8,8,8,
    ]

    static let transitions: [UInt8] = [
        0,12,24,36,60,96,84,12,12,12,48,72, 12,12,12,12,12,12,12,12,12,12,12,12,
        12,0,12,12,12,12,12,0,12,0,12,12, 12,24,12,12,12,12,12,24,12,24,12,12,
        12,12,12,12,12,12,12,24,12,12,12,12, 12,24,12,12,12,12,12,12,12,24,12,12,
        12,12,12,12,12,12,12,36,12,36,12,12, 12,36,12,12,12,12,12,36,12,36,12,12,
        12,36,12,12,12,12,12,12,12,12,12,12,
    ]
}
