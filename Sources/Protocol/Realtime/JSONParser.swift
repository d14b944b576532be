/// A strict JSON parser (RFC 8259) over UTF-8 bytes, linear in the input for every shape, with
/// limits on depth, keys per object and values per message, so that no message can exhaust the
/// stack, the memory or the CPU of the node.
///
/// Hand-written rather than Foundation's `JSONSerialization` (which builds bridged `NSDictionary`
/// and `NSArray` values that are then converted again) or `JSONDecoder` (which needs a `Decodable`
/// type per op): parsing straight into `JSON` runs 1–11× Foundation's speed on the same bytes
/// (`hubbub-load measure json`, figures in the README), and the limits are checked as it goes.
public struct JSONParser {
    /// Why the text is not acceptable JSON, with the byte offset.
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        /// A limit of `Limits` was reached (the text may be valid JSON; it is too big to take).
        public var isLimit: Bool
        public init(offset: Int, reason: String, isLimit: Bool = false) {
            self.offset = offset
            self.reason = reason
            self.isLimit = isLimit
        }
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// How much structure one text may hold; beyond any of them the parse fails with `isLimit`.
    public struct Limits: Sendable, Equatable {
        /// Containers inside containers (the top level is depth 0).
        public var maxDepth: Int
        /// Keys in one object.
        public var maxKeysPerObject: Int
        /// Values in the whole text, containers included.
        public var maxValues: Int

        public init(maxDepth: Int = 32, maxKeysPerObject: Int = 1000, maxValues: Int = 100_000) {
            self.maxDepth = maxDepth
            self.maxKeysPerObject = maxKeysPerObject
            self.maxValues = maxValues
        }

        /// For text this system wrote itself (its own rows, another node's link): no limit but depth.
        public static let trusted = Limits(maxDepth: 64, maxKeysPerObject: .max, maxValues: .max)
    }

    /// Objects up to this many keys find a duplicate by comparing with each key before; larger
    /// ones keep a `KeyIndex`, so that a many-keyed object costs linear time, not quadratic.
    private static let linearKeyCheck = 12

    private let bytes: UnsafeBufferPointer<UInt8>
    private let limits: Limits
    private var i = 0
    private var values = 0
    /// Reused for strings with escapes.
    private var scratch: [UInt8] = []

