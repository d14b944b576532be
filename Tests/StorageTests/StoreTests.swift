import Foundation
import Storage
import XCTest

final class StoreTests: XCTestCase {
    private func makeStore(_ dir: String, maxPendingWrites: Int = 100_000) throws -> Store {
        var migrations = SQLMigrations()
        migrations.registerMigration("items") { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
        }
        var configuration = Store.Configuration(directory: dir)
        configuration.maxPendingWrites = maxPendingWrites
        return try Store(configuration: configuration, migrations: migrations)
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

    /// Behind a stalled disk the queue stops growing at `maxPendingWrites`: `write` is refused at
    /// once with `overloaded` and `acceptsWrites` turns false; a change already applied elsewhere
    /// (`submit`) is still taken, and everything queued commits once the writer moves.
    func testAFullWriteQueueRefusesNewWritesInsteadOfGrowing() async throws {
        let store = try makeStore(tempDir(), maxPendingWrites: 2)
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
        let dir = tempDir()
        let store = try makeStore(dir)
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
        let reopened = try makeStore(dir)
        defer { reopened.close() }
        XCTAssertEqual(try mode(dir + "/hubbub.sqlite"), 0o600)
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

