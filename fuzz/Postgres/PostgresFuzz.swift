// libFuzzer target for PostgreSQL escaping (Sources/Core/Storage): values written into statements as
// literals (`PostgresLiteral`, `PostgresStatement.inlined`, the `DO` blocks of `PostgresBlock`)
// and the dialect translation (`PostgresDialect`): .build-fuzz/fuzz-postgres. Every text a user
// or a feed sends that is stored goes through the literals. Compiled in one module with
// SQLValue.swift, PostgresLiteral.swift, PostgresDialect.swift and PostgresBlock.swift, whose
// internals it reaches.
//
// Input: [mode] then, mode % 4 < 3: values (each [kind][bytes...]) and statement templates
// (each [head][placeholders][separators and argument numbers...][tail]); mode % 4 == 3: SQL text.
//
// Invariants, checked with `PGLexer`, a lexer written from PostgreSQL's documentation:
// - every value (text with any characters, integers, doubles including infinities and NaNs,
//   blobs) has a literal that reads back as exactly that value; only a text holding NUL has none;
// - written into a statement, the literals change nothing around them: the statement's tokens are
//   the tokens of its pieces and of its literals, in order (no value ends its literal early,
//   starts a comment or joins a neighbour), for the server's lexer and for
//   `PostgresDialect.tokenize` alike; `inlined` is nil exactly when an argument is missing or a
//   text holds NUL;
// - a block is `DO` and one dollar-quoted body that holds BEGIN, each statement (a SELECT made a
//   PERFORM) ended by its own semicolon, and END;
// - translating any SQL never traps; SQL whose quotes close gets its placeholders numbered $1, $2, … in
//   order and keeps its string literals as they were.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    var input = Input(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    if input.byte() % 4 == 3 {
        fuzzDialect(String(decoding: input.rest, as: UTF8.self))
    } else {
        fuzzStatements(&input)
    }
    return 0
}

// MARK: Values

/// Characters that matter to SQL's lexer, picked by input bytes below 0x20.
let specials: [Unicode.Scalar] = ["'", "\\", "$", "-", "/", "*", "E", "x", "\"", "?", ";", "\n", "\r", "\t", "\0", "u",
                                  "U", "b", "0", "7", "&", ":", "h", "\u{2028}", "\u{E9}", "\u{1F600}", "\u{FEFF}", "\u{85}",
                                  "\u{7F}", " ", "e", "\u{10FFFF}"]

func value(_ input: inout Input) -> SQLValue {
    switch input.byte() % 5 {
    case 0:
        return .null
    case 1:
        switch input.byte() % 6 {
        case 0: return .integer(.min)
        case 1: return .integer(.max)
        case 2: return .integer(-1)
        default: return .integer(Int64(bitPattern: input.take(8).reduce(0) { $0 << 8 | UInt64($1) }))
        }
    case 2:
        return .real(Double(bitPattern: input.take(8).reduce(0) { $0 << 8 | UInt64($1) }))
    case 3:
        var s = String.UnicodeScalarView()
        for _ in 0..<Int(input.byte() % 48) {
            let b = input.byte()
            if b < 0x20 {
                s.append(specials[Int(b)])
            } else if b < 0x80 {
                s.append(Unicode.Scalar(b))
            } else {
                let v = UInt32(b & 0x3F) << 10 | UInt32(input.byte()) << 2
                s.append(Unicode.Scalar(b >= 0xC0 ? 0x10000 + v : v) ?? "\u{FFFD}")
            }
        }
        return .text(String(s))
    default:
        return .blob(input.take(Int(input.byte() % 64)))
    }
}

/// Equal as stored: doubles by their bits (−0 is not 0), any NaN to any NaN.
func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
    if case .real(let x) = a, case .real(let y) = b { return x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN) }
    return a == b
}

func containsNUL(_ v: SQLValue) -> Bool {
    if case .text(let s) = v { return s.unicodeScalars.contains("\0") }
    return false
}

