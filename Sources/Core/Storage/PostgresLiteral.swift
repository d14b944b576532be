/// Values as PostgreSQL literals, whatever `standard_conforming_strings` says (escape strings).
/// Public for the property test that reads them back from a real server (StorageTests, which
/// release builds compile without access to internals).
public enum PostgresLiteral {
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
            guard !s.unicodeScalars.contains("\0") else { return nil }
            var out = "E'"
            for c in s.unicodeScalars {
                switch c {
                case "'": out += "''"
                case "\\": out += "\\\\"
                default: out.unicodeScalars.append(c)
                }
            }
            return out + "'"
        case .blob(let bytes):
            let digits = Array("0123456789abcdef".utf8)
            var hex = [UInt8]()
            hex.reserveCapacity(bytes.count * 2)
            for b in bytes {
                hex.append(digits[Int(b >> 4)])
                hex.append(digits[Int(b & 0xF)])
            }
            return "E'\\\\x" + String(decoding: hex, as: UTF8.self) + "'::bytea"
        }
    }
}
