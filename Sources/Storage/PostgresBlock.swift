import Foundation

/// One statement in PostgreSQL's dialect, as `PostgresDialect` made it, split where its values go,
/// so that they can be written in as literals (`PostgresBlock`).
struct PostgresStatement: Sendable {
    /// The statement with `$1`, `$2`… placeholders (sent with bound values).
    let text: String
    /// The text around the placeholders: `pieces[i]`, value `placeholders[i]`, `pieces[i + 1]`…
    let pieces: [String]
    /// Each placeholder's argument (0-based), in the order they appear.
    let placeholders: [Int]
    /// Whether it can run inside a `DO` block: an `INSERT`, `UPDATE`, `DELETE` or `SELECT` that
    /// returns nothing anyone reads (no `RETURNING`).
    let blockable: Bool
    /// `SELECT` (it becomes `PERFORM` in a block, which has nowhere to put rows).
    let isSelect: Bool

    init(_ text: String) {
        self.text = text
        var pieces: [String] = [], placeholders: [Int] = [], current = ""
        let tokens = PostgresDialect.tokenize(text)
        var i = 0
        while i < tokens.count {
            let t = tokens[i]
            if t.kind == .symbol, t.text == "$", i + 1 < tokens.count, tokens[i + 1].kind == .word, let n = Int(tokens[i + 1].text), n > 0 {
                pieces.append(current)
                current = ""
                placeholders.append(n - 1)
                i += 2
                continue
            }
            current += t.text
            i += 1
        }
        pieces.append(current)
        self.pieces = pieces
        self.placeholders = placeholders
        let words = tokens.filter { $0.kind == .word }.map(\.upper)
        isSelect = words.first == "SELECT"
        blockable = ["INSERT", "UPDATE", "DELETE", "SELECT"].contains(words.first ?? "") && !words.contains("RETURNING")
    }

    /// The statement with `arguments` written in as literals; nil if one cannot be (a NUL in a
    /// text, or a placeholder without its argument).
    func inlined(_ arguments: [SQLValue]) -> String? {
        var out = pieces[0]
        for (i, p) in placeholders.enumerated() {
            guard p < arguments.count, let literal = PostgresLiteral.of(arguments[p]) else { return nil }
            out += literal
            out += pieces[i + 1]
        }
        return out
    }
}

/// Values as PostgreSQL literals, whatever `standard_conforming_strings` says (escape strings).
enum PostgresLiteral {
    static func of(_ value: SQLValue) -> String? {
        switch value {
        case .null:
            return "NULL"
        case .integer(let n):
            // In parentheses: `x -` followed by `-5` would start a comment.
            return n < 0 ? "(\(n))" : "\(n)"
        case .real(let d):
            // Swift's shortest form reads back to the same double; "inf" and "nan" are float8's too.
            return "'\(d)'::float8"
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

/// Statements of one transaction gathered to go to PostgreSQL as one anonymous `DO` block: one
/// round trip for all of them instead of one each. Their values are written in as literals (a
/// block takes no parameters). PostgreSQL runs them in order; the first failure fails the block.
struct PostgresBlock {
    private(set) var statements: [(statement: PostgresStatement, arguments: SQLArguments, inlined: String)] = []

    var isEmpty: Bool { statements.isEmpty }

    /// Adds the statement if it can go in a block (else false: send it by itself).
    mutating func add(_ statement: PostgresStatement, _ arguments: SQLArguments) -> Bool {
        guard statement.blockable, let inlined = statement.inlined(arguments.values) else { return false }
        statements.append((statement, arguments, inlined))
        return true
    }

    /// The block's text: `DO $tag$ BEGIN …; END $tag$`, its tag one that no statement contains.
    var text: String {
        var tag = "$hubbub$", n = 0
        while statements.contains(where: { $0.inlined.contains(tag) }) {
            n += 1
            tag = "$hubbub\(n)$"
        }
        var out = "DO \(tag)\nBEGIN\n"
        for s in statements {
            if s.statement.isSelect, let range = s.inlined.range(of: "SELECT", options: [.caseInsensitive, .anchored]) {
                out += "PERFORM" + s.inlined[range.upperBound...]
            } else {
                out += s.inlined
            }
            out += ";\n"
        }
        return out + "END\n\(tag)"
    }

    mutating func removeAll() { statements.removeAll(keepingCapacity: true) }
}
