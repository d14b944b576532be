import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// `SQLDatabase` over one PostgreSQL connection, for the length of one transaction or read. Each
/// statement is translated (`PostgresDialect`) and run to completion on the calling thread, which
/// waits for it: the store's own threads call it, never an event loop or the concurrency pool.
final class PostgresSQLDatabase: SQLDatabase {
    private let connection: PostgresConnection
    private let logger: Logger
    private let keys: PrimaryKeys
    private(set) var changesCount = 0
    private var savepoints = 0

    init(_ connection: PostgresConnection, keys: PrimaryKeys, logger: Logger) {
        self.connection = connection
        self.keys = keys
        self.logger = logger
    }

    var dialect: SQLDialect { .postgres }

    func execute(sql: String, arguments: SQLArguments) throws {
        _ = try run(sql, arguments)
    }

    func fetchAll(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        try run(sql, arguments)
    }

    func fetchOne(sql: String, arguments: SQLArguments) throws -> SQLRow? { try run(sql, arguments).first }

    func forEachRow(sql: String, arguments: SQLArguments, _ body: (SQLRow) throws -> Void) throws {
        for row in try run(sql, arguments) { try body(row) }
    }

    func cachedStatement(sql: String) throws -> any SQLStatement { PostgresSQLStatement(db: self, sql: sql) }

    func insert(sql: String, arguments: SQLArguments, returning column: String) throws -> Int64 {
        guard let row = try run(sql + " RETURNING " + column, arguments).first, let id = Int64(sqlValue: row.values[0]) else {
            throw PostgresStoreError.query("\(sql): no \(column) returned")
        }
        return id
    }

    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        savepoints += 1
        let name = "s\(savepoints)"
        try run("SAVEPOINT \(name)", [], translate: false)
        do {
            let value = try body()
            try run("RELEASE SAVEPOINT \(name)", [], translate: false)
            return value
        } catch {
            try run("ROLLBACK TO SAVEPOINT \(name)", [], translate: false)
            throw error
        }
    }

    /// Runs `sql` (translated, each of its statements in turn) and returns the last one's rows.
    @discardableResult
    func run(_ sql: String, _ arguments: SQLArguments, translate: Bool = true) throws -> [SQLRow] {
        let statements: [String]
        if translate {
            do {
                statements = try PostgresDialect.statements(sql) { table in try? self.keys.of(table, on: self) }
            } catch {
                throw PostgresStoreError.query(error.reason)
            }
        } else {
            statements = [sql]
        }
        guard statements.count <= 1 || arguments.values.isEmpty else {
            throw PostgresStoreError.query("several statements with arguments: \(sql)")
        }
        var rows: [SQLRow] = []
        for statement in statements {
            var binds = PostgresBindings()
            for value in arguments.values { Self.bind(value, into: &binds) }
            let result: PostgresQueryResult
            do {
                result = try Self.wait(for: connection.query(PostgresQuery(unsafeSQL: statement, binds: binds), logger: logger),
                                       on: connection)
            } catch let e as PostgresStoreError {
                throw e
            } catch {
                throw PostgresStoreError.query("\(String(reflecting: error)) in: \(statement)")
            }
            changesCount = result.metadata.rows ?? 0
            rows = Self.rows(result)
        }
        return rows
    }

    /// A query's result, waited for on this (store) thread. A query on a connection the server
    /// closed (PostgreSQL stopped or restarted) can be left unanswered by the driver: the wait
    /// looks at the connection every half second and gives up as soon as it is closed.
    static func wait(for future: EventLoopFuture<PostgresQueryResult>, on connection: PostgresConnection) throws -> PostgresQueryResult {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<PostgresQueryResult, any Error>?>(nil)
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

/// A statement on PostgreSQL: run as it is each time (PostgreSQL plans it quickly; a connection's
/// prepared statements could come later).
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

/// Tables' primary keys, read from PostgreSQL's catalog once each (for `INSERT OR REPLACE`).
final class PrimaryKeys: Sendable {
    private let known = Mutex<[String: [String]]>([:])

    func of(_ table: String, on db: PostgresSQLDatabase) throws -> [String] {
        if let key = known.withLock({ $0[table] }) { return key }
        let rows = try db.run("""
            SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = $1::regclass AND i.indisprimary
            """, [table], translate: false)
        let key = rows.map { $0[0] as String }
        known.withLock { $0[table] = key }
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
