/// Values as PostgreSQL literals, whatever `standard_conforming_strings` says (escape strings).
/// Public for the property test that reads them back from a real server (StorageTests, which
/// release builds compile without access to internals).
public enum PostgresLiteral {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    public static func of(_ value: SQLValue) -> String? {
        switch value {
        case .null:
            return "NULL"
        case .integer(let n):
            // In parentheses: `x -` followed by `-5` would start a comment.
            return n < 0 ? "(\(n))" : "\(n)"
        case .real(let d):
            // Swift's shortest form reads back to the same double, and "inf" and "-inf" are float8's
            // too; but a NaN Swift writes "-nan", "nan(0x…)" or "snan", which PostgreSQL leaves to
            // the C library (glibc refuses "snan"): it documents "NaN".
            return d.isNaN ? "'NaN'::float8" : "'\(d)'::float8"
        case .text(let s):
            // Escaped byte by byte, in one buffer: UTF-8 never uses the bytes of `'` and `\`
            // inside another character, so doubling those bytes is doubling those characters. (A
            // literal built scalar by scalar in a String: a fifth of a node's CPU on three
            // nodes: every push's payload is inlined in `pg_notify`'s text.)
            var out: [UInt8] = []
            out.reserveCapacity(s.utf8.count + 8)
            out.append(UInt8(ascii: "E"))
            out.append(UInt8(ascii: "'"))
            for b in s.utf8 {
                switch b {
                case 0: return nil
                case UInt8(ascii: "'"), UInt8(ascii: "\\"): out.append(b); out.append(b)
                default: out.append(b)
                }
            }
            out.append(UInt8(ascii: "'"))
            return String(decoding: out, as: UTF8.self)
        case .blob(let bytes):
            let prefix = Array("E'\\\\x".utf8), suffix = Array("'::bytea".utf8)
            var out: [UInt8] = []
            out.reserveCapacity(prefix.count + bytes.count * 2 + suffix.count)
            out += prefix
            for b in bytes {
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 0xF)])
            }
            out += suffix
            return String(decoding: out, as: UTF8.self)
        }
    }
}
