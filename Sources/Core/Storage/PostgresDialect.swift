import Foundation

/// Domains write SQLite's SQL; this turns it into PostgreSQL's, in one place, for the few
/// constructs that differ (everything else domains write is the same in both):
/// - `?` placeholders become `$1`, `$2`, …;
/// - the identifier `user` (a reserved word in PostgreSQL: `current_user`) is quoted;
/// - `INSERT OR IGNORE` becomes `INSERT … ON CONFLICT DO NOTHING`, and `INSERT OR REPLACE`
///   becomes `INSERT … ON CONFLICT (primary key) DO UPDATE SET` every other column, for tables
///   whose only unique key is their primary key (as every table written so is);
/// - in `CREATE TABLE` and `ALTER TABLE`: `INTEGER PRIMARY KEY` (SQLite's row id) becomes an
///   identity column, `INTEGER` `BIGINT`, `REAL` `DOUBLE PRECISION`, `BLOB` `BYTEA`, and
///   `WITHOUT ROWID` goes;
/// - `PRAGMA` statements are dropped.
/// String literals, quoted identifiers and comments are left as they are.
public enum PostgresDialect {
    /// Why a statement cannot be translated.
    public struct Untranslatable: Error, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// `sql` (one or more statements) in PostgreSQL's dialect; `primaryKey(table)` gives a table's
    /// primary key columns, for `INSERT OR REPLACE`.
    public static func translate(_ sql: String, primaryKey: (String) -> [String]?) throws(Untranslatable) -> String {
        try statements(sql, primaryKey: primaryKey).joined(separator: ";\n")
    }

    /// The same, statement by statement (PostgreSQL runs one prepared statement at a time).
    public static func statements(_ sql: String, primaryKey: (String) -> [String]?) throws(Untranslatable) -> [String] {
        var out: [String] = []
        var placeholder = 0
        for statement in split(tokenize(sql)) {
            let words = statement.filter { $0.kind != .space && $0.kind != .comment }
            guard let first = words.first?.upper else { continue }
            if first == "PRAGMA" { continue }
            var tokens = statement
            let isSchema = first == "CREATE" || first == "ALTER"
            var suffix = ""
            if first == "INSERT", words.count > 2, words[1].upper == "OR" {
                let table = words.count > 4 ? words[4].text : ""
                // INSERT OR <verb> INTO: drop "OR <verb>".
                guard let or = tokens.firstIndex(where: { $0.upper == "OR" }),
                      let verb = tokens[(or + 1)...].firstIndex(where: { $0.kind != .space && $0.kind != .comment }),
                      tokens[verb].kind == .word else {
                    // Refused, not dropped (a statement left out looks to its caller as if it ran), nor
                    // read past what follows OR (a placeholder there would vanish with it).
                    throw Untranslatable(reason: "INSERT OR not followed by IGNORE or REPLACE")
                }
                let action = tokens[verb].upper
                // …and the space after it.
                tokens.removeSubrange(or...(verb + 1 < tokens.count && tokens[verb + 1].kind == .space ? verb + 1 : verb))
                switch action {
                case "IGNORE":
                    suffix = " ON CONFLICT DO NOTHING"
                case "REPLACE":
                    guard let key = primaryKey(table.lowercased()), !key.isEmpty else {
                        throw Untranslatable(reason: "INSERT OR REPLACE INTO \(table): its primary key is not known")
                    }
                    let columns = insertedColumns(tokens)
                    let others = columns.filter { column in !key.contains { $0.lowercased() == unquoted(column).lowercased() } }
                    let quotedKey = key.map(quoteIfReserved).joined(separator: ", ")
                    suffix = others.isEmpty ? " ON CONFLICT (\(quotedKey)) DO NOTHING"
                        : " ON CONFLICT (\(quotedKey)) DO UPDATE SET "
                            + others.map { "\(quoteIfReserved($0)) = EXCLUDED.\(quoteIfReserved($0))" }.joined(separator: ", ")
                default:
                    throw Untranslatable(reason: "INSERT OR \(action) has no PostgreSQL form")
                }
            }
            var text = ""
            var i = 0
            while i < tokens.count {
                let t = tokens[i]
                switch t.kind {
                case .placeholder:
                    placeholder += 1
                    text += "$\(placeholder)"
                case .word where t.upper == "USER":
                    text += "\"user\""
                case .word where isSchema:
                    // The next token that means something: a literal or a symbol between two words
                    // (`WITHOUT 'x' ROWID`) keeps them apart, and is never dropped with them.
                    let next = tokens[(i + 1)...].firstIndex { $0.kind != .space && $0.kind != .comment }
                    let nextWord = next.map { tokens[$0].upper } ?? ""
                    switch t.upper {
                    case "INTEGER" where nextWord == "PRIMARY":
                        text += "BIGINT GENERATED BY DEFAULT AS IDENTITY"
                    case "INTEGER": text += "BIGINT"
                    case "REAL": text += "DOUBLE PRECISION"
                    case "BLOB": text += "BYTEA"
                    case "WITHOUT" where nextWord == "ROWID":
                        // Both words go, with the spaces and comments between them.
                        i = next ?? i
                    default: text += t.text
                    }
                default:
                    text += t.text
                }
                i += 1
            }
            out.append(text.trimmingCharacters(in: .whitespacesAndNewlines) + suffix)
        }
        return out
    }

