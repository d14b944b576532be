import Foundation
import GRDB
import Logging
import Metrics
import Synchronization

/// The durable store: by default one SQLite database in WAL mode under the data directory, or
/// PostgreSQL (`database.url`), which several nodes may share. Domains see it only through
/// `SQLDatabase` (their SQL, with `?` placeholders, translated for PostgreSQL) and `SQLMigrations`:
/// the engine behind it (GRDB over SQLite, or PostgresNIO) is the store's alone.
///
/// Writes are group-committed: every `write` waits until its change is inside a committed
/// transaction on disk (`synchronous = FULL`), but all writes that arrive while one commit is
/// in progress share the next transaction, so an fsync serves hundreds of changes under load.
/// All database work runs on threads of the store's own, never on Swift's cooperative pool.
public final class Store: Sendable {
    /// Settings of the store; every limit has a default.
    public struct Configuration: Sendable {
        /// Directory holding `hubbub.sqlite` and its WAL.
        public var directory: String
        /// Most changes in one transaction.
        public var maxBatch: Int = 1000
        /// Readers that may run at once.
        public var maxReaders: Int = 4
        /// Most changes waiting for the writer: beyond it `write` refuses at once
        /// (`StoreError.overloaded`) and `acceptsWrites` is false, instead of memory queueing
        /// without bound behind a slow disk.
        public var maxPendingWrites: Int = 100_000
        /// SQLite's page cache per connection (the writer and each reader), in KiB.
        public var cacheKiB: Int = 2048
        /// The writer connection's page cache, in KiB (bulk writes touch many pages).
        public var writerCacheKiB: Int = 32_768
        /// How long a SQLite connection waits for a lock another process holds on the file, in seconds.
        public var busyTimeoutSeconds: Double = 5
        /// PostgreSQL instead of SQLite: `postgres://user:password@host:port/database` (`database.url`);
        /// nil or empty: SQLite in `directory`.
        public var postgresURL: String?

        public init(directory: String) { self.directory = directory }
    }

    /// The engine behind the store.
    private enum Engine: Sendable {
        /// SQLite in the data directory (the default: one node, no external service).
        case sqlite(DatabasePool)
        /// PostgreSQL at `Configuration.postgresURL` (several nodes share it).
        case postgres(PostgresEngine)
    }

    private let engine: Engine
    private let committer: GroupCommitter
    private let readQueue: DispatchQueue
    private let readSlots: DispatchSemaphore
    private let apartQueue = DispatchQueue(label: "hubbub.store.apart")
    private let upkeepQueue = DispatchQueue(label: "hubbub.store.upkeep")
    /// Reads running and waiting for a reader connection (`/metrics`: the pool's use).
    private let readsRunning = Gauge(label: "hubbub_store_reads_running")
    private let readsWaiting = Gauge(label: "hubbub_store_reads_waiting")
    private let readCounts = Mutex<(running: Int, waiting: Int)>((0, 0))

    /// Which SQL the store speaks.
    public var dialect: SQLDialect {
        if case .postgres = engine { return .postgres }
        return .sqlite
    }

