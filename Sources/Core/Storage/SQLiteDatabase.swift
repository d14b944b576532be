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
            // CPU with this, the binding itself 0.2 %. Queries are bound the same way (`rows`).
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

    /// The query's rows, converted, while `take` says to go on. Bound and read through SQLite's C
    /// API on the transaction's prepared statement: GRDB's `StatementArguments`, its row cursor and
    /// the column names read anew per call were 3-4 % of a node's CPU in rush hour (perf, 40 s,
    /// 2026-11-29: the room log's `SELECT last FROM room_head` per room, per write). A statement
    /// already stepping (a query run again from inside its own rows) gets a fresh one.
    private func rows(_ sql: String, _ arguments: SQLArguments, _ take: (SQLRow) throws -> Bool) throws {
        let cached = try statement(sql)
        let statement = cached.isBusy ? SQLiteStatement(try db.makeStatement(sql: sql), connection: db.sqliteConnection, sql: sql) : cached
        try statement.query(arguments: arguments, take)
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
        try checkCount(arguments)
        try step { binder in for value in arguments.values { binder.value(value) } }
    }

    /// The statement's columns, read once (a statement's columns never change).
    private lazy var columns: SQLColumns = {
        let raw = statement.sqliteStatement
        return SQLColumns((0..<sqlite3_column_count(raw)).map { String(cString: sqlite3_column_name(raw, $0)) })
    }()

    /// Whether the statement is between its first step and its reset (its rows being read).
    var isBusy: Bool { sqlite3_stmt_busy(statement.sqliteStatement) != 0 }

    /// Binds `arguments`, and hands `take` each row while it says to go on; the statement is reset
    /// after, whatever happens.
    func query(arguments: SQLArguments, _ take: (SQLRow) throws -> Bool) throws {
        try checkCount(arguments)
        let raw = try bound { binder in for value in arguments.values { binder.value(value) } }
        defer { sqlite3_reset(raw) }
        let columns = self.columns, count = Int32(columns.names.count)
        while true {
            let code = sqlite3_step(raw)
            guard code == SQLITE_ROW else {
                guard code == SQLITE_DONE else {
                    throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
                }
                return
            }
            var values: [SQLValue] = []
            values.reserveCapacity(Int(count))
            for i in 0..<count { values.append(Self.column(raw, i)) }
            guard try take(SQLRow(columns: columns, values: values)) else { return }
        }
    }

    /// Column `i` of the current row, as SQLite stores it.
    private static func column(_ raw: OpaquePointer?, _ i: Int32) -> SQLValue {
        switch sqlite3_column_type(raw, i) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(raw, i))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(raw, i))
        case SQLITE_TEXT:
            // The pointer first, then the length (SQLite's documented order).
            guard let text = sqlite3_column_text(raw, i) else { return .text("") }
            let n = Int(sqlite3_column_bytes(raw, i))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: n), as: UTF8.self))
        case SQLITE_BLOB:
            let bytes = sqlite3_column_blob(raw, i)
            let n = Int(sqlite3_column_bytes(raw, i))
            guard let bytes, n > 0 else { return .blob([]) }
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: n)))
        default: return .null
        }
    }

    /// As GRDB checked: as many values as the statement has placeholders (SQLite would leave the
    /// missing ones NULL and refuse the extra ones silently).
    private func checkCount(_ arguments: SQLArguments) throws {
        let wanted = Int(sqlite3_bind_parameter_count(statement.sqliteStatement))
        guard arguments.values.count == wanted else {
            throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "\(arguments.values.count) values for \(wanted) placeholders", sql: sql)
        }
    }

    func run(_ bind: (inout any SQLBinder) -> Void) throws {
        try step { binder in
            var any: any SQLBinder = binder
            bind(&any)
            binder = any as! Binder // its failure, if a value was refused
        }
    }

    /// Binds the values (`bind`), runs the statement to its end (rows it returns are skipped, as
    /// GRDB's `execute` does), and clears it for the next run.
    private func step(_ bind: (inout Binder) -> Void) throws {
        let raw = try bound(bind)
        var code = sqlite3_step(raw)
        while code == SQLITE_ROW { code = sqlite3_step(raw) }
        let message = code == SQLITE_DONE ? "" : String(cString: sqlite3_errmsg(connection))
        sqlite3_reset(raw)
        guard code == SQLITE_DONE else { throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql) }
    }

    /// The statement cleared of its last run and bound anew by `bind`; a value SQLite refused
    /// throws, the statement reset.
    private func bound(_ bind: (inout Binder) -> Void) throws -> OpaquePointer? {
        let raw = statement.sqliteStatement
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
        var binder = Binder(statement: raw)
        bind(&binder)
        try binder.check(connection, sql: sql)
        return raw
    }

    /// Binds values in placeholder order.
    struct Binder: SQLBinder {
        let statement: OpaquePointer?
        var index: Int32 = 1
        /// The first refusal (a value over SQLite's length limit, no memory), as GRDB threw it.
        private var failure = SQLITE_OK

        init(statement: OpaquePointer?) { self.statement = statement }

        private mutating func note(_ code: Int32) {
            if code != SQLITE_OK && failure == SQLITE_OK { failure = code }
        }

        /// Throws the first refusal, with the statement reset.
        func check(_ connection: OpaquePointer?, sql: String) throws {
            guard failure != SQLITE_OK else { return }
            let message = String(cString: sqlite3_errmsg(connection))
            sqlite3_reset(statement)
            throw DatabaseError(resultCode: ResultCode(rawValue: failure), message: message, sql: sql)
        }

        /// SQLite copies each bound value (the Swift string's storage may move).
        static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        mutating func text(_ value: String?) {
            defer { index += 1 }
            guard var value else { note(sqlite3_bind_null(statement, index)); return }
            // Clamped, not trapped: past 2 GiB the length is over SQLite's limit, which refuses it.
            let code = value.withUTF8 { u in
                u.withMemoryRebound(to: CChar.self) { sqlite3_bind_text(statement, index, $0.baseAddress, Int32(clamping: u.count), Self.transient) }
            }
            note(code)
        }

        mutating func double(_ value: Double?) {
            defer { index += 1 }
            note(value.map { sqlite3_bind_double(statement, index, $0) } ?? sqlite3_bind_null(statement, index))
        }

        mutating func integer(_ value: Int64?) {
            defer { index += 1 }
            note(value.map { sqlite3_bind_int64(statement, index, $0) } ?? sqlite3_bind_null(statement, index))
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
            note(value.withUnsafeBytes { b in
                sqlite3_bind_blob(statement, index, b.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(clamping: b.count), Self.transient)
            })
        }
    }
}
