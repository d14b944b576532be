import Foundation

/// A value stored or read: the kinds both engines keep (SQLite's storage classes; PostgreSQL's
/// bigint, double precision, text and bytea).
public enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift type that is stored as one `SQLValue` and read back from one.
public protocol SQLValueConvertible: Sendable {
    var sqlValue: SQLValue { get }
    /// The value read from a column, nil when the column's value is not of this type.
    init?(sqlValue: SQLValue)
}

extension Int64: SQLValueConvertible {
    public var sqlValue: SQLValue { .integer(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .integer(let n): self = n
        case .real(let d) where d == d.rounded() && abs(d) < 9e18: self = Int64(d)
        default: return nil
        }
    }
}

extension Int: SQLValueConvertible {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public init?(sqlValue: SQLValue) { guard let n = Int64(sqlValue: sqlValue) else { return nil }; self = Int(n) }
}

extension Int32: SQLValueConvertible {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public init?(sqlValue: SQLValue) {
        guard let n = Int64(sqlValue: sqlValue), let m = Int32(exactly: n) else { return nil }
        self = m
    }
}

extension Double: SQLValueConvertible {
    public var sqlValue: SQLValue { .real(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .real(let d): self = d
        case .integer(let n): self = Double(n)
        default: return nil
        }
    }
}

/// Stored as 0 or 1 (SQLite has no booleans; PostgreSQL's columns for them are integers here too).
extension Bool: SQLValueConvertible {
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
    public init?(sqlValue: SQLValue) { guard let n = Int64(sqlValue: sqlValue) else { return nil }; self = n != 0 }
}

extension String: SQLValueConvertible {
    public var sqlValue: SQLValue { .text(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .text(let s): self = s
        case .blob(let b): self = String(decoding: b, as: UTF8.self)
        default: return nil
        }
    }
}

extension Array: SQLValueConvertible where Element == UInt8 {
    public var sqlValue: SQLValue { .blob(self) }
    public init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .blob(let b): self = b
        case .text(let s): self = Array(s.utf8)
        default: return nil
        }
    }
}

extension Optional: SQLValueConvertible where Wrapped: SQLValueConvertible {
    public var sqlValue: SQLValue { map(\.sqlValue) ?? .null }
    public init?(sqlValue: SQLValue) {
        if case .null = sqlValue { self = .none; return }
        guard let value = Wrapped(sqlValue: sqlValue) else { return nil }
        self = .some(value)
    }
}

/// A statement's arguments, in the order of its `?` placeholders: `[user, at, nil]`.
public struct SQLArguments: Sendable, ExpressibleByArrayLiteral {
    public var values: [SQLValue]

    public init(arrayLiteral elements: (any SQLValueConvertible)?...) { values = elements.map { $0?.sqlValue ?? .null } }
    public init(_ values: [SQLValue]) { self.values = values }
    /// Every element of `list`, in order (an `IN (?, ?, …)` list).
    public init(_ list: [some SQLValueConvertible]) { values = list.map(\.sqlValue) }

    public static func + (a: SQLArguments, b: SQLArguments) -> SQLArguments { SQLArguments(a.values + b.values) }
}

/// `?, ?, ?`: the placeholders of an `IN` list of `count` values.
public func sqlPlaceholders(count: Int) -> String {
    Array(repeating: "?", count: count).joined(separator: ", ")
}

extension Data: SQLValueConvertible {
    public var sqlValue: SQLValue { .blob(Array(self)) }
    public init?(sqlValue: SQLValue) {
        guard let bytes = [UInt8](sqlValue: sqlValue) else { return nil }
        self = Data(bytes)
    }
}
