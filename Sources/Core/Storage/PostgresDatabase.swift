import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// `SQLDatabase` over one PostgreSQL connection, for the length of one transaction or read. Each
/// statement is translated (`PostgresDialect`, once per distinct SQL) and handed to the
/// connection. Statements whose answer the change does not need (`execute`, cached statements)
/// are sent without waiting: the connection runs them in order while this thread goes on, so a
/// change of several statements costs one wait rather than one per statement. In an optimistic
/// attempt (a group commit's first) they are not even sent one by one: they wait in a `DO` block
/// (`PostgresBlock`) that goes as one statement. Calls that need an answer (fetches, `changes`,
/// `insert`, a savepoint's end, the commit) send what waits and wait for everything sent before
/// them, and throw the first failure among it. The waits happen on the calling thread: the
/// store's own threads call this, never an event loop or the concurrency pool.
final class PostgresSQLDatabase: SQLDatabase {
    /// How the changes of a transaction are kept apart (see `PostgresEngine.groupTransaction`).
    enum Attempt {
        /// Each change in a savepoint, its statements answered before the next change: a change
        /// that fails is undone alone.
        case careful
        /// No savepoints and no waits between changes: the whole transaction waits once, at its
        /// commit. A change that fails (or throws) spoils the attempt: it is rolled back as a
        /// whole and made again carefully.
        case optimistic
    }

    private let connection: PostgresConnection
    private let logger: Logger
    private let translations: PostgresTranslations
    private let attempt: Attempt
    /// Why an optimistic attempt cannot commit (a change threw).
    private(set) var spoiled: (any Error)?
    /// Statements sent and not yet waited for, oldest first, with their SQL (for errors).
    private var unanswered: [(future: EventLoopFuture<PostgresQueryResult>, sql: String)] = []
    /// Optimistic attempts: statements not sent yet, to go together as one `DO` block.
    private var block = PostgresBlock()
    /// `BEGIN` was sent. It goes before the first statement sent (not at once): a transaction
    /// whose statements all wait in the block needs none, the block being one statement, which
    /// PostgreSQL runs in a transaction of its own (one round trip for the whole group).
    private(set) var begun = false
    private var savepoints = 0

    init(_ connection: PostgresConnection, translations: PostgresTranslations, attempt: Attempt = .careful, logger: Logger) {
        self.connection = connection
        self.attempt = attempt
        self.translations = translations
        self.logger = logger
    }

    var dialect: SQLDialect { .postgres }

    func execute(sql: String, arguments: SQLArguments) throws {
        try send(sql, arguments, answerRead: false)
    }

    func fetchAll(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        try run(sql, arguments)
    }

    func fetchOne(sql: String, arguments: SQLArguments) throws -> SQLRow? { try run(sql, arguments).first }

    func forEachRow(sql: String, arguments: SQLArguments, _ body: (SQLRow) throws -> Void) throws {
        for row in try run(sql, arguments) { try body(row) }
    }

    func cachedStatement(sql: String) throws -> any SQLStatement { PostgresSQLStatement(db: self, sql: sql) }

    func changes(sql: String, arguments: SQLArguments) throws -> Int {
        try send(sql, arguments)
        return try answers().count ?? 0
    }