    /// Opens (creating if needed) the database and brings its schema up to date.
    public init(configuration: Configuration, migrations domainMigrations: SQLMigrations, logger: Logger = Logger(label: "hubbub.store")) throws {
        var migrations = domainMigrations
        Self.registerProbe(&migrations)
        try FileManager.default.createDirectory(atPath: configuration.directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let transaction: GroupCommitter.Transaction
        if let url = configuration.postgresURL, !url.isEmpty {
            let postgres = try PostgresEngine(url: url, logger: logger)
            try postgres.migrate(migrations)
            engine = .postgres(postgres)
            transaction = { body in try postgres.groupTransaction(body) }
        } else {
            let pool = try Self.openSQLite(configuration, migrations: migrations)
            engine = .sqlite(pool)
            transaction = { body in try pool.write { db in try body(SQLiteDatabase(db)) } }
        }
        committer = GroupCommitter(transaction: transaction, maxBatch: configuration.maxBatch, maxPending: configuration.maxPendingWrites,
                                   logger: logger, probe: Self.probe)
        readQueue = DispatchQueue(label: "hubbub.store.read", attributes: .concurrent)
        readSlots = DispatchSemaphore(value: configuration.maxReaders)
    }

    private static func openSQLite(_ configuration: Configuration, migrations: SQLMigrations) throws -> DatabasePool {
        var config = GRDB.Configuration()
        config.maximumReaderCount = configuration.maxReaders
        // Another process on the file (an operator's sqlite3, a backup, the server before a restart
        // closing its last connection, which checkpoints under an exclusive lock) is waited for, not
        // an error at once.
        config.busyMode = .timeout(configuration.busyTimeoutSeconds)
        config.prepareDatabase { db in
            // FULL: a commit is on disk when it returns (WAL mode's default of NORMAL is not).
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            // A negative size is in KiB: the cache is bounded by configuration, not by the database's size.
            try db.execute(sql: "PRAGMA cache_size = -\(max(64, configuration.cacheKiB))")
        }
        let path = (configuration.directory as NSString).appendingPathComponent("hubbub.sqlite")
        try Store.restrictToOwner(path)
        let pool = try DatabasePool(path: path, configuration: config)
        // GRDB's migrator keeps which steps ran (its `grdb_migrations` table, as before this layer).
        var migrator = DatabaseMigrator()
        for step in migrations.steps { migrator.registerMigration(step.id) { db in try step.apply(SQLiteDatabase(db)) } }
        try migrator.migrate(pool)
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA cache_size = -\(max(64, configuration.writerCacheKiB))") }
        return pool
    }

    /// Accounts, password hashes and everyone's history are in the database: only the server's
    /// user may read it. The file is created 0600 before SQLite opens it (SQLite gives its WAL and
    /// shared-memory files the database file's mode), and an older install's files are tightened.
    private static func restrictToOwner(_ path: String) throws {
        let fm = FileManager.default
        if !fm.fileExists(atPath: path) {
            guard fm.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw StoreError.cannotCreate(path)
            }
        }
        for file in [path, path + "-wal", path + "-shm"] where fm.fileExists(atPath: file) {
            try fm.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
    }

    /// The store's own row, rewritten by the writer's probe while commits fail.
    private static func registerProbe(_ migrations: inout SQLMigrations) {
        migrations.registerMigration("store.v1") { db in
            try db.execute(sql: "CREATE TABLE store_probe (id INTEGER PRIMARY KEY, at DOUBLE PRECISION NOT NULL)", arguments: [])
        }
    }

    /// A change that needs the disk as any other does (a page written, not only read).
    private static func probe(_ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT INTO store_probe (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at",
                       arguments: [Date().timeIntervalSince1970])
    }

    /// Why the store cannot commit now (the disk is full, read-only, an I/O error; the engine's
    /// words), nil when it can: what `/healthz` reports. It clears by itself: while it is set the
    /// writer tries a small change every second.
    public var fault: String? { committer.currentFault }

    /// Notes a change's failure that says the storage itself is at fault, not the change.
    private func noteIfStorageFault(_ error: Error) {
        guard let e = error as? DatabaseError else { return }
        switch e.resultCode {
        case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_CORRUPT, .SQLITE_NOTADB:
            committer.noteFault(error)
        default: break
        }
    }

    /// Runs `change` inside the next group transaction and returns once that transaction is
    /// durable. A change that throws is rolled back alone (its savepoint); the others commit.
    /// `change` may run more than once (its group was retried, see `GroupCommitter`): only the
    /// run that commits counts, so it does nothing outside the database but return its value.
    public func write<T: Sendable>(_ change: @escaping @Sendable (any SQLDatabase) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            committer.submit(admit: true) { db in
                do {
                    let value = try db.inSavepoint { try change(db) }
                    return { continuation.resume(returning: value) }
                } catch {
                    self.noteIfStorageFault(error)
                    return { continuation.resume(throwing: error) }
                }
            } failed: { error in
                continuation.resume(throwing: error)
            }
        }
    }

    /// Runs `change` in a transaction of its own, outside the group commit, and returns once it is
    /// committed. On PostgreSQL it has a connection of its own, so a backlog of changes waiting
    /// for the group commit does not delay it: for the cluster's leases, which must be renewed on
    /// time whatever the write load. On SQLite (one node, no leases) it joins the group commit.
    public func writeApart<T: Sendable>(_ change: @escaping @Sendable (any SQLDatabase) throws -> T) async throws -> T {
        guard case .postgres(let postgres) = engine else { return try await write(change) }
        return try await alone(on: apartQueue, change) { body in try postgres.transactionApart(body) }
    }

    /// Runs `change` in a transaction of its own, outside the group commit and apart from the
    /// leases' connection (`writeApart`), and returns once it is committed: for upkeep of rows every
    /// node writes (a corridor's first row, the marks of corridors in use), which may wait on
    /// another node's lock without holding up a group's changes or a lease's renewal (the marks
    /// once shared the leases' connection, and three nodes' leases lapsed behind them). On SQLite
    /// (one node) it joins the group commit.
    public func writeUpkeep<T: Sendable>(_ change: @escaping @Sendable (any SQLDatabase) throws -> T) async throws -> T {
        guard case .postgres(let postgres) = engine else { return try await write(change) }
        return try await alone(on: upkeepQueue, change) { body in try postgres.transactionUpkeep(body) }
    }

