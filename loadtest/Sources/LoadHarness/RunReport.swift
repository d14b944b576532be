import Foundation

/// One second of a run, as plotted.
public struct TimelineRow: Sendable, Equatable, Codable {
    public var t: Double
    /// The scenario clock ("21:30") for venue runs.
    public var clock: String?
    public var connections: Int
    public var receivedPerSecond: Double
    public var sentPerSecond: Double
    public var ackedPerSecond: Double
    public var p50Ms: Double
    public var p90Ms: Double
    public var p99Ms: Double
    public var maxMs: Double
    public var errors: Int
    public var violations: Int

    public init(t: Double, clock: String?, connections: Int, seconds: Double, interval: Interval) {
        self.t = (t * 10).rounded() / 10
        self.clock = clock
        self.connections = connections
        let s = max(seconds, 1e-9)
        receivedPerSecond = (Double(interval.received) / s).rounded()
        sentPerSecond = (Double(interval.sent) / s).rounded()
        ackedPerSecond = (Double(interval.acked) / s).rounded()
        func ms(_ p: Double) -> Double { Double(interval.percentileMicros(p)) / 1000 }
        p50Ms = ms(50)
        p90Ms = ms(90)
        p99Ms = ms(99)
        maxMs = interval.latency.totalCount == 0 ? 0 : Double(interval.latency.max) / 1000
        errors = interval.errors.values.reduce(0, +) + interval.closes.values.reduce(0, +)
        violations = interval.violations.total
    }
}

/// Everything one run of one scenario against one server measured: the JSON result file's content.
public struct RunReport: Sendable, Codable {
    public var scenario: String
    public var kind: String
    public var description: String
    /// Which server ("hubbub", or the name given with `--compare`).
    public var target: String
    public var url: String
    public var startedAt: String
    /// Seconds measured (the scenario's duration plus draining).
    public var seconds: Double
    /// What "received" and "latency" mean in this run, for readers of the report.
    public var receivedName: String
    public var latencyName: String
    public var connectionsOpened: Int
    public var connectionsWanted: Int
    public var connectFailures: [String: Int]
    public var setupSeconds: Double
    /// Flat figures, the ones thresholds read (latency in ms, rates per second).
    public var summary: [String: Double]
    public var errors: [String: Int]
    public var closes: [String: Int]
    public var violations: ViolationCounts
    public var reconnects: Reconnects
    public var timeline: [TimelineRow]
    public var server: [ServerSample]
    /// The server's RSS slope over the second half of the run (nil: not sampled, or too few samples).
    public var serverRssSlope: RSSSlope?
    /// The harness process sampled the same way.
    public var harness: [ServerSample]
    public var thresholds: [ThresholdResult]
    public var passed: Bool

    public struct ViolationCounts: Sendable, Codable, Equatable {
        public var missing, duplicates, outOfOrder, wrongEpoch, badOrder, badCount: Int
        /// Routes: items outside the corridor, items never delivered, items delivered twice.
        public var outsideCorridor, undelivered, redelivered: Int
        /// Tonight: pushes not due to the user, changes with wrong previous values.
        public var unwanted: Int
        public init(_ v: Violations) {
            unwanted = v.unwanted
            outsideCorridor = v.outsideCorridor
            undelivered = v.undelivered
            redelivered = v.redelivered
            missing = v.missing
            duplicates = v.duplicates
            outOfOrder = v.outOfOrder
            wrongEpoch = v.wrongEpoch
            badOrder = v.badOrder
            badCount = v.badCount
        }
    }

    public struct ThresholdResult: Sendable, Codable, Equatable {
        public var metric: String
        public var limit: Double
        public var actual: Double?
        public var passed: Bool
    }

