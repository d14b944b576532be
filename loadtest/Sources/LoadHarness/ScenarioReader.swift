import Realtime

/// Why a scenario file was refused: the field's path and what is wrong with it.
public struct ScenarioError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Typed, strict access to one JSON object of a scenario file: every getter names the field's
/// full path in its error, and `finish()` refuses keys nobody asked for (a misspelt key must not
/// silently fall back to a default).
struct ScenarioReader {
    let path: String
    private let pairs: [(String, JSON)]
    private var used: Set<String> = []

    init(_ json: JSON, path: String) throws(ScenarioError) {
        guard case .object(let pairs) = json else { throw ScenarioError("\(path.isEmpty ? "the scenario" : path) must be an object") }
        self.path = path
        self.pairs = pairs
    }

    private func name(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    private mutating func value(_ key: String) -> JSON? {
        used.insert(key)
        guard let v = pairs.first(where: { $0.0 == key })?.1, v != .null else { return nil }
        return v
    }

    mutating func has(_ key: String) -> Bool { pairs.contains { $0.0 == key } }

    mutating func string(_ key: String) throws(ScenarioError) -> String? {
        guard let v = value(key) else { return nil }
        guard case .string(let s) = v else { throw ScenarioError("\(name(key)) must be a string") }
        return s
    }

    mutating func string(_ key: String, default d: String) throws(ScenarioError) -> String { try string(key) ?? d }

    mutating func double(_ key: String, in range: ClosedRange<Double>) throws(ScenarioError) -> Double? {
        guard let v = value(key) else { return nil }
        let x: Double
        switch v {
        case .int(let i): x = Double(i)
        case .double(let d): x = d
        default: throw ScenarioError("\(name(key)) must be a number")
        }
        guard range.contains(x) else { throw ScenarioError("\(name(key)) must be between \(Self.show(range.lowerBound)) and \(Self.show(range.upperBound)), not \(Self.show(x))") }
        return x
    }

    mutating func double(_ key: String, in range: ClosedRange<Double>, default d: Double) throws(ScenarioError) -> Double {
        try double(key, in: range) ?? d
    }

    mutating func int(_ key: String, in range: ClosedRange<Int>) throws(ScenarioError) -> Int? {
        guard let v = value(key) else { return nil }
        guard case .int(let i) = v else { throw ScenarioError("\(name(key)) must be a whole number") }
        guard range.contains(i) else { throw ScenarioError("\(name(key)) must be between \(range.lowerBound) and \(range.upperBound), not \(i)") }
        return i
    }

    mutating func int(_ key: String, in range: ClosedRange<Int>, default d: Int) throws(ScenarioError) -> Int { try int(key, in: range) ?? d }

    mutating func bool(_ key: String, default d: Bool) throws(ScenarioError) -> Bool {
        guard let v = value(key) else { return d }
        guard case .bool(let b) = v else { throw ScenarioError("\(name(key)) must be true or false") }
        return b
    }

    mutating func object(_ key: String) throws(ScenarioError) -> ScenarioReader? {
        guard let v = value(key) else { return nil }
        return try ScenarioReader(v, path: name(key))
    }

    mutating func array(_ key: String) throws(ScenarioError) -> [JSON]? {
        guard let v = value(key) else { return nil }
        guard case .array(let a) = v else { throw ScenarioError("\(name(key)) must be a list") }
        return a
    }

    /// Refuses keys that were never read.
    func finish() throws(ScenarioError) {
        if let unknown = pairs.first(where: { !used.contains($0.0) })?.0 {
            throw ScenarioError("unknown field \(name(unknown))")
        }
    }

    static func show(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x) }
}