    private init(bytes: UnsafeBufferPointer<UInt8>, limits: Limits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// Parses one complete JSON value (surrounding whitespace allowed).
    public static func parse(_ bytes: [UInt8], limits: Limits = Limits()) throws(Error) -> JSON {
        let result: Result<JSON, Error> = bytes.withUnsafeBufferPointer { buffer in
            var p = JSONParser(bytes: buffer, limits: limits)
            do throws(Error) { return .success(try p.document()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Parses one complete JSON value with the default limits but `maxDepth`.
    public static func parse(_ bytes: [UInt8], maxDepth: Int) throws(Error) -> JSON {
        try parse(bytes, limits: Limits(maxDepth: maxDepth))
    }

    private mutating func document() throws(Error) -> JSON {
        skipSpace()
        let v = try value(depth: 0)
        skipSpace()
        guard i == bytes.count else { throw fail("trailing characters") }
        return v
    }

    @inline(__always)
    private mutating func skipSpace() {
        while i < bytes.count {
            let c = bytes[i]
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            i += 1
        }
    }

    private func fail(_ reason: String) -> Error { Error(offset: i, reason: reason) }

    private mutating func value(depth: Int) throws(Error) -> JSON {
        values += 1
        guard values <= limits.maxValues else {
            throw Error(offset: i, reason: "more than \(limits.maxValues) values", isLimit: true)
        }
        guard i < bytes.count else { throw fail("unexpected end") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return try number()
        }
    }

    private mutating func literal(_ word: StaticString) throws(Error) {
        let start = i
        let count = word.utf8CodeUnitCount
        guard i + count <= bytes.count else { throw Error(offset: start, reason: "expected \(word)") }
        for k in 0..<count where bytes[i + k] != word.utf8Start[k] { throw Error(offset: start, reason: "expected \(word)") }
        i += count
    }

    private mutating func enter(_ depth: Int) throws(Error) {
        guard depth < limits.maxDepth else {
            throw Error(offset: i, reason: "nested deeper than \(limits.maxDepth)", isLimit: true)
        }
        i += 1
    }

    // An object or array reads its first member before it makes its storage: a one-member
    // container (a level of nesting, most ops' arguments) is then one allocation of its exact
    // size, not an empty array grown (measured: nesting 31 levels deep went from 28 to 35 MB/s).

    private mutating func object(depth: Int) throws(Error) -> JSON {
        try enter(depth)
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object([]) }
        var index: KeyIndex?
        let first = try key(after: [], index: &index)
        var pairs = [(first, try value(depth: depth + 1))]
        while true {
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end in object") }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(pairs) }
            guard bytes[i] == UInt8(ascii: ",") else { throw fail("expected ',' or '}'") }
            i += 1
            skipSpace()
            let key = try key(after: pairs, index: &index)
            pairs.append((key, try value(depth: depth + 1)))
        }
    }

    /// A member's key and its colon, refused past `maxKeysPerObject` or when `pairs`, the
    /// members before it, hold the same key; `index` is made once there are many of them.
    private mutating func key(after pairs: [(String, JSON)], index: inout KeyIndex?) throws(Error) -> String {
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
        let keyOffset = i
        let key = try string()
        guard pairs.count < limits.maxKeysPerObject else {
            throw Error(offset: keyOffset, reason: "more than \(limits.maxKeysPerObject) keys in an object", isLimit: true)
        }
        if pairs.count < Self.linearKeyCheck {
            for (k, _) in pairs where k == key { throw Error(offset: keyOffset, reason: "duplicate key \"\(key)\"") }
        } else {
            if index == nil { index = KeyIndex(pairs.lazy.map(\.0)) }
            guard index!.insert(key, keyAt: { pairs[$0].0 }) else {
                throw Error(offset: keyOffset, reason: "duplicate key \"\(key)\"")
            }
        }
        skipSpace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
        i += 1
        skipSpace()
        return key
    }

    private mutating func array(depth: Int) throws(Error) -> JSON {
        try enter(depth)
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array([]) }
        var items = [try value(depth: depth + 1)]
        while true {
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end in array") }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            guard bytes[i] == UInt8(ascii: ",") else { throw fail("expected ',' or ']'") }
            i += 1
            skipSpace()
            items.append(try value(depth: depth + 1))
        }
    }

    private mutating func string() throws(Error) -> String {
        i += 1
        let start = i
        var ascii = true
        // Most strings (ids, names, titles) have no escape: one scan, then one copy into the String.
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: bytes[start..<i])
                if ascii { i += 1; return String(decoding: raw, as: UTF8.self) }
                guard let text = String(validating: raw, as: UTF8.self) else { throw Error(offset: start, reason: "invalid UTF-8 in string") }
                i += 1
                return text
            }
            ascii = ascii && c < 0x80
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail("control character in string") }
            i += 1
        }
        guard i < bytes.count else { throw fail("unterminated string") }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<i]))
        return try escapedString()
    }

    /// The rest of a string from its first backslash, decoded into `scratch`.
    private mutating func escapedString() throws(Error) -> String {
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") { i += 1; break }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { scratch.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): scratch.append(0x22)
            case UInt8(ascii: "\\"): scratch.append(0x5C)
            case UInt8(ascii: "/"): scratch.append(0x2F)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"): appendUTF8(try escapedScalar())
            default: i -= 1; throw fail("bad escape")
            }
        }
        // Not every caller's bytes were checked (an HTTP body): JSON text is UTF-8 (RFC 8259 §8.1).
        guard let text = String(validating: scratch, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
        return text
    }

    /// The code point of a `\uXXXX` escape (the `\u` read), joining a surrogate pair.
    private mutating func escapedScalar() throws(Error) -> UInt32 {
        let code = try hex4()
        if (0xDC00...0xDFFF).contains(code) { throw fail("lone surrogate") }
        guard (0xD800...0xDBFF).contains(code) else { return code }
        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
            throw fail("lone surrogate")
        }
        i += 2
        let low = try hex4()
        guard (0xDC00...0xDFFF).contains(low) else { throw fail("bad surrogate pair") }
        return 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
    }

    private mutating func appendUTF8(_ v: UInt32) {
        switch v {
        case 0..<0x80:
            scratch.append(UInt8(v))
        case 0x80..<0x800:
            scratch.append(0xC0 | UInt8(v >> 6))
            scratch.append(0x80 | UInt8(v & 0x3F))
        case 0x800..<0x10000:
            scratch.append(0xE0 | UInt8(v >> 12))
            scratch.append(0x80 | UInt8((v >> 6) & 0x3F))
            scratch.append(0x80 | UInt8(v & 0x3F))
        default:
            scratch.append(0xF0 | UInt8(v >> 18))
            scratch.append(0x80 | UInt8((v >> 12) & 0x3F))
            scratch.append(0x80 | UInt8((v >> 6) & 0x3F))
            scratch.append(0x80 | UInt8(v & 0x3F))
        }
    }

    private mutating func hex4() throws(Error) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("short \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 48...57: d = UInt32(c - 48)
            case 65...70: d = UInt32(c - 55)
            case 97...102: d = UInt32(c - 87)
            default: throw fail("bad hex digit")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    @inline(__always)
    private func isDigit(at k: Int) -> Bool { k < bytes.count && bytes[k] &- 48 < 10 }

    private mutating func number() throws(Error) -> JSON {
        let start = i
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard isDigit(at: i) else { throw fail("unexpected character") }
        // The integer part is accumulated as it is read; most numbers in requests are small integers.
        var magnitude: UInt64 = 0
        var overflow = false
        if bytes[i] == 48 {
            i += 1
        } else {
            while isDigit(at: i) {
                let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(UInt64(bytes[i] - 48))
                overflow = overflow || o1 || o2
                magnitude = s
                i += 1
            }
        }
        var isInt = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInt = false
            i += 1
            guard isDigit(at: i) else { throw fail("digit expected after '.'") }
            while isDigit(at: i) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInt = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard isDigit(at: i) else { throw fail("digit expected in exponent") }
            while isDigit(at: i) { i += 1 }
        }
        if isInt, !overflow {
            if !negative, magnitude <= UInt64(Int.max) { return .int(Int(magnitude)) }
            if negative, magnitude <= UInt64(Int.max) + 1 { return .int(magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)) }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        // A number beyond Double's range would come back as infinity, which JSON cannot carry.
        guard let d = Double(text), d.isFinite else { throw Error(offset: start, reason: "number out of range") }
        return .double(d)
    }
}

