import Foundation
import GRDB
import GRDBSQLite

/// `SQLDatabase` over a GRDB connection (SQLite), for the length of one transaction or read.
final class SQLiteDatabase: SQLDatabase {
    private let db: Database
    /// Statements handed out in this transaction, by SQL (an ingest runs the same few per row).
    private var statements: [String: SQLiteStatement] = [:]

    init(_ db: Database) { self.db = db }

    var dialect: SQLDialect { .sqlite }

    func execute(sql: String, arguments: SQLArguments) throws {
        if arguments.values.isEmpty {
            try db.execute(sql: sql)
        } else {
            // One statement with arguments (a change's usual kind, run once per row, per room):
            // prepared once per connection rather than parsed at every call, and its values bound
            // through SQLite's C API. GRDB's `StatementArguments` maps the values through a key
            // path it instantiates at run time on every call: in rush hour on one node (perf,
            // 60 s, 2026-11-29) the room log's writes fell from 10.7 % to 6.7 % of the node's
            // CPU with this, the binding itself 0.2 %. Queries still go through GRDB (it checks
            // their arguments against the placeholders): 2 % left there.
            try statement(sql).execute(arguments: arguments)
        }
    }

    func fetchAll(sql: String, arguments: SQLArguments) throws -> [SQLRow] {
        var rows: [SQLRow] = []
        try forEachRow(sql: sql, arguments: arguments) { rows.append($0) }
        return rows
    }

    func forEachRow(sql: String, arguments: SQLArguments, _ body: (SQLRow) throws -> Void) throws {
        try rows(sql, arguments) { row in try body(row); return true }
    }

    func fetchOne(sql: String, arguments: SQLArguments) throws -> SQLRow? {
        var first: SQLRow?
        try rows(sql, arguments) { row in first = row; return false }
        return first
    }

    /// The query's rows, converted, while `take` says to go on.
    private func rows(_ sql: String, _ arguments: SQLArguments, _ take: (SQLRow) throws -> Bool) throws {
        let statement = try db.cachedStatement(sql: sql)
        let columns = SQLColumns(statement.columnNames)
        let cursor = try Row.fetchCursor(statement, arguments: Self.arguments(arguments))
        while let row = try cursor.next() {
            var values: [SQLValue] = []
            values.reserveCapacity(columns.names.count)
            for value in row.databaseValues { values.append(Self.value(value)) }
            guard try take(SQLRow(columns: columns, values: values)) else { return }
        }
    }

    func cachedStatement(sql: String) throws -> any SQLStatement { try statement(sql) }

    private func statement(_ sql: String) throws -> SQLiteStatement {
        if let known = statements[sql] { return known }
        let made = SQLiteStatement(try db.cachedStatement(sql: sql), connection: db.sqliteConnection, sql: sql)
        statements[sql] = made
        return made
    }

    func changes(sql: String, arguments: SQLArguments) throws -> Int {
        try execute(sql: sql, arguments: arguments)
        return db.changesCount
    }

    func insert(sql: String, arguments: SQLArguments, returning column: String) throws -> Int64 {
        try execute(sql: sql, arguments: arguments)
        return db.lastInsertedRowID
    }

    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        var result: T?
        try db.inSavepoint {
            result = try body()
            return .commit
        }
        return result!
    }

    static func arguments(_ arguments: SQLArguments) -> StatementArguments {
        StatementArguments(arguments.values.map { value -> DatabaseValue in
            switch value {
            case .null: return .null
            case .integer(let n): return n.databaseValue
            case .real(let d): return d.databaseValue
            case .text(let s): return s.databaseValue
            case .blob(let b): return Data(b).databaseValue
            }
        })
    }

    static func value(_ value: DatabaseValue) -> SQLValue {
        switch value.storage {
        case .null: return .null
        case .int64(let n): return .integer(n)
        case .double(let d): return .real(d)
        case .string(let s): return .text(s)
        case .blob(let data): return .blob(Array(data))
        }
    }
}

/// A GRDB statement run with bound values; `run` binds through SQLite's C API, with no array of
/// boxed values per run.
final class SQLiteStatement: SQLStatement {
    private let statement: Statement
    private let connection: OpaquePointer?
    private let sql: String

    init(_ statement: Statement, connection: OpaquePointer?, sql: String) {
        self.statement = statement
        self.connection = connection
        self.sql = sql
    }

    func execute(arguments: SQLArguments) throws {
        try step { binder in for value in arguments.values { binder.value(value) } }
    }

    func run(_ bind: (inout any SQLBinder) -> Void) throws {
        try step { binder in
            var any: any SQLBinder = binder
            bind(&any)
        }
    }

    /// Binds the values (`bind`), runs the statement to its end (rows it returns are skipped, as
    /// GRDB's `execute` does), and clears it for the next run.
    private func step(_ bind: (inout Binder) -> Void) throws {
        let raw = statement.sqliteStatement
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
        var binder = Binder(statement: raw)
        bind(&binder)
        var code = sqlite3_step(raw)
        while code == SQLITE_ROW { code = sqlite3_step(raw) }
        let message = code == SQLITE_DONE ? "" : String(cString: sqlite3_errmsg(connection))
        sqlite3_reset(raw)
        guard code == SQLITE_DONE else { throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql) }
    }

    /// Binds values in placeholder order.
    struct Binder: SQLBinder {
        let statement: OpaquePointer?
        var index: Int32 = 1

        /// SQLite copies each bound value (the Swift string's storage may move).
        static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        mutating func text(_ value: String?) {
            defer { index += 1 }
            guard var value else { sqlite3_bind_null(statement, index); return }
            value.withUTF8 { u in
                _ = u.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(statement, index, $0.baseAddress, Int32(u.count), Self.transient) }
            }
        }

        mutating func double(_ value: Double?) {
            defer { index += 1 }
            if let value { sqlite3_bind_double(statement, index, value) } else { sqlite3_bind_null(statement, index) }
        }

        mutating func integer(_ value: Int64?) {
            defer { index += 1 }
            if let value { sqlite3_bind_int64(statement, index, value) } else { sqlite3_bind_null(statement, index) }
        }

        mutating func value(_ value: SQLValue) {
            switch value {
            case .null: integer(nil)
            case .integer(let n): integer(n)
            case .real(let d): double(d)
            case .text(let t): text(t)
            case .blob(let b): blob(b)
            }
        }

        mutating func blob(_ value: [UInt8]) {
            defer { index += 1 }
            // An empty blob is still a blob (a null pointer would bind NULL).
            value.withUnsafeBytes { b in
                _ = sqlite3_bind_blob(statement, index, b.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(b.count), Self.transient)
            }
        }
    }
}
