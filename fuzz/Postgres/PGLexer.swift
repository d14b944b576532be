/// PostgreSQL's lexical rules, written from its documentation (SQL Syntax, 4.1 "Lexical
/// Structure"; 8.1.3 floating-point input; 8.4 bytea's hex format) rather than from
/// `PostgresDialect.tokenize`, which only knows what domains write. It reads statements as the
/// server would, so that a value written in as a literal can be checked to read back whole.
struct PGToken: Equatable, CustomStringConvertible {
    enum Kind: Equatable {
        case space, comment, identifier, quotedIdentifier, number, parameter, typecast, op
        /// A string constant: its decoded content; `escape` for E'…', whose backslashes escape.
        case string(content: [UInt8], escape: Bool)
        /// A dollar-quoted string: its tag and its body, as written.
        case dollar(tag: String, body: String)
    }

    var kind: Kind
    var text: String
    var description: String { "\(kind):\(text.debugDescription)" }
}

enum PGLexer {
    /// The tokens of `sql`, or nil where the server would refuse the text itself (a string,
    /// quoted identifier, comment or dollar quote left open; a bad escape).
    static func tokens(_ sql: String) -> [PGToken]? {
        let s = Array(sql.unicodeScalars)
        var out: [PGToken] = []
        var i = 0
        func text(_ from: Int) -> String { String(String.UnicodeScalarView(s[from..<i])) }
        func at(_ k: Int) -> Unicode.Scalar? { k < s.count ? s[k] : nil }
        while i < s.count {
            let start = i, c = s[i]
            if isSpace(c) {
                while let d = at(i), isSpace(d) { i += 1 }
                out.append(PGToken(kind: .space, text: text(start)))
            } else if c == "-" && at(i + 1) == "-" {
                while let d = at(i), d != "\n", d != "\r" { i += 1 }
                out.append(PGToken(kind: .comment, text: text(start)))
            } else if c == "/" && at(i + 1) == "*" {
                // Block comments nest.
                var depth = 0
                repeat {
                    guard i + 1 < s.count else { return nil }
                    if s[i] == "/" && s[i + 1] == "*" { depth += 1; i += 2 } else if s[i] == "*" && s[i + 1] == "/" { depth -= 1; i += 2 } else { i += 1 }
                } while depth > 0
                out.append(PGToken(kind: .comment, text: text(start)))
            } else if (c == "E" || c == "e") && at(i + 1) == "'" {
                i += 1
                guard let content = quoted(s, &i, escape: true) else { return nil }
                out.append(PGToken(kind: .string(content: content, escape: true), text: text(start)))
            } else if c == "'" {
                guard let content = quoted(s, &i, escape: false) else { return nil }
                out.append(PGToken(kind: .string(content: content, escape: false), text: text(start)))
            } else if c == "\"" {
                i += 1
                while true {
                    guard let d = at(i) else { return nil }
                    i += 1
                    if d == "\"" { if at(i) == "\"" { i += 1 } else { break } }
                }
                out.append(PGToken(kind: .quotedIdentifier, text: text(start)))
            } else if c == "$", let d = at(i + 1), isDigit(d) {
                i += 1
                while let d = at(i), isDigit(d) { i += 1 }
                out.append(PGToken(kind: .parameter, text: text(start)))
            } else if c == "$", let tagEnd = dollarTag(s, i) {
                let tag = String(String.UnicodeScalarView(s[i...tagEnd]))
                let tagScalars = Array(tag.unicodeScalars)
                var k = tagEnd + 1
                while k + tagScalars.count <= s.count, !s[k..<(k + tagScalars.count)].elementsEqual(tagScalars) { k += 1 }
                guard k + tagScalars.count <= s.count else { return nil }
                let body = String(String.UnicodeScalarView(s[(tagEnd + 1)..<k]))
                i = k + tagScalars.count
                out.append(PGToken(kind: .dollar(tag: tag, body: body), text: text(start)))
            } else if isIdentifierStart(c) {
                while let d = at(i), isIdentifierStart(d) || isDigit(d) || d == "$" { i += 1 }
                out.append(PGToken(kind: .identifier, text: text(start)))
            } else if isDigit(c) || (c == "." && at(i + 1).map(isDigit) == true) {
                while let d = at(i), isDigit(d) { i += 1 }
                if at(i) == ".", at(i + 1) != "." { i += 1; while let d = at(i), isDigit(d) { i += 1 } }
                if let e = at(i), e == "e" || e == "E" {
                    var k = i + 1
                    if let sign = at(k), sign == "+" || sign == "-" { k += 1 }
                    if let d = at(k), isDigit(d) { i = k; while let d = at(i), isDigit(d) { i += 1 } }
                }
                // "Trailing junk after numeric literal" (PostgreSQL 15): 5AND is not 5 then AND.
                if let d = at(i), isIdentifierStart(d) { return nil }
                out.append(PGToken(kind: .number, text: text(start)))
            } else if c == ":" && at(i + 1) == ":" {
                i += 2
                out.append(PGToken(kind: .typecast, text: "::"))
            } else if operatorCharacters.contains(c) {
                // An operator runs over operator characters, but never over the start of a comment.
                i += 1
                while let d = at(i), operatorCharacters.contains(d),
                      !(d == "-" && at(i + 1) == "-"), !(d == "/" && at(i + 1) == "*") { i += 1 }
                out.append(PGToken(kind: .op, text: text(start)))
            } else {
                i += 1
                out.append(PGToken(kind: .op, text: text(start)))
            }
        }
        return out
    }

