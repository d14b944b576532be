import Foundation
import Logging
import Metrics
import NIOCore
import PostgresNIO
import Synchronization

/// The store on PostgreSQL (`database.url`): one connection for the writer thread's group
/// transactions, one for transactions apart from them (`Store.writeApart`), a few for reads, each used by one store thread at a time and waited on there.
/// A connection that fails is replaced at its next use (the transaction it was in failed, and its
/// changes were never acknowledged).
final class PostgresEngine: Sendable {
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    let translations = PostgresTranslations()
    private let writer = Mutex<PostgresConnection?>(nil)
    private let apartWriter = Mutex<PostgresConnection?>(nil)
    /// For upkeep apart from the group commit (`Store.writeUpkeep`), so it never delays a lease's
    /// renewal on `apartWriter`.
    private let upkeepWriter = Mutex<PostgresConnection?>(nil)
    private let idleReaders = Mutex<[PostgresConnection]>([])
    private let ids = Atomic<Int>(1)
    /// Group transactions whose first attempt failed and that were made again change by change.
    let retriedGroups = Atomic<Int>(0)
    private let retried = Counter(label: "hubbub_store_retried_transactions_total")
    /// Every connection open now (`dropConnections` closes them all).
    private let open = Mutex<[Int: PostgresConnection]>([:])

    /// (Reads at once are bounded by the store, `Configuration.maxReaders`: so are idle readers.)
    init(url: String, logger: Logger) throws {
        configuration = try Self.configuration(url)
        self.logger = logger
    }

    /// `postgres://user:password@host:port/database[?sslmode=disable|require]`.
    static func configuration(_ url: String) throws -> PostgresConnection.Configuration {
        guard let c = URLComponents(string: url), ["postgres", "postgresql"].contains(c.scheme ?? ""), let host = c.host, !host.isEmpty else {
            throw PostgresStoreError.url("expected postgres://user:password@host:port/database, got \(url.split(separator: "@").last ?? "")")
        }
        let database = c.path.hasPrefix("/") ? String(c.path.dropFirst()) : c.path
        let sslmode = c.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresConnection.Configuration.TLS
        switch sslmode {
        case "disable": tls = .disable
        case "require": tls = .require(try .init(configuration: .makeClientConfiguration()))
        default: throw PostgresStoreError.url("sslmode must be disable or require")
        }
        return .init(host: host, port: c.port ?? 5432, username: c.user ?? "postgres", password: c.password,
                     database: database.isEmpty ? nil : database, tls: tls)
    }

