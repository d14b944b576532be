/// A strict JSON parser (RFC 8259) over UTF-8 bytes, with limits on depth and size so a hostile
/// message cannot exhaust the stack or memory.
public struct JSONParser {
    /// Why the text is not acceptable JSON, with the byte offset.
    public struct Error: Swift.Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var reason: String
        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    public var maxDepth = 32
    private var bytes: [UInt8] = []
    private var i = 0

    public init(maxDepth: Int = 32) { self.maxDepth = maxDepth }

    /// Parses one complete JSON value (surrounding whitespace allowed).
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 32) throws(Error) -> JSON {
        var p = JSONParser(maxDepth: maxDepth)
        p.bytes = bytes
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        guard p.i == bytes.count else { throw Error(offset: p.i, reason: "trailing characters") }
        return v
    }

    private mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    private func fail(_ reason: String) -> Error { Error(offset: i, reason: reason) }

    private mutating func value(depth: Int) throws(Error) -> JSON {
        guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth)") }
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

    private mutating func literal(_ word: String) throws(Error) {
        for c in word.utf8 {
            guard i < bytes.count, bytes[i] == c else { throw fail("expected \(word)") }
            i += 1
        }
    }

    private mutating func object(depth: Int) throws(Error) -> JSON {
        i += 1
        var pairs: [(String, JSON)] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(pairs) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try string()
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            let v = try value(depth: depth + 1)
            if pairs.contains(where: { $0.0 == key }) { throw fail("duplicate key \"\(key)\"") }
            pairs.append((key, v))
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end in object") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(pairs) }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func array(depth: Int) throws(Error) -> JSON {
        i += 1
        var items: [JSON] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try value(depth: depth + 1))
            skipSpace()
            guard i < bytes.count else { throw fail("unexpected end in array") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func string() throws(Error) -> String {
        i += 1
        var out = [UInt8]()
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") { i += 1; break }
            if c < 0x20 { throw fail("control character in string") }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800...0xDBFF).contains(code) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                        throw fail("lone surrogate")
                    }
                    i += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("bad surrogate pair") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(code) {
                    throw fail("lone surrogate")
                }
                guard let scalar = Unicode.Scalar(code) else { throw fail("bad code point") }
                out.append(contentsOf: Array(String(scalar).utf8))
            default: throw fail("bad escape")
            }
        }
        // The message already passed UTF-8 validation in the WebSocket layer.
        return String(decoding: out, as: UTF8.self)
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

    private mutating func number() throws(Error) -> JSON {
        let start = i
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        guard i < bytes.count, (48...57).contains(bytes[i]) else { throw fail("unexpected character") }
        if bytes[i] == 48 { i += 1 } else { while i < bytes.count, (48...57).contains(bytes[i]) { i += 1 } }
        var isInt = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            isInt = false
            i += 1
            guard i < bytes.count, (48...57).contains(bytes[i]) else { throw fail("digit expected after '.'") }
            while i < bytes.count, (48...57).contains(bytes[i]) { i += 1 }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            isInt = false
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, (48...57).contains(bytes[i]) else { throw fail("digit expected in exponent") }
            while i < bytes.count, (48...57).contains(bytes[i]) { i += 1 }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if isInt, let v = Int(text) { return .int(v) }
        guard let d = Double(text) else { throw fail("bad number") }
        return .double(d)
    }
}
