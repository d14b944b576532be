import Foundation
import HubbubTestSupport
import Storage
import XCTest

/// The store on SQLite, and on PostgreSQL when `HB_TEST_POSTGRES` is set (scripts/test-postgres.sh).
final class StoreTests: XCTestCase {
    private static let items: SQLMigrations = {
        var migrations = SQLMigrations()
        migrations.registerMigration("items") { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
            try db.execute(sql: "CREATE TABLE thing (id INTEGER PRIMARY KEY, t TEXT, i INTEGER, r REAL, b BLOB)")
        }
        return migrations
    }()

    /// A store in a new temporary directory (closed and removed when the test ends); `reopen()` opens its files again.
    private func makeStore(maxPendingWrites: Int = 100_000) throws -> TemporaryStore {
        try temporaryStore("hubbub-store", migrations: Self.items, engine: .fromEnvironment) { configuration in
            configuration.maxPendingWrites = maxPendingWrites
        }
    }

    func testConcurrentWritesShareTransactionsAndAreAllDurable() async throws {
        let temporary = try makeStore()
        let store = temporary.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<2000 {
                group.addTask { try await store.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["n\(i)"]) } }
            }
            try await group.waitForAll()
        }
        let stats = store.commitStats
        XCTAssertEqual(stats.changes, 2000)
        XCTAssertLessThan(stats.transactions, 2000, "writes arriving together must share a commit")
        store.close()
        // A new store over the same files sees every acknowledged write.
        let reopened = try temporary.reopen()
        let count = try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") ?? 0 }
        XCTAssertEqual(count, 2000)
        reopened.close()
    }

    func testAFailingChangeRollsBackAloneAndReportsItsError() async throws {
        let store = try makeStore().store
        defer { store.close() }
        let changes: [@Sendable (any SQLDatabase) throws -> Void] = [
            { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('same')") },
            { db in
                try db.execute(sql: "INSERT INTO item (name) VALUES ('other')")
                try db.execute(sql: "INSERT INTO item (name) VALUES ('same')") // unique violation
            },
            { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('third')") },
        ]
        let failures = await withTaskGroup(of: Bool.self) { group in
            for change in changes { group.addTask { (try? await store.write(change)) == nil } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(failures, 1, "exactly one of the two 'same' inserts fails")
        let names = try await store.read { db in try String.fetchAll(db, sql: "SELECT name FROM item ORDER BY name") }
        XCTAssertTrue(names.contains("third"))
        XCTAssertEqual(names.filter { $0 == "same" }.count, 1)
        // 'other' committed only if its change (b) succeeded.
        XCTAssertEqual(names.contains("other"), names.count == 3)
    }

    /// Changes that fail in a busy group are undone alone and told so, whether the database
    /// refused them or the change threw; every other change of the group commits. (On PostgreSQL a
    /// group's first attempt goes as one block and fails as a whole: it is made again, change by
    /// change.)
    func testFailingChangesInABusyGroupFailAloneAndTheOthersCommit() async throws {
        let store = try makeStore().store
        defer { store.close() }
        try await store.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('taken')") }
        struct Refused: Error {}
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for i in 0..<300 {
                group.addTask {
                    do {
                        try await store.write { db in
                            try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: ["n\(i)"])
                            if i % 7 == 0 { try db.execute(sql: "INSERT INTO item (name) VALUES ('taken')") }
                            if i % 11 == 0 { throw Refused() }
                        }
                        return (i, true)
                    } catch {
                        return (i, false)
                    }
                }
            }
            return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        let shouldFail = Set((0..<300).filter { $0 % 7 == 0 || $0 % 11 == 0 })
        XCTAssertEqual(Set(outcomes.filter { !$0.value }.keys), shouldFail)
        let names = Set(try await store.read { db in try String.fetchAll(db, sql: "SELECT name FROM item") })
        XCTAssertEqual(names, Set(["taken"] + (0..<300).filter { !shouldFail.contains($0) }.map { "n\($0)" }))
        XCTAssertLessThan(store.commitStats.transactions, 300, "changes arriving together share a transaction")
        if store.dialect == .postgres { XCTAssertGreaterThan(store.retriedTransactions, 0, "failed first attempts were made again") }
    }

    /// Values of every kind, awkward ones included, read back as they were written, whether their
    /// change went alone or with others (on PostgreSQL a group's values are written into its
    /// block as literals: quotes, backslashes, the block's own delimiter, comments, signs).
    func testAwkwardValuesReadBackAsWritten() async throws {
        let store = try makeStore().store
        defer { store.close() }
        let texts = ["it's", "back\\slash \\x00 \\'", "$hubbub$ END $hubbub$; DROP TABLE item; --", "e\u{301} 🎉 ÿ", "-- not a comment",
                     "?", "", "'; DELETE FROM thing; --", "$1 $2", "line\nbreak\ttab"]
        let integers: [Int64] = [0, -1, 42, Int64.max, Int64.min, -9_007_199_254_740_993]
        let reals: [Double] = [0.1, -2.5, 1e-300, 1.7976931348623157e308, -0.0, 1732476000.123456, .infinity, -.infinity]
        let blobs: [[UInt8]] = [[], [0], [0, 1, 39, 92, 255], Array("\\x41'".utf8), (0...255).map(UInt8.init)]
        let rows = (0..<40).map { i -> (id: Int64, t: String?, i: Int64?, r: Double?, b: [UInt8]?) in
            (Int64(i + 1), i % 9 == 8 ? nil : texts[i % texts.count], i % 8 == 7 ? nil : integers[i % integers.count],
             i % 10 == 9 ? nil : reals[i % reals.count], i % 7 == 6 ? nil : blobs[i % blobs.count])
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for row in rows {
                group.addTask {
                    try await store.write { db in
                        try db.execute(sql: "INSERT INTO thing (id, t, i, r, b) VALUES (?, ?, ?, ?, ?)",
                                       arguments: [row.id, row.t, row.i, row.r, row.b.map { Data($0) }])
                        // An UPDATE whose values are the same ones, in a WHERE clause as well.
                        try db.execute(sql: "UPDATE thing SET t = ? WHERE id = ? AND (t = ? OR t IS NULL)", arguments: [row.t, row.id, row.t])
                    }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(store.retriedTransactions, 0, "every group's first attempt commits: no value broke its block")
        let read = try await store.read { db in try SQLRow.fetchAll(db, sql: "SELECT id, t, i, r, b FROM thing ORDER BY id") }
        XCTAssertEqual(read.count, rows.count)
        for (row, got) in zip(rows, read) {
            XCTAssertEqual(got["id"] as Int64, row.id)
            XCTAssertEqual(got["t"] as String?, row.t, "row \(row.id)")
            XCTAssertEqual(got["i"] as Int64?, row.i, "row \(row.id)")
            XCTAssertEqual(got["r"] as Double?, row.r, "row \(row.id)")
            XCTAssertEqual((got["b"] as Data?).map { [UInt8]($0) }, row.b, "row \(row.id)")
        }
    }

    /// Behind a stalled disk the queue stops growing at `maxPendingWrites`: `write` is refused at
    /// once with `overloaded` and `acceptsWrites` turns false; a change already applied elsewhere
    /// (`submit`) is still taken, and everything queued commits once the writer moves.
    func testAFullWriteQueueRefusesNewWritesInsteadOfGrowing() async throws {
        let store = try makeStore(maxPendingWrites: 2).store
        defer { store.close() }
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        func submit(_ name: String, _ change: @escaping @Sendable (any SQLDatabase) throws -> Void) {
            done.enter()
            store.submit(change) { _ in done.leave() }
        }
        // The writer takes this one and stalls inside its transaction, as on a hung disk.
        submit("stall") { db in
            started.signal()
            release.wait()
            try db.execute(sql: "INSERT INTO item (name) VALUES ('stall')")
        }
        started.wait()
        XCTAssertTrue(store.acceptsWrites)
        for name in ["a", "b"] {
            submit(name) { db in try db.execute(sql: "INSERT INTO item (name) VALUES (?)", arguments: [name]) }
        }
        XCTAssertFalse(store.acceptsWrites, "two changes wait: the queue is full")
        do {
            try await store.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('refused')") }
            XCTFail("a write behind a full queue must be refused")
        } catch let e as StoreError {
            XCTAssertEqual(e, .overloaded)
        }
        submit("applied") { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('applied')") }
        release.signal()
        done.wait()
        let committed = try await store.read { db in try String.fetchAll(db, sql: "SELECT name FROM item ORDER BY name") }
        XCTAssertEqual(committed, ["a", "applied", "b", "stall"])
        XCTAssertTrue(store.acceptsWrites)
    }

    /// The database and its WAL and shared-memory files are readable by the server's user only,
    /// and so is the directory holding them.
    func testDatabaseFilesAreTheOwnersOnly() async throws {
        let temporary = try makeStore()
        let dir = temporary.directory
        let store = temporary.store
        try await store.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('x')") }
        let fm = FileManager.default
        func mode(_ path: String) throws -> Int { (try fm.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1 }
        XCTAssertEqual(try mode(dir), 0o700)
        for name in ["hubbub.sqlite", "hubbub.sqlite-wal", "hubbub.sqlite-shm"] {
            XCTAssertEqual(try mode(dir + "/" + name), 0o600, name)
        }
        store.close()
        // An older install's files are tightened when the store opens them.
        try fm.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dir + "/hubbub.sqlite")
        let reopened = try temporary.reopen()
        defer { reopened.close() }
        XCTAssertEqual(try mode(dir + "/hubbub.sqlite"), 0o600)
    }

    func testWritesAfterCloseFailClearly() async throws {
        let store = try makeStore().store
        store.close()
        do {
            try await store.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('x')") }
            XCTFail("a closed store must refuse writes")
        } catch let e as StoreError {
            XCTAssertEqual(e, .closed)
        }
    }
}