    /// Builds the report: figures from the whole-run interval, thresholds evaluated.
    public init(scenario: Scenario, target: String, url: String, startedAt: Date, seconds: Double, total: Interval,
                connectionsOpened: Int, connectionsWanted: Int, connectFailures: [String: Int], setupSeconds: Double,
                timeline: [TimelineRow], server: [ServerSample], harness: [ServerSample] = [], extra: [String: Double] = [:]) {
        self.scenario = scenario.name
        kind = scenario.kind.rawValue
        description = scenario.description
        self.target = target
        self.url = url
        self.startedAt = ISO8601DateFormatter().string(from: startedAt)
        self.seconds = (seconds * 100).rounded() / 100
        switch scenario.kind {
        case .venues: receivedName = "pushes"; latencyName = "action → push"
        case .echo: receivedName = "echoes"; latencyName = "round trip"
        case .fanout: receivedName = "deliveries"; latencyName = "publish → delivery"
        case .routes: receivedName = "pushes"; latencyName = "post → push"
        case .tonight: receivedName = "pushes"; latencyName = "artist.favorite → tonight.suggested"
        }
        self.connectionsOpened = connectionsOpened
        self.connectionsWanted = connectionsWanted
        self.connectFailures = connectFailures
        self.setupSeconds = (setupSeconds * 100).rounded() / 100
        errors = total.errors
        closes = total.closes
        violations = ViolationCounts(total.violations)
        reconnects = total.reconnects
        self.timeline = timeline
        self.server = server
        self.harness = harness

        func ms(_ p: Double) -> Double { Double(total.percentileMicros(p)) / 1000 }
        let s = max(seconds, 1e-9)
        let errorCount = total.errors.values.reduce(0, +)
        var sum: [String: Double] = [
            "latencyP50Ms": ms(50), "latencyP90Ms": ms(90), "latencyP99Ms": ms(99), "latencyP999Ms": ms(99.9),
            "latencyMaxMs": total.latency.totalCount == 0 ? 0 : Double(total.latency.max) / 1000,
            "latencySamples": Double(total.latency.totalCount),
            "providerP50Ms": Double(total.providerLatency.totalCount == 0 ? 0 : total.providerLatency.valueAtPercentile(50)) / 1000,
            "providerP99Ms": Double(total.providerLatency.totalCount == 0 ? 0 : total.providerLatency.valueAtPercentile(99)) / 1000,
            "providerMaxMs": total.providerLatency.totalCount == 0 ? 0 : Double(total.providerLatency.max) / 1000,
            "providerSamples": Double(total.providerLatency.totalCount),
            "crossP50Ms": Double(total.crossLatency.totalCount == 0 ? 0 : total.crossLatency.valueAtPercentile(50)) / 1000,
            "crossP99Ms": Double(total.crossLatency.totalCount == 0 ? 0 : total.crossLatency.valueAtPercentile(99)) / 1000,
            "crossMaxMs": total.crossLatency.totalCount == 0 ? 0 : Double(total.crossLatency.max) / 1000,
            "crossSamples": Double(total.crossLatency.totalCount),
            "received": Double(total.received), "replayed": Double(total.replayed), "sent": Double(total.sent), "acked": Double(total.acked),
            "pushesPerSecond": (Double(total.received) / s).rounded(),
            "messagesPerSecond": (Double(total.received) / s).rounded(),
            "actionsSentPerSecond": (Double(total.sent) / s).rounded(),
            "actionsAckedPerSecond": (Double(total.acked) / s).rounded(),
            "violations": Double(total.violations.total),
            // A lost push of a route room is a seq gap and an undelivered item: both are "missing".
            "missing": Double(total.violations.missing + total.violations.undelivered),
            "duplicates": Double(total.violations.duplicates + total.violations.outOfOrder + total.violations.redelivered),
            "errors": Double(errorCount),
            "errorShare": total.sent == 0 ? 0 : Double(errorCount) / Double(total.sent),
            "unexpectedCloses": Double(total.closes.values.reduce(0, +)),
            "connectedShare": connectionsWanted == 0 ? 1 : Double(connectionsOpened) / Double(connectionsWanted),
        ]
        let attempts = total.reconnects.recovered + total.reconnects.snapshots + total.reconnects.failed
        if attempts > 0 { sum["recoveredShare"] = Double(total.reconnects.recovered) / Double(attempts) }
        if !server.isEmpty {
            let busy = server.dropFirst()
            sum["serverCpuMeanPercent"] = busy.isEmpty ? 0 : (busy.map(\.cpuPercent).reduce(0, +) / Double(busy.count)).rounded()
            sum["serverCpuMaxPercent"] = busy.map(\.cpuPercent).max() ?? 0
            sum["serverRssMaxKB"] = Double(server.map(\.rssKB).max() ?? 0)
            sum["serverRssStartKB"] = Double(server.first?.rssKB ?? 0)
        }
        serverRssSlope = RSSSlope(secondHalfOf: server)
        if let slope = serverRssSlope {
            sum["serverRssSlopeKBPerMinute"] = (slope.kbPerMinute * 100).rounded() / 100
            sum["serverRssSlopeMBPerHour"] = (slope.mbPerHour * 100).rounded() / 100
        }
        if harness.count > 1 {
            let busy = harness.dropFirst()
            sum["harnessCpuMeanPercent"] = (busy.map(\.cpuPercent).reduce(0, +) / Double(busy.count)).rounded()
            sum["harnessCpuMaxPercent"] = busy.map(\.cpuPercent).max() ?? 0
        }
        sum["connectionsPeak"] = Double(max(connectionsOpened, timeline.map(\.connections).max() ?? 0))
        sum.merge(extra) { $1 }
        summary = sum
        let outcomes = scenario.thresholds.map { $0.evaluate(sum) }
        thresholds = outcomes.map { ThresholdResult(metric: $0.threshold.key, limit: $0.threshold.limit, actual: $0.actual, passed: $0.passed) }
        passed = outcomes.allSatisfy(\.passed)
    }

