import Foundation
import Storage
import Synchronization
import XCTest

/// Which engine a test's store runs on.
public enum TestEngine: Sendable {
    /// SQLite whatever the environment (a test that opens the file beside it, or speaks SQLite's SQL).
    case sqlite
    /// PostgreSQL when `HB_TEST_POSTGRES` is set (scripts/test-postgres.sh), else SQLite.
    case fromEnvironment
    /// PostgreSQL in `cluster` (`postgres://user@host:port`), a database per directory (`TestPostgres.database`).
    case postgres(cluster: String)
}

extension SQLMigrations {
    /// What `registrars` register, in order: `.of(RoomLogSchema.migrations, VenuesDomain.migrations)`.
    public static func of(_ registrars: ((inout SQLMigrations) -> Void)...) -> SQLMigrations {
        var migrations = SQLMigrations()
        for register in registrars { register(&migrations) }
        return migrations
    }
}

/// A store in a fresh directory, `NSTemporaryDirectory()/<label>-<UUID>`, with the migrations a
/// test names. The directory is not made here: `Store` makes it, mode 0o700 (StoreTests checks
/// that mode). `close()` closes every store opened here and removes the directory; `deinit` does
/// the same. Keep it referenced while its stores are in use (a property, `XCTestCase.temporaryStore`,
/// a harness holding it): in a release build a local may go right after its last use.
public final class TemporaryStore: Sendable {
    public let directory: String
    public let engine: TestEngine
    /// What `reopen()` and `openAnother()` migrate unless told otherwise.
    public let migrations: SQLMigrations
    /// The configuration every store here opens with (the engine's URL resolved once).
    public let configuration: Store.Configuration

    private struct Opened {
        /// The store opened last by `init` or `reopen`.
        var current: Store
        /// Every store opened here, to close.
        var all: [Store]
        var closed = false
    }
    private let opened: Mutex<Opened>

    /// The store opened last (by `init` or `reopen`).
    public var store: Store { opened.withLock { $0.current } }

    /// `configure` adjusts the stores' configuration (`maxPendingWrites`); it is kept for reopening.
    public init(_ label: String = "hubbub-test", migrations: SQLMigrations, engine: TestEngine = .sqlite,
                configure: (inout Store.Configuration) -> Void = { _ in }) throws {
        let directory = NSTemporaryDirectory() + "\(label)-\(UUID().uuidString)"
        var configuration = Store.Configuration(directory: directory)
        configure(&configuration)
        switch engine {
        case .sqlite:
            break
        case .fromEnvironment:
            if let cluster = ProcessInfo.processInfo.environment["HB_TEST_POSTGRES"], !cluster.isEmpty {
                configuration.postgresURL = try TestPostgres.database(for: directory, in: cluster)
            }
        case .postgres(let cluster):
            configuration.postgresURL = try TestPostgres.database(for: directory, in: cluster)
        }
        let first: Store
        do {
            first = try Store(configuration: configuration, migrations: migrations)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
        self.directory = directory
        self.engine = engine
        self.migrations = migrations
        self.configuration = configuration
        opened = Mutex(Opened(current: first, all: [first]))
    }

    deinit { close() }

    /// Closes `store` (if the test has not) and opens the same files again: a restart. `migrations`
    /// replaces those given at init for this opening (the full set after an `upTo`).
    @discardableResult
    public func reopen(migrations: SQLMigrations? = nil) throws -> Store {
        store.close()
        let again = try open(migrations)
        opened.withLock { $0.current = again }
        return again
    }

    /// Another store over the same files while `store` stays open (a restarted domain harness).
    public func openAnother(migrations: SQLMigrations? = nil) throws -> Store {
        try open(migrations)
    }

    /// Closes every store opened here and removes the directory (idempotent). A PostgreSQL
    /// database is left where it is.
    public func close() {
        let stores = opened.withLock { o -> [Store] in
            guard !o.closed else { return [] }
            o.closed = true
            return o.all
        }
        guard !stores.isEmpty else { return }
        for s in stores { s.close() }
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func open(_ migrations: SQLMigrations?) throws -> Store {
        let store = try Store(configuration: configuration, migrations: migrations ?? self.migrations)
        opened.withLock { $0.all.append(store) }
        return store
    }
}

extension XCTestCase {
    /// A `TemporaryStore` closed and removed when the test ends (`addTeardownBlock`), which keeps it
    /// alive until then. Usable in `setUpWithError` as well as in a test.
    public func temporaryStore(_ label: String = "hubbub-test", migrations: SQLMigrations, engine: TestEngine = .sqlite,
                               configure: (inout Store.Configuration) -> Void = { _ in }) throws -> TemporaryStore {
        let temporary = try TemporaryStore(label, migrations: migrations, engine: engine, configure: configure)
        addTeardownBlock { temporary.close() }
        return temporary
    }
}
