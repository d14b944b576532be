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
    /// Where the word `SELECT` is in `pieces[0]` (UTF-8 offsets) when the statement is one: it
    /// becomes `PERFORM` in a block, which has nowhere to put rows. A comment may come before it.
    let select: Range<Int>?

    init(_ text: String) {
        self.text = text
        var pieces: [String] = [], placeholders: [Int] = [], current = ""
        let tokens = PostgresDialect.tokenize(text)
        var i = 0, select: Range<Int>?, seenWord = false
        while i < tokens.count {
            let t = tokens[i]
            if t.kind == .word, !seenWord {
                seenWord = true
                if t.upper == "SELECT" { select = current.utf8.count..<(current.utf8.count + t.text.utf8.count) }
            }
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
        self.select = select
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
        // Compared as bytes, as PostgreSQL reads them: `String.contains` compares characters, and a
        // combining mark after the tag's last `$` hides the tag inside one character (found by the
        // fuzzer: a value `$hubbub$` + U+1E000 ended the block's body early).
        while statements.contains(where: { Self.bytes(of: $0.inlined, contain: tag) }) {
            n += 1
            tag = "$hubbub\(n)$"
        }
        var out = "DO \(tag)\nBEGIN\n"
        for s in statements {
            if let select = s.statement.select {
                // `inlined` starts with `pieces[0]`, where the offsets are.
                let utf8 = s.inlined.utf8
                out += s.inlined[..<utf8.index(utf8.startIndex, offsetBy: select.lowerBound)] + "PERFORM"
                    + s.inlined[utf8.index(utf8.startIndex, offsetBy: select.upperBound)...]
            } else {
                out += s.inlined
            }
            // On a line of its own: a statement may end with a `--` comment.
            out += "\n;\n"
        }
        return out + "END\n\(tag)"
    }

    mutating func removeAll() { statements.removeAll(keepingCapacity: true) }

    /// Whether `needle`'s UTF-8 bytes occur in `haystack`'s. A block carries every pushed payload
    /// of its transaction (tens of MB in a provider burst, written while the transaction holds its
    /// locks): the generic `utf8.firstRange(of:)` scanned 11.7 MB in 1.4 s, which stalled every
    /// node's writes behind the hub's on three nodes; `memchr` for the first byte, then `memcmp`,
    /// takes 0.3 ms (both measured in a release build, same machine, 2026-11-28).
    static func bytes(of haystack: String, contain needle: String) -> Bool {
        let found = haystack.utf8.withContiguousStorageIfAvailable { h in
            needle.utf8.withContiguousStorageIfAvailable { n -> Bool in
                guard let first = n.first, let start = n.baseAddress else { return true } // the empty needle
                guard let base = h.baseAddress else { return false }
                var at = 0
                while h.count - at >= n.count, let hit = memchr(base + at, Int32(first), h.count - at - n.count + 1) {
                    let i = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(base + i, start, n.count) == 0 { return true }
                    at = i + 1
                }
                return false
            }
        }
        if let found, let found { return found }
        return haystack.utf8.firstRange(of: needle.utf8) != nil // a string not stored as contiguous UTF-8
    }
}