    /// A readable summary for the terminal.
    public var table: String {
        func n(_ key: String) -> String {
            guard let v = summary[key] else { return "–" }
            return v == v.rounded() && abs(v) < 1e15 ? Self.grouped(Int(v)) : String(format: "%.2f", v)
        }
        var rows: [(String, String)] = [
            ("scenario", "\(scenario) (\(kind)) against \(target) \(url)"),
            ("connections", "\(connectionsOpened) of \(connectionsWanted) opened in \(setupSeconds) s" +
                (connectFailures.isEmpty ? "" : ", failures: " + Self.list(connectFailures))),
            ("measured", "\(seconds) s"),
            ("\(receivedName) received", "\(n("received")) (\(n("pushesPerSecond"))/s)"),
        ]
        if kind != "echo" { rows.append(("actions sent / acked", "\(n("sent")) / \(n("acked")) (\(n("actionsAckedPerSecond"))/s acked)")) }
        rows += [
            ("\(latencyName) ms", "p50 \(n("latencyP50Ms"))  p90 \(n("latencyP90Ms"))  p99 \(n("latencyP99Ms"))  p99.9 \(n("latencyP999Ms"))  max \(n("latencyMaxMs"))  (\(n("latencySamples")) samples)"),
        ]
        if n("crossSamples") != "0" {
            rows.append(("\(latencyName), across nodes ms", "p50 \(n("crossP50Ms"))  p99 \(n("crossP99Ms"))  max \(n("crossMaxMs"))  (\(n("crossSamples")) samples)"))
        }
        if n("providerSamples") != "0" {
            rows.append((kind == "tonight" ? "feed ingest (from its start) → push ms" : "provider burst → push ms", "p50 \(n("providerP50Ms"))  p99 \(n("providerP99Ms"))  max \(n("providerMaxMs"))  (\(n("providerSamples")) samples)"))
        }
        rows += [
            ("violations", kind == "tonight"
                ? "\(violations.missing) missing (seq), \(violations.duplicates) duplicated (seq), \(violations.wrongEpoch) wrong epoch, \(violations.undelivered) suggestions, announcements or changes never delivered, \(violations.redelivered) delivered twice, \(violations.unwanted) unwanted or wrong"
                : kind == "routes"
                ? "\(violations.missing) missing (seq), \(violations.duplicates) duplicated, \(violations.outOfOrder) out of order, \(violations.wrongEpoch) wrong epoch, \(violations.outsideCorridor) outside the corridor, \(violations.undelivered) items never delivered, \(violations.redelivered) items delivered twice"
                : "\(violations.missing) missing, \(violations.duplicates) duplicated, \(violations.outOfOrder) out of order, \(violations.wrongEpoch) wrong epoch, \(violations.badOrder) bad order, \(violations.badCount) bad counts"),
            ("errors", errors.isEmpty ? "none" : Self.list(errors)),
            ("unexpected closes", closes.isEmpty ? "none" : Self.list(closes)),
        ]
        if reconnects.dropped > 0 || reconnects.recovered + reconnects.snapshots + reconnects.failed > 0 {
            rows.append(("reconnects", "\(reconnects.dropped) dropped: \(reconnects.recovered) recovered with since, \(reconnects.snapshots) needed a snapshot, \(reconnects.failed) failed (recovered share \(n("recoveredShare"))); \(n("replayed")) missed pushes replayed"))
        }
        if summary["serverRssMaxKB"] != nil {
            rows.append(("server", "CPU mean \(n("serverCpuMeanPercent")) % max \(n("serverCpuMaxPercent")) %, RSS \(n("serverRssStartKB")) → max \(n("serverRssMaxKB")) KB"))
        }
        if let slope = serverRssSlope {
            rows.append(("server RSS slope", String(format: "%+.2f MB/h (%+.1f KB/min), least squares over the second half (%.0f–%.0f s, %d samples)",
                                                    slope.mbPerHour, slope.kbPerMinute, slope.fromSeconds, slope.toSeconds, slope.samples)))
        }
        if summary["harnessCpuMeanPercent"] != nil {
            rows.append(("harness", "CPU mean \(n("harnessCpuMeanPercent")) % max \(n("harnessCpuMaxPercent")) % (a harness near 100 % per loop measures itself)"))
        }
        for t in thresholds {
            let actual = t.actual.map { String(format: "%.2f", $0) } ?? "not measured"
            rows.append(("threshold \(t.metric)", "\(t.passed ? "pass" : "FAIL"): \(actual) (limit \(ScenarioReader.show(t.limit)))"))
        }
        rows.append(("result", passed ? "PASSED" : "FAILED"))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }.joined(separator: "\n")
    }

    /// Whether the run's clients sent protocol actions (venues, routes) rather than raw messages.
    public var hasActions: Bool { kind == Scenario.Kind.venues.rawValue || kind == Scenario.Kind.routes.rawValue }

    static func list(_ d: [String: Int]) -> String { d.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }

    static func grouped(_ v: Int) -> String {
        let s = String(abs(v))
        var out = ""
        for (i, ch) in s.enumerated() {
            if i > 0, (s.count - i) % 3 == 0 { out.append(",") }
            out.append(ch)
        }
        return (v < 0 ? "-" : "") + out
    }
}

/// The JSON result file: every run of one invocation (several in comparison mode).
public struct ResultFile: Sendable, Codable {
    public var runs: [RunReport]
    public var passed: Bool

    public init(runs: [RunReport]) {
        self.runs = runs
        passed = runs.allSatisfy(\.passed)
    }

    public func json() throws -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try e.encode(self)
    }
}
