import Foundation
import HubbubTestSupport
import Storage
import XCTest

/// The SQLite side of `SQLDatabase`, which binds and reads values through SQLite's C API
/// (`SQLiteStatement`): every kind of value read back as written, a wrong number of values
/// refused, and a query run again from inside its own rows.
final class SQLiteStatementTests: XCTestCase {
    private func store() throws -> Store {
        var migrations = SQLMigrations()
        migrations.registerMigration("v1") { db in
            try db.execute(sql: "CREATE TABLE cell (id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB)", arguments: [])
        }
        return try temporaryStore("hubbub-sqlite-statement", migrations: migrations).store
    }

    func testEveryKindOfValueReadsBackAsWritten() async throws {
        let store = try store()
        defer { store.close() }
        let rows: [[SQLValue]] = [
            [.integer(1), .integer(Int64.min), .real(-0.5), .text("plain"), .blob([0, 1, 255])],
            [.integer(2), .integer(Int64.max), .real(1e300), .text("İstanbul 🚇 \u{0}after a NUL"), .blob([])],
            [.integer(3), .null, .null, .text(""), .null],
        ]
        try await store.write { db in
            for values in rows { try db.execute(sql: "INSERT INTO cell (id, i, r, t, b) VALUES (?, ?, ?, ?, ?)", arguments: SQLArguments(values)) }
        }
        let back = try await store.read { db in try db.fetchAll(sql: "SELECT id, i, r, t, b FROM cell WHERE id >= ? ORDER BY id", arguments: [1]) }
        XCTAssertEqual(back.map(\.values), rows)
        XCTAssertEqual(back.first?.columns.names, ["id", "i", "r", "t", "b"])
        let one = try await store.read { db in try db.fetchOne(sql: "SELECT t FROM cell WHERE id = ?", arguments: [2]) }
        XCTAssertEqual(one?["T"] as String?, "İstanbul 🚇 \u{0}after a NUL", "columns are found whatever their case")
        let none = try await store.read { db in try db.fetchOne(sql: "SELECT t FROM cell WHERE id = ?", arguments: [9]) }
        XCTAssertNil(none)
    }

    func testAWrongNumberOfValuesIsRefused() async throws {
        let store = try store()
        defer { store.close() }
        do {
            _ = try await store.read { db in try db.fetchAll(sql: "SELECT id FROM cell WHERE id = ? AND i = ?", arguments: [1]) }
            XCTFail("a query short of a value ran")
        } catch {}
        do {
            try await store.write { db in try db.execute(sql: "INSERT INTO cell (id) VALUES (?)", arguments: [1, 2]) }
            XCTFail("a change with a value too many ran")
        } catch {}
        let count = try await store.read { db in try db.fetchOne(sql: "SELECT COUNT(*) AS n FROM cell", arguments: [])?["n"] as Int64? }
        XCTAssertEqual(count, 0)
    }

    /// The statement a transaction keeps for a query is stepping while its rows are read: the same
    /// query from inside them runs on a statement of its own, and both read to their end.
    func testAQueryRunFromInsideItsOwnRowsReadsBoth() async throws {
        let store = try store()
        defer { store.close() }
        try await store.write { db in
            for id in 1...5 { try db.execute(sql: "INSERT INTO cell (id, i) VALUES (?, ?)", arguments: [Int64(id), Int64(id * 10)]) }
        }
        let lists = try await store.read { db -> [[Int64]] in
            let sql = "SELECT id, i FROM cell WHERE id > ? ORDER BY id"
            var out: [[Int64]] = []
            try db.forEachRow(sql: sql, arguments: [Int64(3)]) { row in
                // Sharing the outer statement, the inner query would rebind it to 0 and the outer
                // would start again from id 1, for ever: stopped here.
                guard out.count < 3 else { throw CancellationError() }
                let inner = try db.fetchAll(sql: sql, arguments: [Int64(0)])
                out.append([row["id"] as Int64] + inner.map { $0["i"] as Int64 })
            }
            return out
        }
        XCTAssertEqual(lists, [[4, 10, 20, 30, 40, 50], [5, 10, 20, 30, 40, 50]])
    }
}
