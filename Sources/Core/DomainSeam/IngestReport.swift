import Foundation
import Realtime

/// What every ingest endpoint answers (feeds.md): `{"added", "changed", "unchanged", "rejected",
/// "rejects": [{"record", "line"?, "reason"}], "ms"}`, the first 100 rejects listed and all counted.
public struct IngestReport: Sendable {
    /// A record refused: which (`Event 123`, `items[3]`, `line 12`), where, and why.
    public struct Reject: Sendable, Equatable {
        public var record: String
        public var line: Int?
        public var reason: String
        public init(record: String, line: Int? = nil, reason: String) {
            self.record = record
            self.line = line
            self.reason = reason
        }
    }

    /// At most this many rejects are listed.
    public static let listedRejects = 100

    public var added = 0, changed = 0, unchanged = 0
    public var rejects: [Reject] = []
    /// Rejects counted but not kept (a reader that keeps only its first ones).
    public var unlisted = 0
    public let started: Date

    public init(started: Date = Date()) { self.started = started }

    /// The answer's fields in feeds.md's order, `extra` before `ms`.
    public func fields(_ extra: [(String, JSON)] = []) -> [(String, JSON)] {
        let listed = rejects.prefix(Self.listedRejects).map { r -> JSON in
            .object([("record", .string(r.record))] + (r.line.map { [("line", JSON.int($0))] } ?? []) + [("reason", .string(r.reason))])
        }
        return [("added", .int(added)), ("changed", .int(changed)), ("unchanged", .int(unchanged)), ("rejected", .int(rejects.count + unlisted)),
                ("rejects", .array(listed))] + extra + [("ms", .int(Int(Date().timeIntervalSince(started) * 1000)))]
    }
}
