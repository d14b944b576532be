/// Which SQL a database speaks, for the few statements that differ between engines (schema types,
/// `INSERT OR REPLACE` against `ON CONFLICT`, row ids).
public enum SQLDialect: Sendable, Equatable {
    case sqlite
    case postgres
}

/// A connection inside one transaction (a change) or one snapshot (a read): what every domain's
/// SQL runs on, whichever engine is behind it. Valid only inside the closure it is handed to.
/// Statements use `?` placeholders (an engine that numbers them rewrites them).
///
/// A statement that returns nothing the change looks at (`execute`, a cached statement's runs)
/// may be sent without waiting for its answer: PostgreSQL's engine queues it behind the others
/// on the connection and learns of its failure at the next call that needs an answer (a fetch,
/// `changes`, `insert`, the end of a savepoint or of the transaction), which then throws. The
/// change fails as a whole either way; only the call that reports it differs.
public protocol SQLDatabase: AnyObject {
    var dialect: SQLDialect { get }
    /// Runs one statement (or, without arguments, several separated by semicolons: a migration).
    /// Its failure may be reported by a later call in the same change (see above).
    func execute(sql: String, arguments: SQLArguments) throws
    /// Every row a query returns.
    func fetchAll(sql: String, arguments: SQLArguments) throws -> [SQLRow]
    /// The first row a query returns, if any (the rest are not read).
    func fetchOne(sql: String, arguments: SQLArguments) throws -> SQLRow?
    /// Each row a query returns, one at a time (a large read without holding every row).
    func forEachRow(sql: String, arguments: SQLArguments, _ body: (SQLRow) throws -> Void) throws
    /// A statement prepared once per connection and run many times.
    func cachedStatement(sql: String) throws -> any SQLStatement
    /// Runs one statement and returns the rows it inserted, changed or deleted (waits for its answer).
    func changes(sql: String, arguments: SQLArguments) throws -> Int
    /// Runs an `INSERT` and returns the new row's `column` (an integer key the database assigns).
    func insert(sql: String, arguments: SQLArguments, returning column: String) throws -> Int64
    /// Runs `body` in a savepoint: if it throws, only what it did is undone.
    func inSavepoint<T>(_ body: () throws -> T) throws -> T
}

extension SQLDatabase {
    public func execute(sql: String) throws { try execute(sql: sql, arguments: []) }
    public func fetchAll(sql: String) throws -> [SQLRow] { try fetchAll(sql: sql, arguments: []) }
}

/// A prepared statement.
public protocol SQLStatement: AnyObject {
    func execute(arguments: SQLArguments) throws
    /// Runs it once with values `bind` gives in placeholder order, without an array per run (the
    /// hot loop of a feed's ingest).
    func run(_ bind: (inout any SQLBinder) -> Void) throws
}

/// Binds a statement's values one after another, in placeholder order.
public protocol SQLBinder {
    mutating func text(_ value: String?)
    mutating func double(_ value: Double?)
    mutating func integer(_ value: Int64?)
}

extension SQLBinder {
    public mutating func integer(_ value: Int?) { integer(value.map(Int64.init)) }
}

/// The columns of a query's rows: names and their positions, shared by every row it returns.
public final class SQLColumns: Sendable {
    public let names: [String]
    private let positions: [String: Int]

    public init(_ names: [String]) {
        self.names = names
        var positions: [String: Int] = [:]
        // PostgreSQL folds unquoted names to lower case: columns are found whatever their case.
        for (i, name) in names.enumerated() where positions[name.lowercased()] == nil { positions[name.lowercased()] = i }
        self.positions = positions
    }

    public func index(of name: String) -> Int? { positions[name.lowercased()] }
}

/// A row read: its values by column name or position. Reading a value as a type it is not (or a
/// missing column as anything but an optional) is a programming error and traps, naming it.
public struct SQLRow: Sendable {
    public let columns: SQLColumns
    public let values: [SQLValue]

    public init(columns: SQLColumns, values: [SQLValue]) {
        self.columns = columns
        self.values = values
    }

    public subscript<T: SQLValueConvertible>(_ name: String) -> T {
        let value = columns.index(of: name).map { values[$0] } ?? .null
        guard let converted = T(sqlValue: value) else { fatalError("column \(name): \(value) is not a \(T.self)") }
        return converted
    }

    public subscript<T: SQLValueConvertible>(_ index: Int) -> T {
        guard let converted = T(sqlValue: values[index]) else { fatalError("column \(index): \(values[index]) is not a \(T.self)") }
        return converted
    }

    /// Every row of a query.
    public static func fetchAll(_ db: any SQLDatabase, sql: String, arguments: SQLArguments = []) throws -> [SQLRow] {
        try db.fetchAll(sql: sql, arguments: arguments)
    }

    /// The first row of a query, if any.
    public static func fetchOne(_ db: any SQLDatabase, sql: String, arguments: SQLArguments = []) throws -> SQLRow? {
        try db.fetchOne(sql: sql, arguments: arguments)
    }
}

extension SQLValueConvertible {
    /// The first column of every row of a query.
    public static func fetchAll(_ db: any SQLDatabase, sql: String, arguments: SQLArguments = []) throws -> [Self] {
        try db.fetchAll(sql: sql, arguments: arguments).map { $0[0] }
    }

    /// The first column of the first row of a query; nil when there is no row or it is NULL.
    public static func fetchOne(_ db: any SQLDatabase, sql: String, arguments: SQLArguments = []) throws -> Self? {
        guard let row = try SQLRow.fetchOne(db, sql: sql, arguments: arguments), let value = row.values.first else { return nil }
        if case .null = value { return nil }
        return Self(sqlValue: value)
    }
}

/// Each domain's schema changes, in the order they are registered; a store applies each once
/// (identifiers start with the domain's name: `venues.v2`).
public struct SQLMigrations: Sendable {
    public typealias Step = @Sendable (any SQLDatabase) throws -> Void
    public private(set) var steps: [(id: String, apply: Step)] = []

    public init() {}

    public mutating func registerMigration(_ id: String, _ apply: @escaping Step) {
        precondition(!steps.contains { $0.id == id }, "migration \(id) registered twice")
        steps.append((id, apply))
    }

    /// The steps up to `id`, included (a database as an older version left it, in tests).
    public func upTo(_ id: String) -> SQLMigrations {
        var out = SQLMigrations()
        for step in steps {
            out.steps.append(step)
            if step.id == id { break }
        }
        return out
    }
}