func checkLiteral(_ v: SQLValue) {
    guard let literal = PostgresLiteral.of(v) else {
        return check(containsNUL(v), "no literal for \(v)")
    }
    check(!containsNUL(v), "a literal for a text holding NUL: \(literal.debugDescription)")
    guard let tokens = PGLexer.tokens(literal), let back = PGLiteral.value(tokens) else {
        fatalError("invariant broken: \(literal.debugDescription), the literal of \(v), is not one PostgreSQL reads as a value")
    }
    check(same(back, v), "\(literal.debugDescription) reads back as \(back), not \(v)")
}

// MARK: Statements

let heads = ["SELECT ", "INSERT INTO t (a, b) VALUES (", "UPDATE t SET a = ", "DELETE FROM t WHERE a = ", "select x, ",
             "-- first\nSELECT ", "/* why */ SELECT ", "WITH q AS (SELECT 1) SELECT "]
let separators = [", ", " = ", " -", " - ", " /", " || ", " + ", " <", " AND b = ", ", E'\\\\' || ", ", '--' || ", ", /* c */ ",
                  "::text, ", " *", ", $$x$$ || "]
let tails = ["", ")", " /* end */", " RETURNING id", "\n", " -- trailing"]

/// A statement as `PostgresDialect` writes them: `$n` placeholders (some without their argument).
func template(_ input: inout Input, values: Int) -> String {
    var out = heads[Int(input.byte()) % heads.count]
    for k in 0..<Int(input.byte() % 4) {
        if k > 0 { out += separators[Int(input.byte()) % separators.count] }
        out += "$\(1 + Int(input.byte()) % (values + 1))"
    }
    return out + tails[Int(input.byte()) % tails.count]
}

func fuzzStatements(_ input: inout Input) {
    let values = (0..<(1 + Int(input.byte() % 6))).map { _ in value(&input) }
    for v in values { checkLiteral(v) }
    var block = PostgresBlock()
    var blocked: [String] = []
    for _ in 0..<(1 + Int(input.byte() % 4)) {
        let text = template(&input, values: values.count)
        let statement = PostgresStatement(text)
        let inlined = statement.inlined(values)
        checkStatement(statement, text, values, inlined)
        let added = block.add(statement, SQLArguments(values))
        check(added == (statement.blockable && inlined != nil), "add says \(added) for \(text.debugDescription)")
        if added, let inlined { blocked.append(inlined) }
    }
    if !block.isEmpty { checkBlock(block.text, blocked) }
}

func checkStatement(_ statement: PostgresStatement, _ text: String, _ values: [SQLValue], _ inlined: String?) {
    var rebuilt = statement.pieces[0]
    for (i, p) in statement.placeholders.enumerated() { rebuilt += "$\(p + 1)" + statement.pieces[i + 1] }
    check(rebuilt == text, "pieces and placeholders rebuild \(rebuilt.debugDescription), not \(text.debugDescription)")
    let missing = statement.placeholders.contains { $0 >= values.count || containsNUL(values[$0]) }
    check((inlined == nil) == missing, "inlined is \(inlined == nil ? "nil" : "there") for \(text.debugDescription)")
    guard let inlined else { return }
    // The parts as written alone, and the statement they make together, must lex alike.
    var parts = [statement.pieces[0]]
    for (i, p) in statement.placeholders.enumerated() { parts += [PostgresLiteral.of(values[p])!, statement.pieces[i + 1]] }
    func solid(_ tokens: [PGToken]) -> [PGToken] { tokens.filter { $0.kind != .space } }
    guard let whole = PGLexer.tokens(inlined) else { fatalError("invariant broken: PostgreSQL cannot lex \(inlined.debugDescription)") }
    let separate = parts.map { part -> [PGToken] in
        guard let t = PGLexer.tokens(part) else { fatalError("invariant broken: PostgreSQL cannot lex the part \(part.debugDescription)") }
        return t
    }
    check(solid(whole) == solid(separate.flatMap { $0 }), "values change how \(inlined.debugDescription) reads: \(solid(whole))")
    check(PostgresDialect.tokenize(inlined) == parts.flatMap(PostgresDialect.tokenize),
          "values change how PostgresDialect tokenizes \(inlined.debugDescription)")
}