    /// A new connection, waited for on this thread.
    private func connect() throws -> PostgresConnection {
        let result = Mutex<Result<PostgresConnection, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let configuration = self.configuration, logger = self.logger, id = ids.add(1, ordering: .relaxed).oldValue
        Task {
            do {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: id, logger: logger)
                result.withLock { $0 = .success(connection) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        do {
            let connection = try result.withLock { $0! }.get()
            open.withLock { $0[connection.id] = connection }
            connection.closeFuture.whenComplete { [weak self] _ in self?.open.withLock { _ = $0.removeValue(forKey: connection.id) } }
            return connection
        } catch {
            throw PostgresStoreError.connect(String(reflecting: error))
        }
    }

    /// One transaction on the writer connection (the writer thread's alone): `body`, then commit;
    /// on any error a rollback, and the connection is dropped if it is broken.
    func transaction(_ body: (any SQLDatabase) throws -> Void) throws {
        try transaction(on: writer, .careful, body)
    }

    /// A group commit's transaction (`body` runs its changes, each in `inSavepoint`): first all
    /// sent at once, waited for only at the commit; if any change failed, that attempt is rolled
    /// back and the changes are made again, each in a savepoint answered before the next, so the
    /// failed one is undone alone. `body` may so run twice: only the attempt that commits counts.
    /// (One wait per transaction instead of one per change or statement: the writer's round trips
    /// to PostgreSQL, not PostgreSQL's work, bounded its changes per second.)
    func groupTransaction(_ body: (any SQLDatabase) throws -> Void) throws {
        do {
            try transaction(on: writer, .optimistic, body)
        } catch {
            logger.debug("store: a change in the group failed; making them one by one", metadata: ["error": "\(error)"])
            retriedGroups.add(1, ordering: .relaxed)
            retried.increment()
            try transaction(on: writer, .careful, body)
        }
    }

    /// The same on the connection for transactions apart from the group commit (one caller at a
    /// time: the store's queue for them).
    func transactionApart(_ body: (any SQLDatabase) throws -> Void) throws {
        try transaction(on: apartWriter, .careful, body)
    }

    /// The same on the connection for upkeep (one caller at a time: the store's queue for it).
    func transactionUpkeep(_ body: (any SQLDatabase) throws -> Void) throws {
        try transaction(on: upkeepWriter, .careful, body)
    }

    private func transaction(on writer: borrowing Mutex<PostgresConnection?>, _ attempt: PostgresSQLDatabase.Attempt,
                             _ body: (any SQLDatabase) throws -> Void) throws {
        let connection = try writer.withLock { current in
            if let c = current, !c.isClosed { return c }
            current = try connect()
            return current!
        }
        let db = PostgresSQLDatabase(connection, translations: translations, attempt: attempt, logger: logger)
        do {
            try body(db)
            if let spoiled = db.spoiled { throw spoiled }
            try db.commit()
        } catch {
            db.abandon()
            _ = try? db.answers()
            if db.begun { _ = try? db.run("ROLLBACK", [], translate: false) }
            if connection.isClosed { writer.withLock { $0 = nil } }
            throw error
        }
    }

    /// A read in a snapshot (repeatable read, read only) on an idle reader connection, or a new one;
    /// blocks this thread.
    func read<T>(_ query: (any SQLDatabase) throws -> T) throws -> T {
        let connection = try idleReaders.withLock { $0.popLast() } ?? connect()
        let db = PostgresSQLDatabase(connection, translations: translations, logger: logger)
        do {
            db.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let value = try query(db)
            try db.run("COMMIT", [], translate: false)
            idleReaders.withLock { $0.append(connection) }
            return value
        } catch {
            _ = try? db.answers()
            _ = try? db.run("ROLLBACK", [], translate: false)
            if !connection.isClosed { idleReaders.withLock { $0.append(connection) } }
            throw error
        }
    }

    /// Brings the schema up to date: each step not yet applied, in order, in its own transaction,
    /// under an advisory lock (nodes starting together take turns; the second finds it done).
    func migrate(_ migrations: SQLMigrations) throws {
        try transaction { db in
            try db.execute(sql: "SELECT pg_advisory_xact_lock(7324101)")
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS hubbub_migration (id TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)")
            let done = Set(try String.fetchAll(db, sql: "SELECT id FROM hubbub_migration"))
            for step in migrations.steps where !done.contains(step.id) {
                try step.apply(db)
                try db.execute(sql: "INSERT INTO hubbub_migration (id, applied_at) VALUES (?, ?)", arguments: [step.id, Date().timeIntervalSince1970])
                logger.info("store: migrated", metadata: ["step": "\(step.id)"])
            }
        }
    }

    /// Listens on `channel` on a connection of its own: `listening` runs once `LISTEN` is in
    /// place, then `received` for each notification's payload, until the connection ends (this
    /// then throws) or the task is cancelled.
    func listen(_ channel: String, listening: @Sendable () async -> Void, received: @Sendable (String) -> Void) async throws {
        let connection = try await PostgresConnection.connect(configuration: configuration, id: ids.add(1, ordering: .relaxed).oldValue,
                                                              logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.listen(on: channel) { notifications in
            await listening()
            for try await n in notifications { received(n.payload) }
        }
        throw PostgresStoreError.connect("the notification connection ended")
    }

    /// Closes every connection (the server went away: a notification connection just broke). A
    /// query waiting on one fails at once rather than waiting for the driver to notice; each
    /// connection is replaced at its next use.
    func dropConnections() {
        for c in open.withLock({ Array($0.values) }) { let _: EventLoopFuture<Void> = c.close() }
    }

    func close() {
        let connections = writer.withLock { c -> [PostgresConnection] in defer { c = nil }; return c.map { [$0] } ?? [] }
            + apartWriter.withLock { c -> [PostgresConnection] in defer { c = nil }; return c.map { [$0] } ?? [] }
            + upkeepWriter.withLock { c -> [PostgresConnection] in defer { c = nil }; return c.map { [$0] } ?? [] }
            + idleReaders.withLock { r -> [PostgresConnection] in defer { r = [] }; return r }
        for c in connections { try? c.close().wait() }
    }
}