    static let operatorCharacters: Set<Unicode.Scalar> = ["+", "-", "*", "/", "<", ">", "=", "~", "!", "@", "#", "%", "^", "&", "|", "`", "?"]

    /// "Whitespace": space, tab, newline, carriage return, form feed (and vertical tab).
    static func isSpace(_ c: Unicode.Scalar) -> Bool { [" ", "\t", "\n", "\r", "\u{0C}", "\u{0B}"].contains(c) }
    static func isDigit(_ c: Unicode.Scalar) -> Bool { ("0"..."9").contains(c) }
    /// "SQL identifiers and key words must begin with a letter (a-z, but also letters with
    /// diacritical marks and non-Latin letters) or an underscore": in the server's lexer, any
    /// byte from 0x80 up, so any non-ASCII character.
    static func isIdentifierStart(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_" || c.value >= 0x80 }

    /// The end of a dollar quote's opening tag `$tag$` starting at `i` (the tag has no `$` and
    /// does not start with a digit), if there is one.
    static func dollarTag(_ s: [Unicode.Scalar], _ i: Int) -> Int? {
        var k = i + 1
        while k < s.count, s[k] != "$" {
            guard isIdentifierStart(s[k]) || (k > i + 1 && isDigit(s[k])) else { return nil }
            k += 1
        }
        return k < s.count ? k : nil
    }

    /// A string constant's content from its opening quote at `i` (moved past the closing one):
    /// `''` is a quote; in an escape string `\b \f \n \r \t`, `\o`–`\ooo` octal and `\xh`–`\xhh`
    /// hex bytes, `\uXXXX` and `\UXXXXXXXX` characters, and a backslash before anything else is
    /// that character. Two constants separated only by whitespace with a newline are one.
    static func quoted(_ s: [Unicode.Scalar], _ i: inout Int, escape: Bool) -> [UInt8]? {
        var out: [UInt8] = []
        func append(_ c: Unicode.Scalar) { out += Array(String(Character(c)).utf8) }
        i += 1
        while true {
            guard i < s.count else { return nil }
            let c = s[i]
            i += 1
            if c == "'" {
                if i < s.count, s[i] == "'" { out.append(0x27); i += 1; continue }
                // A continuation: whitespace holding a newline, then another quote.
                var k = i, newline = false
                while k < s.count, isSpace(s[k]) { newline = newline || s[k] == "\n" || s[k] == "\r"; k += 1 }
                if newline, k < s.count, s[k] == "'" { i = k + 1; continue }
                return out
            }
            guard escape, c == "\\" else { append(c); continue }
            guard i < s.count else { return nil }
            let e = s[i]
            i += 1
            switch e {
            case "b": out.append(0x08)
            case "f": out.append(0x0C)
            case "n": out.append(0x0A)
            case "r": out.append(0x0D)
            case "t": out.append(0x09)
            case "0"..."7":
                var v = e.value - 48
                for _ in 0..<2 where i < s.count && ("0"..."7").contains(s[i]) { v = v * 8 + s[i].value - 48; i += 1 }
                out.append(UInt8(truncatingIfNeeded: v))
            case "x" where i < s.count && s[i].properties.isASCIIHexDigit:
                var v = hex(s[i]); i += 1
                if i < s.count, s[i].properties.isASCIIHexDigit { v = v * 16 + hex(s[i]); i += 1 }
                out.append(UInt8(v))
            case "u", "U":
                let n = e == "u" ? 4 : 8
                guard i + n <= s.count, s[i..<(i + n)].allSatisfy(\.properties.isASCIIHexDigit),
                      let scalar = Unicode.Scalar(s[i..<(i + n)].reduce(0) { $0 * 16 + hex($1) }) else { return nil }
                i += n
                append(scalar)
            default:
                append(e)
            }
        }
    }

    static func hex(_ c: Unicode.Scalar) -> UInt32 { c.value <= 57 ? c.value - 48 : (c.value | 0x20) - 87 }
}

/// A literal read back as the server would: the tokens of one value's text decoded to the value.
enum PGLiteral {
    static func value(_ tokens: [PGToken]) -> SQLValue? {
        let t = tokens.filter { $0.kind != .space }
        switch t.count {
        case 1:
            if t[0].kind == .identifier, t[0].text.uppercased() == "NULL" { return .null }
            if t[0].kind == .number { return Int64(t[0].text).map(SQLValue.integer) }
            if case .string(let content, true) = t[0].kind { return String(validating: content, as: UTF8.self).map(SQLValue.text) }
        case 3:
            guard case .string(let content, _) = t[0].kind, t[1].kind == .typecast, t[2].kind == .identifier else { return nil }
            switch t[2].text.lowercased() {
            case "float8": return String(validating: content, as: UTF8.self).flatMap(float8).map(SQLValue.real)
            case "bytea": return bytea(content).map(SQLValue.blob)
            default: return nil
            }
        case 4:
            // A minus applied to the constant in parentheses; the constant alone may be just past Int64.max.
            guard t.map(\.text) == ["(", "-", t[2].text, ")"], t[2].kind == .number, let magnitude = UInt64(t[2].text),
                  magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return .integer(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude))
        default:
            break
        }
        return nil
    }