    /// PostgreSQL's reserved words that domains use as column names.
    static func quoteIfReserved(_ name: String) -> String { name.lowercased() == "user" ? "\"user\"" : name }

    /// The column list of `INSERT INTO t (a, b, c) …`, each name as written (a quoted one keeps
    /// its quotes: written back bare, `"my col"` would not be one name, nor `"it's"` a name at all).
    static func insertedColumns(_ tokens: [Token]) -> [String] {
        guard let open = tokens.firstIndex(where: { $0.text == "(" }) else { return [] }
        var columns: [String] = []
        for t in tokens[(open + 1)...] {
            if t.text == ")" { break }
            if t.kind == .word || t.kind == .quoted { columns.append(t.text) }
        }
        return columns
    }

    /// A name as its table knows it: a quoted one without its quotes (a doubled quote is one).
    static func unquoted(_ name: String) -> String {
        guard name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") else { return name }
        return String(name.dropFirst().dropLast()).replacingOccurrences(of: "\"\"", with: "\"")
    }

    // MARK: Tokens

    struct Token: Equatable {
        enum Kind { case word, quoted, literal, placeholder, comment, space, symbol, semicolon }
        var kind: Kind
        var text: String
        var upper: String { kind == .word ? text.uppercased() : "" }
    }

    /// Statements split at their semicolons (empty ones dropped).
    static func split(_ tokens: [Token]) -> [[Token]] {
        var out: [[Token]] = [[]]
        for t in tokens {
            if t.kind == .semicolon { out.append([]) } else { out[out.count - 1].append(t) }
        }
        return out.filter { $0.contains { $0.kind != .space && $0.kind != .comment } }
    }

    static func tokenize(_ sql: String) -> [Token] {
        var tokens: [Token] = []
        let s = Array(sql.unicodeScalars)
        var i = 0
        func take(_ kind: Token.Kind, from start: Int) { tokens.append(Token(kind: kind, text: String(String.UnicodeScalarView(s[start..<i])))) }
        while i < s.count {
            let c = s[i], start = i
            if c == "'" || c == "\"" {
                // A literal or a quoted identifier; a doubled quote inside is the quote itself.
                i += 1
                while i < s.count {
                    if s[i] == c { if i + 1 < s.count && s[i + 1] == c { i += 2; continue }; i += 1; break }
                    i += 1
                }
                take(c == "'" ? .literal : .quoted, from: start)
            } else if c == "-" && i + 1 < s.count && s[i + 1] == "-" {
                while i < s.count && s[i] != "\n" { i += 1 }
                take(.comment, from: start)
            } else if c == "?" {
                i += 1
                take(.placeholder, from: start)
            } else if c == ";" {
                i += 1
                take(.semicolon, from: start)
            } else if c.properties.isWhitespace {
                while i < s.count && s[i].properties.isWhitespace { i += 1 }
                take(.space, from: start)
            } else if c == "_" || c.properties.isAlphabetic || c.properties.numericType != nil {
                while i < s.count && (s[i] == "_" || s[i].properties.isAlphabetic || s[i].properties.numericType != nil) { i += 1 }
                take(.word, from: start)
            } else {
                i += 1
                take(.symbol, from: start)
            }
        }
        return tokens
    }
}