/// The keys of one many-keyed object, for finding a duplicate in constant time: open addressing
/// over the keys' positions, by each key's hash, which is kept, so that growing the table never
/// hashes a key again (`Set<String>` does: half the time of a 70,000-key object went to it).
/// The hash is Swift's per-process seeded SipHash, so a client cannot choose keys that collide.
struct KeyIndex {
    /// The hash of the key at each position, in the object's order.
    private var hashes: [Int] = []
    /// Position + 1 of a key, or 0 for an empty slot; a power of two, at most half full.
    private var slots: [Int32]

    /// An index of `keys` (which have no duplicate).
    init(_ keys: some Collection<String>) {
        slots = Array(repeating: 0, count: 64)
        hashes.reserveCapacity(32)
        for key in keys { _ = insert(key, keyAt: { _ in "" }) }
    }

    /// Adds `key` as the next position, unless an equal key is there (false); `keyAt` gives the
    /// key at an earlier position.
    mutating func insert(_ key: String, keyAt: (Int) -> String) -> Bool {
        let hash = key.hashValue
        if (hashes.count + 1) * 2 > slots.count { grow() }
        let mask = slots.count - 1
        var s = hash & mask
        while slots[s] != 0 {
            let other = Int(slots[s]) - 1
            if hashes[other] == hash, keyAt(other) == key { return false }
            s = (s + 1) & mask
        }
        hashes.append(hash)
        slots[s] = Int32(truncatingIfNeeded: hashes.count)
        return true
    }

    private mutating func grow() {
        slots = Array(repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        for (position, hash) in hashes.enumerated() {
            var s = hash & mask
            while slots[s] != 0 { s = (s + 1) & mask }
            slots[s] = Int32(truncatingIfNeeded: position + 1)
        }
    }
}
