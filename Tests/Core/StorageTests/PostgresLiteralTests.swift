import Foundation
import HubbubTestSupport
import SeededRandom
import Storage
import XCTest

/// Values written as PostgreSQL literals (`PostgresLiteral`: what a group's `DO` block holds
/// instead of bound values) read back unchanged from a real server: a few thousand random ones
/// from a fixed seed, among them every character that matters to SQL's lexer, integers at the
/// edges of int4 and int8, doubles at theirs (−0, infinities, NaNs of any sign and payload,
/// subnormals) and blobs. fuzz-postgres checks the same against a lexer written from
/// PostgreSQL's documentation; this checks it against the server.
/// Only on PostgreSQL (`HB_TEST_POSTGRES`, scripts/test-postgres.sh; the SQLite pass leaves it
/// out): SQLite reads no `E'…'`. Without PostgreSQL it fails, rather than pass having checked nothing.
final class PostgresLiteralTests: XCTestCase {
    /// A store on the suite's PostgreSQL, or nil having failed the test: without PostgreSQL these
    /// tests fail rather than pass having checked nothing.
    func postgresStore(_ name: String) throws -> Store? {
        guard let cluster = ProcessInfo.processInfo.environment["HB_TEST_POSTGRES"], !cluster.isEmpty else {
            XCTFail("PostgresLiteralTests need PostgreSQL: run scripts/test-postgres.sh (it starts one and sets HB_TEST_POSTGRES)")
            return nil
        }
        return try temporaryStore(name, migrations: SQLMigrations(), engine: .postgres(cluster: cluster)).store
    }

    func testRandomValuesReadBackUnchanged() async throws {
        guard let store = try postgresStore("hubbub-literals") else { return }
        defer { store.close() }
        var random = SplitMix64(seed: 20_251_128)
        let values = (0..<3000).map { _ in Self.value(&random) }
        // A hundred literals a statement: thirty round trips, not three thousand.
        for start in stride(from: 0, to: values.count, by: 100) {
            let batch = Array(values[start..<min(start + 100, values.count)])
            let sql = "SELECT " + batch.map { PostgresLiteral.of($0)! }.joined(separator: ", ")
            let row = try await store.read { db in try db.fetchOne(sql: sql, arguments: []) }
            let back = try XCTUnwrap(row, "no row for \(sql)").values
            XCTAssertEqual(back.count, batch.count)
            for (value, got) in zip(batch, back) {
                XCTAssertTrue(Self.same(value, got), "\(value) came back as \(got) (literal \(PostgresLiteral.of(value)!))")
            }
        }
    }

    /// A group's changes go to PostgreSQL as one `DO $tag$ … $tag$` block, its tag one that no
    /// statement holds (looked for as bytes, `PostgresBlock.bytes(of:contain:)`): texts holding
    /// the tag, the tags after it, a combining mark after the tag's last `$` (one character to
    /// Swift, bytes to PostgreSQL) or parts of a tag read back unchanged, the block not refused.
    func testTextsHoldingTheBlocksDollarTagAreWrittenUnchanged() async throws {
        guard let store = try postgresStore("hubbub-block-tag") else { return }
        defer { store.close() }
        let texts = ["$hubbub$", "$hubbub$\u{1E000}", "x$hubbub$y$hubbub1$z", "$hubbub", "hubbub$", "$$", "$hubbub2$ $hubbub$ $hubbub1$",
                     String(repeating: "$", count: 9) + "hubbub$", "\u{E9}$hubbub$\u{1F600}", String(repeating: "a", count: 100_000) + "$hubbub$"]
        try await store.write { db in try db.execute(sql: "CREATE TABLE tag_text (id INTEGER PRIMARY KEY, body TEXT NOT NULL)") }
        // One change of many statements: they go together, in one block.
        try await store.write { db in
            for (i, text) in texts.enumerated() {
                try db.execute(sql: "INSERT INTO tag_text (id, body) VALUES (?, ?)", arguments: [i, text])
            }
        }
        let back = try await store.read { db in try db.fetchAll(sql: "SELECT body FROM tag_text ORDER BY id", arguments: []) }
        XCTAssertEqual(back.map { $0["body"] as String }, texts)
        // The block itself went through: a block cut short by a tag would have failed and been
        // made again statement by statement, which writes the same rows.
        XCTAssertEqual(store.retriedTransactions, 0, "the group's block failed and was made again")
    }

    /// A text holding NUL has no literal (PostgreSQL's texts cannot hold one: the statement goes
    /// with bound values instead); every NaN is written as PostgreSQL documents it, whatever its
    /// sign or payload (Swift's "-nan" or "snan" are the C library's to read, and glibc refuses "snan").
    func testNoLiteralForNULAndNaNAsPostgreSQLSpellsIt() {
        XCTAssertNil(PostgresLiteral.of(.text("a\0b")))
        XCTAssertEqual(PostgresLiteral.of(.real(-.nan)), "'NaN'::float8")
        XCTAssertEqual(PostgresLiteral.of(.real(.signalingNaN)), "'NaN'::float8")
    }

    /// Characters that matter to SQL's lexer (quotes, backslashes, dollar quotes, comments,
    /// placeholders, line ends) or to encodings (controls, U+2028, a byte order mark, the last
    /// code point), picked half the time; any other character the rest.
    static let specials: [Unicode.Scalar] = ["'", "\\", "$", "-", "/", "*", "E", "\"", "?", ";", "\n", "\r", "\t", "\u{1}", "\u{1F}",
                                             "\u{7F}", "\u{85}", "\u{A0}", "\u{2028}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}", "\u{E9}",
                                             "\u{1F600}", "\u{10FFFF}", "x", "u", "0"]

    static func value(_ r: inout SplitMix64) -> SQLValue {
        switch r.next() % 5 {
        case 0:
            return .null
        case 1:
            let edges: [Int64] = [.min, .max, -1, 0, 1, Int64(Int32.min), Int64(Int32.max), Int64(Int32.min) - 1, Int64(Int32.max) + 1]
            return .integer(r.next() % 3 == 0 ? edges[Int(r.next() % UInt64(edges.count))] : Int64(bitPattern: r.next()) >> (r.next() % 64))
        case 2:
            let edges: [Double] = [0, -0.0, .infinity, -.infinity, .nan, -.nan, .signalingNaN, Double(bitPattern: 0x7FF8_0000_0000_0001),
                                   .leastNonzeroMagnitude, -.leastNormalMagnitude, .greatestFiniteMagnitude, 0.1, 1e-5, 1e21, 123_456_789.125]
            return .real(r.next() % 3 == 0 ? edges[Int(r.next() % UInt64(edges.count))] : Double(bitPattern: r.next()))
        case 3:
            var s = String.UnicodeScalarView()
            for _ in 0..<(r.next() % 40) {
                if r.next() % 2 == 0 {
                    s.append(specials[Int(r.next() % UInt64(specials.count))])
                } else if let c = Unicode.Scalar(UInt32(1 + r.next() % 0x10FFFF)) { // surrogates are no characters: skipped
                    s.append(c)
                }
            }
            return .text(String(s))
        default:
            return .blob((0..<(r.next() % 40)).map { _ in UInt8(truncatingIfNeeded: r.next()) })
        }
    }

    /// Equal as stored: doubles by their bits (−0 is not 0) except that any NaN is any NaN (the
    /// server keeps one); texts character by character, not by canonical equivalence.
    static func same(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.real(let x), .real(let y)): x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
        case (.text(let x), .text(let y)): x.unicodeScalars.elementsEqual(y.unicodeScalars)
        default: a == b
        }
    }
}
