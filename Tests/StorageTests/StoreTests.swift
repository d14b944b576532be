import Foundation
import GRDB
import Storage
import XCTest

final class StoreTests: XCTestCase {
    private func makeStore(_ dir: String) throws -> Store {
        var migrations = DatabaseMigrator()
        migrations.registerMigration("items") { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
        }
        return try Store(configuration: .init(directory: dir), migrations: migrations)
    }

    private func tempDir() -> String { NSTemporaryDirectory() + "hubbub-store-\(UUID().uuidString)" }

    func testConcurrentWritesShareTransactionsAndAreAllDurable() async throws {
        let dir = tempDir()
        let store = try makeStore(dir)
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
        let reopened = try makeStore(dir)
        let count = try await reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM item") ?? 0 }
        XCTAssertEqual(count, 2000)
        reopened.close()
    }

    func testAFailingChangeRollsBackAloneAndReportsItsError() async throws {
        let store = try makeStore(tempDir())
        defer { store.close() }
        let changes: [@Sendable (Database) throws -> Void] = [
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

    func testWritesAfterCloseFailClearly() async throws {
        let store = try makeStore(tempDir())
        store.close()
        do {
            try await store.write { db in try db.execute(sql: "INSERT INTO item (name) VALUES ('x')") }
            XCTFail("a closed store must refuse writes")
        } catch let e as StoreError {
            XCTAssertEqual(e, .closed)
        }
    }
}

