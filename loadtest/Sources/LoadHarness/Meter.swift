import Histogram

/// What one client loop measured since its last harvest. Loop-confined while it is filled; handed
/// to the collector (another thread) only as a finished value.
public struct Interval: @unchecked Sendable {
    /// Action → push latency (or round trip, or delivery latency), microseconds.
    public var latency = Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    /// Routes: a provider's burst → each of its items' pushes, microseconds (apart, because a burst
    /// of many items each reaching hundreds of travellers takes as long as its pushes take to send).
    public var providerLatency = Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    /// Several servers: action → push latency of the pushes received on another node than the
    /// one the action was sent to, microseconds (a subset of `latency`).
    public var crossLatency = Histogram<UInt64>(highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    /// Pushes (or echoes, or deliveries) received.
    public var received = 0
    /// Missed pushes replayed after a recovered re-subscribe (not timed: their delay is the outage's).
    public var replayed = 0
    /// Actions (or messages) sent.
    public var sent = 0
    /// Actions acknowledged `ok`.
    public var acked = 0
    /// Error replies by code.
    public var errors: [String: Int] = [:]
    /// Connections that closed, by close code, when the harness did not close them itself.
    public var closes: [String: Int] = [:]
    public var violations = Violations()
    public var reconnects = Reconnects()

    public init() {}

    @inline(__always) public mutating func recordLatency(nanos: UInt64) {
        _ = latency.record(min(nanos / 1000, 3_600_000_000))
    }

    @inline(__always) public mutating func recordCrossLatency(nanos: UInt64) {
        _ = crossLatency.record(min(nanos / 1000, 3_600_000_000))
    }

    @inline(__always) public mutating func recordProviderLatency(nanos: UInt64) {
        _ = providerLatency.record(min(nanos / 1000, 3_600_000_000))
    }

    public mutating func merge(_ o: Interval) {
        latency.add(o.latency)
        providerLatency.add(o.providerLatency)
        crossLatency.add(o.crossLatency)
        received += o.received
        replayed += o.replayed
        sent += o.sent
        acked += o.acked
        for (k, v) in o.errors { errors[k, default: 0] += v }
        for (k, v) in o.closes { closes[k, default: 0] += v }
        violations += o.violations
        reconnects += o.reconnects
    }

    public func percentileMicros(_ p: Double) -> UInt64 { latency.totalCount == 0 ? 0 : latency.valueAtPercentile(p) }
}

/// Reconnections during a run: how many re-subscribed with `since` and how that went.
public struct Reconnects: Sendable, Equatable, Codable {
    /// Connections dropped on purpose (a reconnect storm).
    public var dropped = 0
    /// Re-subscriptions with `since` answered `recovered: true` (no snapshot needed).
    public var recovered = 0
    /// Re-subscriptions with `since` answered with a snapshot instead.
    public var snapshots = 0
    /// Reconnections that failed (connect, auth or subscribe).
    public var failed = 0
    public init() {}

    public static func += (a: inout Reconnects, b: Reconnects) {
        a.dropped += b.dropped
        a.recovered += b.recovered
        a.snapshots += b.snapshots
        a.failed += b.failed
    }
}