    /// float8's input: a decimal number, or (in any case) Infinity, -Infinity, inf, -inf, NaN;
    /// spaces around it are allowed.
    static func float8(_ text: String) -> Double? {
        let trimmed = String(text.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
        switch trimmed.lowercased() {
        case "infinity", "inf": return .infinity
        case "-infinity", "-inf": return -.infinity
        case "nan": return .nan
        default: break
        }
        let u = Array(trimmed.utf8)
        var i = 0
        func digits() -> Int { let from = i; while i < u.count, (48...57).contains(u[i]) { i += 1 }; return i - from }
        if i < u.count, u[i] == 0x2B || u[i] == 0x2D { i += 1 }
        var count = digits()
        if i < u.count, u[i] == 0x2E { i += 1; count += digits() }
        guard count > 0 else { return nil }
        if i < u.count, u[i] == 0x45 || u[i] == 0x65 {
            i += 1
            if i < u.count, u[i] == 0x2B || u[i] == 0x2D { i += 1 }
            guard digits() > 0 else { return nil }
        }
        return i == u.count ? Double(trimmed) : nil
    }

    /// bytea's hex format: `\x`, then pairs of hex digits, whitespace allowed between pairs.
    static func bytea(_ text: [UInt8]) -> [UInt8]? {
        guard text.starts(with: Array("\\x".utf8)) else { return nil }
        var out: [UInt8] = []
        var i = 2
        func digit(_ b: UInt8) -> UInt8? {
            switch b {
            case 48...57: b - 48
            case 65...70: b - 55
            case 97...102: b - 87
            default: nil
            }
        }
        while i < text.count {
            if [0x20, 0x09, 0x0A, 0x0D].contains(text[i]) { i += 1; continue }
            guard i + 1 < text.count, let hi = digit(text[i]), let lo = digit(text[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