    /// Runs `change` through `transaction` (one of the engine's connections of its own) on `queue`,
    /// one at a time, and returns its value once committed.
    private func alone<T: Sendable>(on queue: DispatchQueue, _ change: @escaping @Sendable (any SQLDatabase) throws -> T,
                                    transaction: @escaping @Sendable (((any SQLDatabase) throws -> Void)) throws -> Void) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                do {
                    var value: T?
                    try transaction { db in value = try change(db) }
                    continuation.resume(returning: value!)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Whether the write queue has room (`maxPendingWrites`). A caller that changes its memory
    /// before it hands the change to `submit` asks this first and refuses while it is false: a
    /// change already applied must not be refused by the store. (Several callers may pass the check
    /// together, so the queue can exceed the bound by about the number of threads submitting.)
    public var acceptsWrites: Bool { committer.hasRoom }

    /// Queues `change` for the next group transaction without waiting: `completion` runs on the
    /// store's writer thread once that transaction is durable (or failed, or this change threw,
    /// in which case only its savepoint was rolled back), or at once on this thread if the store
    /// is closed. Changes submitted one after another are applied in that order. For actors that
    /// must not suspend (and be re-entered) while a change they already applied in memory becomes
    /// durable; they check `acceptsWrites` before applying it.
    /// Like `write`'s, `change` may run more than once; only the run that commits counts.
    public func submit(_ change: @escaping @Sendable (any SQLDatabase) throws -> Void,
                       completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
        committer.submit(admit: false) { db in
            do {
                try db.inSavepoint { try change(db) }
                return { completion(.success(())) }
            } catch {
                self.noteIfStorageFault(error)
                return { completion(.failure(error)) }
            }
        } failed: { error in
            completion(.failure(error))
        }
    }

    /// Runs a read-only query off the cooperative pool.
    public func read<T: Sendable>(_ query: @escaping @Sendable (any SQLDatabase) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            readQueue.async { [self] in
                countRead(waiting: 1)
                readSlots.wait()
                countRead(running: 1, waiting: -1)
                defer {
                    countRead(running: -1)
                    readSlots.signal()
                }
                do { continuation.resume(returning: try self.readNow(query)) } catch { continuation.resume(throwing: error) }
            }
        }
    }

    private func countRead(running: Int = 0, waiting: Int = 0) {
        let now = readCounts.withLock { counts in
            counts.running += running
            counts.waiting += waiting
            return counts
        }
        readsRunning.record(now.running)
        readsWaiting.record(now.waiting)
    }

    /// Synchronous read, for start-up (loading state before serving).
    public func readNow<T>(_ query: (any SQLDatabase) throws -> T) throws -> T {
        switch engine {
        case .sqlite(let pool): try pool.read { try query(SQLiteDatabase($0)) }
        case .postgres(let postgres): try postgres.read(query)
        }
    }

    /// PostgreSQL's notifications on `channel`, on a connection of their own (see
    /// `PostgresEngine.listen`); throws at once on SQLite, which has none (one node hears its own
    /// commits). Returns only by throwing: the connection ended, or the task was cancelled.
    public func listen(_ channel: String, listening: @Sendable () async -> Void, received: @Sendable (String) -> Void) async throws {
        guard case .postgres(let postgres) = engine else { throw StoreError.closed }
        try await postgres.listen(channel, listening: listening, received: received)
    }

    /// PostgreSQL: closes every connection, so queries waiting on a server that went away fail at
    /// once and the next use connects afresh (see `PostgresEngine.dropConnections`). Nothing on SQLite.
    public func dropConnections() {
        if case .postgres(let postgres) = engine { postgres.dropConnections() }
    }

    /// Commits pending changes and stops the writer (idempotent).
    public func close() {
        committer.stop()
        if case .postgres(let postgres) = engine { postgres.close() }
    }

    deinit { committer.stop() }

    /// Transactions committed and changes in them, since start (for metrics and benchmarks).
    public var commitStats: (transactions: Int, changes: Int) { committer.stats }

    /// Group transactions made a second time, change by change, because a change in the first
    /// attempt failed (PostgreSQL; always 0 on SQLite, which makes each change in its savepoint).
    public var retriedTransactions: Int {
        if case .postgres(let postgres) = engine { return postgres.retriedGroups.load(ordering: .relaxed) }
        return 0
    }
}
