/// A pass/fail rule of a scenario, e.g. `"p99Ms": 50` (p99 latency at most 50 ms).
public struct Threshold: Sendable, Equatable {
    /// The measured figure a threshold bounds.
    public enum Metric: String, Sendable, CaseIterable {
        case p50Ms, p90Ms, p99Ms, p999Ms, maxMs
        /// Routes: a provider's burst → its items' pushes, p99. Tonight: a feed's ingest (from its
        /// start) → the pushes it causes, p99.
        case providerP99Ms
        case minPushesPerSecond, minActionsPerSecond, minMessagesPerSecond
        case maxViolations, maxMissing, maxDuplicates, maxErrors, maxErrorShare
        case minRecoveredShare, minConnectedShare, maxUnexpectedCloses
        /// The server's RSS slope over the second half of the run (needs `--server-pid`).
        case maxRssSlopeKBPerMinute

        /// Whether the figure exists for this kind of scenario.
        func applies(to kind: Scenario.Kind) -> Bool {
            switch self {
            case .minRecoveredShare: return kind == .venues
            case .minActionsPerSecond, .maxErrorShare: return kind == .venues || kind == .routes || kind == .tonight
            case .minMessagesPerSecond: return kind == .echo || kind == .fanout
            case .providerP99Ms: return kind == .routes || kind == .tonight
            default: return true
            }
        }

        /// "max…" and latency bounds are upper limits; "min…" lower limits.
        var isLowerBound: Bool { rawValue.hasPrefix("min") }

        /// The summary figure it reads.
        var summaryKey: String {
            switch self {
            case .p50Ms: "latencyP50Ms"
            case .p90Ms: "latencyP90Ms"
            case .p99Ms: "latencyP99Ms"
            case .p999Ms: "latencyP999Ms"
            case .maxMs: "latencyMaxMs"
            case .providerP99Ms: "providerP99Ms"
            case .minPushesPerSecond: "pushesPerSecond"
            case .minActionsPerSecond: "actionsAckedPerSecond"
            case .minMessagesPerSecond: "messagesPerSecond"
            case .maxViolations: "violations"
            case .maxMissing: "missing"
            case .maxDuplicates: "duplicates"
            case .maxErrors: "errors"
            case .maxErrorShare: "errorShare"
            case .minRecoveredShare: "recoveredShare"
            case .minConnectedShare: "connectedShare"
            case .maxUnexpectedCloses: "unexpectedCloses"
            case .maxRssSlopeKBPerMinute: "serverRssSlopeKBPerMinute"
            }
        }
    }

    public var metric: Metric
    public var limit: Double
    public var key: String { metric.rawValue }

    public init(metric: Metric, limit: Double) {
        self.metric = metric
        self.limit = limit
    }

    static func read(_ r: inout ScenarioReader) throws(ScenarioError) -> [Threshold] {
        var out: [Threshold] = []
        for m in Metric.allCases {
            if let v = try r.double(m.rawValue, in: 0...1e12) { out.append(Threshold(metric: m, limit: v)) }
        }
        do { try r.finish() } catch {
            throw ScenarioError("\(error.description) (known: \(Metric.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return out
    }

    /// The outcome of one threshold against a run's summary.
    public struct Outcome: Sendable, Equatable {
        public var threshold: Threshold
        /// nil when the run has no such figure (e.g. no reconnects happened): that fails too.
        public var actual: Double?
        public var passed: Bool
    }

    public func evaluate(_ summary: [String: Double]) -> Outcome {
        guard let actual = summary[metric.summaryKey], actual.isFinite else {
            return Outcome(threshold: self, actual: nil, passed: false)
        }
        let passed = metric.isLowerBound ? actual >= limit : actual <= limit
        return Outcome(threshold: self, actual: actual, passed: passed)
    }
}
