/// One configuration key of a domain, with its default, its range and what it means. The core
/// reads it from the command line (`--venues-retire-after-seconds`), the environment
/// (`HUBBUB_VENUES_RETIRE_AFTER_SECONDS`) and the config file like every other key, refuses a
/// value out of range naming the key, and lists it in `config/hubbub.json` (a test keeps the two equal).
public struct Setting<Value: SettingValue>: AnySetting {
    public let key: String
    public let defaultValue: Value
    public let help: String
    /// A key or password: never printed (help, logs, errors) — only whether it is set.
    public let isSecret: Bool
    /// Why a value is out of range (nil: in range); nil when any value of the type will do.
    private let outOfRange: (@Sendable (Value) -> String?)?

    /// A setting that takes any value of its type (strings, flags).
    public init(_ key: String, default defaultValue: Value, help: String, secret: Bool = false) {
        self.key = key
        self.defaultValue = defaultValue
        self.help = help
        isSecret = secret
        outOfRange = nil
    }

    public var defaultSetting: SettingValueBox { defaultValue.boxed }

    public func check(_ value: SettingValueBox) -> String? {
        guard let v = Value(value) else { return "must be \(Value.kindDescription)" }
        return outOfRange?(v)
    }
}

extension Setting where Value: Comparable {
    /// A setting whose values must lie in `range`.
    public init(_ key: String, default defaultValue: Value, range: ClosedRange<Value>, help: String) {
        self.key = key
        self.defaultValue = defaultValue
        self.help = help
        isSecret = false
        outOfRange = { range.contains($0) ? nil : "\($0) is outside \(range.lowerBound)...\(range.upperBound)" }
    }
}

/// A setting whatever its type (for lists of them).
public protocol AnySetting: Sendable {
    var key: String { get }
    var help: String { get }
    var isSecret: Bool { get }
    var defaultSetting: SettingValueBox { get }
    /// nil when `value` is acceptable, else why not.
    func check(_ value: SettingValueBox) -> String?
}

/// A setting's value as read.
public enum SettingValueBox: Sendable, Equatable, CustomStringConvertible {
    case int(Int)
    case double(Double)
    case bool(Bool)
    case string(String)

    /// What a value of this kind is, for an error ("an integer").
    public var kindDescription: String {
        switch self {
        case .int: Int.kindDescription
        case .double: Double.kindDescription
        case .bool: Bool.kindDescription
        case .string: String.kindDescription
        }
    }

    public var description: String {
        switch self {
        case .int(let v): "\(v)"
        case .double(let v): "\(v)"
        case .bool(let v): "\(v)"
        case .string(let v): v
        }
    }
}

/// The types a setting may have.
public protocol SettingValue: Sendable, Equatable {
    init?(_ box: SettingValueBox)
    var boxed: SettingValueBox { get }
    static var kindDescription: String { get }
}

extension Int: SettingValue {
    public init?(_ box: SettingValueBox) { if case .int(let v) = box { self = v } else { return nil } }
    public var boxed: SettingValueBox { .int(self) }
    public static var kindDescription: String { "an integer" }
}

extension Double: SettingValue {
    public init?(_ box: SettingValueBox) {
        switch box {
        case .double(let v): self = v
        case .int(let v): self = Double(v)
        default: return nil
        }
    }
    public var boxed: SettingValueBox { .double(self) }
    public static var kindDescription: String { "a number" }
}

extension Bool: SettingValue {
    public init?(_ box: SettingValueBox) { if case .bool(let v) = box { self = v } else { return nil } }
    public var boxed: SettingValueBox { .bool(self) }
    public static var kindDescription: String { "true or false" }
}

extension String: SettingValue {
    public init?(_ box: SettingValueBox) { if case .string(let v) = box { self = v } else { return nil } }
    public var boxed: SettingValueBox { .string(self) }
    public static var kindDescription: String { "a string" }
}

/// Values of domain settings by key; a key not set reads as its default.
public struct SettingValues: Sendable, Equatable {
    public private(set) var values: [String: SettingValueBox]

    public init(_ values: [String: SettingValueBox] = [:]) { self.values = values }

    public subscript<V: SettingValue>(_ setting: Setting<V>) -> V {
        get { values[setting.key].flatMap { V($0) } ?? setting.defaultValue }
        set { values[setting.key] = newValue.boxed }
    }

    /// Sets a value by key (tests and the configuration loader; checked by the loader).
    public mutating func set(_ key: String, _ value: SettingValueBox) { values[key] = value }
}