    func insert(sql: String, arguments: SQLArguments, returning column: String) throws -> Int64 {
        guard let row = try run(sql + " RETURNING " + column, arguments).first, let id = Int64(sqlValue: row.values[0]) else {
            throw PostgresStoreError.query("\(sql): no \(column) returned")
        }
        return id
    }

    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        if attempt == .optimistic {
            do { return try body() } catch {
                spoiled = spoiled ?? error
                throw error
            }
        }
        savepoints += 1
        let name = "s\(savepoints)"
        try send("SAVEPOINT \(name)", [], translate: false)
        do {
            let value = try body()
            // Its statements' failures are its own: known before the savepoint is let go.
            try answers()
            try send("RELEASE SAVEPOINT \(name)", [], translate: false)
            return value
        } catch {
            _ = try? answers()
            try send("ROLLBACK TO SAVEPOINT \(name)", [], translate: false)
            try answers()
            throw error
        }
    }

    /// Runs `sql` (translated, each of its statements in turn) and returns the last one's rows,
    /// once it and everything sent before it have answered.
    @discardableResult
    func run(_ sql: String, _ arguments: SQLArguments, translate: Bool = true) throws -> [SQLRow] {
        try send(sql, arguments, translate: translate)
        return try answers().rows
    }

    /// Sends `sql` (each of its statements) without waiting for the answer. In an optimistic
    /// attempt statements that can wait in a `DO` block do, until something needs an answer.
    /// `answerRead`: the caller waits for this statement's own answer (its rows or count), so it
    /// is never put in a block.
    func send(_ sql: String, _ arguments: SQLArguments, translate: Bool = true, answerRead: Bool = true) throws {
        guard translate else {
            sendBlock()
            enqueue(sql, arguments)
            return
        }
        let statements = try translations.statements(sql, db: self)
        guard statements.count <= 1 || arguments.values.isEmpty else {
            throw PostgresStoreError.query("several statements with arguments: \(sql)")
        }
        for statement in statements {
            if attempt == .optimistic, !answerRead, block.add(statement, arguments) { continue }
            sendBlock()
            enqueue(statement.text, arguments)
        }
    }

    /// Sends the statements gathered for a block (one alone goes as itself, with its values
    /// bound); `transaction: false`: as the whole transaction, without `BEGIN`.
    private func sendBlock(transaction: Bool = true) {
        guard !block.isEmpty else { return }
        if block.statements.count == 1 {
            enqueue(block.statements[0].statement.text, block.statements[0].arguments, transaction: transaction)
        } else {
            enqueue(block.text, [], transaction: transaction)
        }
        block.removeAll()
    }

    /// Opens the transaction now with `statement` (a read's `BEGIN ISOLATION LEVEL …`).
    func begin(_ statement: String) {
        sendBlock()
        begun = true
        enqueue(statement, [], transaction: false)
    }

    /// Drops the statements not sent yet (the transaction is being rolled back).
    func abandon() { block.removeAll() }

    /// Ends the transaction: `COMMIT`, or, if nothing was sent yet, the block by itself.
    func commit() throws {
        guard begun else {
            if !block.isEmpty { sendBlock(transaction: false) }
            try answers()
            return
        }
        try run("COMMIT", [], translate: false)
    }

    private func enqueue(_ statement: String, _ arguments: SQLArguments, transaction: Bool = true) {
        if transaction && !begun {
            begun = true
            enqueue("BEGIN", [], transaction: false)
        }
        var binds = PostgresBindings(capacity: arguments.values.count)
        for value in arguments.values { Self.bind(value, into: &binds) }
        unanswered.append((connection.query(PostgresQuery(unsafeSQL: statement, binds: binds), logger: logger), statement))
    }

    /// Waits for every statement sent so far; throws the first one's failure (the ones after it
    /// failed only because the transaction was aborted). Returns the last one's rows and count.
    @discardableResult
    func answers() throws -> (rows: [SQLRow], count: Int?) {
        sendBlock()
        guard let last = unanswered.last else { return ([], nil) }
        let sent = unanswered
        unanswered.removeAll(keepingCapacity: true)
        let all = EventLoopFuture.whenAllComplete(sent.map(\.future), on: last.future.eventLoop)
        let results: [Result<PostgresQueryResult, any Error>]
        do {
            results = try Self.wait(for: all, on: connection)
        } catch let e as PostgresStoreError {
            throw e
        } catch {
            throw PostgresStoreError.query("\(String(reflecting: error)) in: \(last.sql)")
        }
        for (i, result) in results.enumerated() {
            if case .failure(let error) = result {
                throw PostgresStoreError.query("\(String(reflecting: error)) in: \(sent[i].sql.prefix(2000))")
            }
        }
        guard case .success(let result) = results.last else { return ([], nil) }
        return (Self.rows(result), result.metadata.rows)
    }

    /// A future's value, waited for on this (store) thread. A query on a connection the server
    /// closed (PostgreSQL stopped or restarted) can be left unanswered by the driver: the wait
    /// looks at the connection every half second and gives up as soon as it is closed.
    static func wait<T: Sendable>(for future: EventLoopFuture<T>, on connection: PostgresConnection) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<T, any Error>?>(nil)
        future.whenComplete { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        while done.wait(timeout: .now() + .milliseconds(500)) == .timedOut {
            if connection.isClosed, outcome.withLock({ $0 }) == nil {
                throw PostgresStoreError.connect("the connection to PostgreSQL closed while a query waited")
            }
        }
        return try outcome.withLock { $0! }.get()
    }

    static func bind(_ value: SQLValue, into binds: inout PostgresBindings) {
        switch value {
        case .null: binds.appendNull()
        case .integer(let n): binds.append(n)
        case .real(let d): binds.append(d)
        case .text(let s): binds.append(s)
        case .blob(let b): binds.append(ByteBuffer(bytes: b))
        }
    }

    static func rows(_ result: PostgresQueryResult) -> [SQLRow] {
        guard let first = result.rows.first else { return [] }
        let columns = SQLColumns(first.map(\.columnName))
        return result.rows.map { row in SQLRow(columns: columns, values: row.map(value(of:))) }
    }

    static func value(of cell: PostgresCell) -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8, .oid:
            return (try? cell.decode(Int64.self)).map(SQLValue.integer) ?? .null
        case .float4, .float8, .numeric:
            return (try? cell.decode(Double.self)).map(SQLValue.real) ?? .null
        case .bool:
            return (try? cell.decode(Bool.self)).map { .integer($0 ? 1 : 0) } ?? .null
        case .bytea:
            return (try? cell.decode(Data.self)).map { .blob(Array($0)) } ?? .null
        default:
            return (try? cell.decode(String.self)).map(SQLValue.text) ?? .null
        }
    }
}