/// The block must be `DO` and one dollar-quoted body: BEGIN, each statement (a SELECT made a
/// PERFORM, as PL/pgSQL needs) ended by a semicolon of its own, END.
func checkBlock(_ text: String, _ statements: [String]) {
    guard let tokens = PGLexer.tokens(text)?.filter({ $0.kind != .space }), tokens.count == 2, tokens[0].text == "DO",
          case .dollar(_, let body) = tokens[1].kind else {
        fatalError("invariant broken: the block is not DO and one dollar-quoted body: \(text.debugDescription)")
    }
    func solid(_ sql: String) -> [PGToken] { PGLexer.tokens(sql)!.filter { $0.kind != .space } }
    var expected = solid("BEGIN")
    for s in statements {
        var t = solid(s)
        if let first = t.firstIndex(where: { $0.kind == .identifier }), t[first].text.uppercased() == "SELECT" { t[first].text = "PERFORM" }
        expected += t + solid(";")
    }
    expected += solid("END")
    guard let read = PGLexer.tokens(body)?.filter({ $0.kind != .space }) else { fatalError("invariant broken: the block's body does not lex: \(body.debugDescription)") }
    check(read == expected, "the block's body reads as \(read), not its statements \(statements)")
}

// MARK: Dialect

func fuzzDialect(_ sql: String) {
    let keys: [String: [String]] = ["karma": ["user"], "t": ["a"], "v": ["a", "b"]]
    let out: [String]
    do throws(PostgresDialect.Untranslatable) { out = try PostgresDialect.statements(sql, primaryKey: { keys[$0] }) } catch { return }
    let kept = PostgresDialect.split(PostgresDialect.tokenize(sql)).filter {
        $0.first { $0.kind != .space && $0.kind != .comment }?.upper != "PRAGMA"
    }
    /// A literal or quoted name with its closing quote (one left open runs to the end of the text).
    func closed(_ t: PostgresDialect.Token) -> Bool {
        let q = Array(t.text.unicodeScalars)
        var i = 1
        while i < q.count {
            if q[i] == q[0] { if i + 1 < q.count && q[i + 1] == q[0] { i += 2; continue }; return i == q.count - 1 }
            i += 1
        }
        return false
    }
    // SQL whose quotes do not all close is refused by either engine; what is appended to it means nothing.
    guard kept.joined().allSatisfy({ ($0.kind != .literal && $0.kind != .quoted) || closed($0) }) else { return }
    func literals(_ tokens: [PostgresDialect.Token]) -> [String] { tokens.filter { $0.kind == .literal }.map(\.text) }
    let translated = out.map(PostgresDialect.tokenize)
    check(literals(kept.flatMap { $0 }) == literals(translated.flatMap { $0 }), "string literals changed in \(sql.debugDescription) → \(out)")
    // Placeholders numbered in order, when the SQL itself writes no `$` and no `?` touches a word
    // (SQLite's `?NNN`, which domains do not write, would read as another number), and no schema
    // statement holds one (CREATE and ALTER are rewritten, and take no values).
    guard !kept.contains(where: { ["CREATE", "ALTER"].contains($0.first { $0.kind != .space && $0.kind != .comment }?.upper ?? "") }) else { return }
    let all = Array(kept.joined())
    guard !all.contains(where: { $0.kind == .symbol && $0.text == "$" }),
          !zip(all, all.dropFirst()).contains(where: { $0.kind == .placeholder && $1.kind == .word }) else { return }
    let placeholders = all.filter { $0.kind == .placeholder }.count
    var numbers: [Int] = []
    for tokens in translated {
        for (i, t) in tokens.enumerated() where t.kind == .symbol && t.text == "$" && i + 1 < tokens.count {
            numbers.append(Int(tokens[i + 1].text) ?? -1)
        }
    }
    check(numbers == Array(stride(from: 1, through: placeholders, by: 1)), "placeholders numbered \(numbers) for \(sql.debugDescription)")
}