/// A statement on PostgreSQL: sent as it is each time, without waiting (see
/// `PostgresSQLDatabase`); its translation is cached.
final class PostgresSQLStatement: SQLStatement {
    let db: PostgresSQLDatabase
    let sql: String

    init(db: PostgresSQLDatabase, sql: String) {
        self.db = db
        self.sql = sql
    }

    func execute(arguments: SQLArguments) throws { try db.execute(sql: sql, arguments: arguments) }

    func run(_ bind: (inout any SQLBinder) -> Void) throws {
        var binder: any SQLBinder = Collector()
        bind(&binder)
        try db.execute(sql: sql, arguments: SQLArguments((binder as! Collector).values))
    }

    struct Collector: SQLBinder {
        var values: [SQLValue] = []
        mutating func text(_ value: String?) { values.append(value.sqlValue) }
        mutating func double(_ value: Double?) { values.append(value.sqlValue) }
        mutating func integer(_ value: Int64?) { values.append(value.sqlValue) }
    }
}

/// Domains' SQL in PostgreSQL's dialect, translated once per distinct statement text (a hot
/// path runs the same few statements for every change), and tables' primary keys, read from
/// PostgreSQL's catalog once each (for `INSERT OR REPLACE`).
final class PostgresTranslations: Sendable {
    /// Distinct texts kept (statements built with a varying number of placeholders are many).
    static let capacity = 4096
    private let known = Mutex<[String: [PostgresStatement]]>([:])
    private let keys = Mutex<[String: [String]]>([:])

    func statements(_ sql: String, db: PostgresSQLDatabase) throws -> [PostgresStatement] {
        if let done = known.withLock({ $0[sql] }) { return done }
        let statements: [PostgresStatement]
        do {
            statements = try PostgresDialect.statements(sql) { table in try? self.primaryKey(of: table, db: db) }.map(PostgresStatement.init)
        } catch {
            throw PostgresStoreError.query(error.reason)
        }
        known.withLock { if $0.count < Self.capacity { $0[sql] = statements } }
        return statements
    }

    private func primaryKey(of table: String, db: PostgresSQLDatabase) throws -> [String] {
        if let key = keys.withLock({ $0[table] }) { return key }
        let rows = try db.run("""
            SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = $1::regclass AND i.indisprimary
            """, [table], translate: false)
        let key = rows.map { $0[0] as String }
        keys.withLock { $0[table] = key }
        return key
    }
}

enum PostgresStoreError: Error, CustomStringConvertible {
    case query(String)
    case url(String)
    case connect(String)

    var description: String {
        switch self {
        case .query(let m): "PostgreSQL: \(m)"
        case .url(let m): "database.url: \(m)"
        case .connect(let m): "PostgreSQL: could not connect: \(m)"
        }
    }
}
