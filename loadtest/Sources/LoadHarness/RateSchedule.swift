/// A night (e.g. 18:00 → 23:00) compressed into a run of `seconds`: maps clock times to run
/// seconds and back. A night that passes midnight (22:00 → 03:00) is understood as such.
public struct NightClock: Sendable, Equatable {
    /// Minutes after midnight at the start and the end (the end may exceed 24 h).
    public let fromMinutes: Double
    public let toMinutes: Double
    public let seconds: Double

    public init(from: String, to: String, seconds: Double) throws(ScenarioError) {
        let a = try Self.minutes(from)
        var b = try Self.minutes(to)
        if b <= a { b += 24 * 60 }
        fromMinutes = a
        toMinutes = b
        self.seconds = seconds
    }

    private init(fromMinutes: Double, toMinutes: Double, seconds: Double) {
        self.fromMinutes = fromMinutes
        self.toMinutes = toMinutes
        self.seconds = seconds
    }

    /// The same night compressed into another number of seconds.
    public func over(seconds: Double) -> NightClock { NightClock(fromMinutes: fromMinutes, toMinutes: toMinutes, seconds: seconds) }

    /// "HH:MM" → minutes after midnight.
    static func minutes(_ text: String) throws(ScenarioError) -> Double {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let h = Int(parts[0]), let m = Int(parts[1]), (0...24).contains(h), (0...59).contains(m),
              parts[1].count == 2, h * 60 + m <= 24 * 60 else {
            throw ScenarioError("\(text) is not a time of day (HH:MM)")
        }
        return Double(h * 60 + m)
    }

    /// Run seconds at which the clock shows `time` (must lie within the night).
    public func seconds(at time: String) throws(ScenarioError) -> Double {
        var m = try Self.minutes(time)
        if m < fromMinutes { m += 24 * 60 }
        guard m <= toMinutes else { throw ScenarioError("\(time) is outside the night \(label(fromMinutes))–\(label(toMinutes))") }
        return (m - fromMinutes) / (toMinutes - fromMinutes) * seconds
    }

    /// The clock time shown at run second `t`, as "HH:MM".
    public func clock(at t: Double) -> String {
        label(fromMinutes + (toMinutes - fromMinutes) * min(max(t / seconds, 0), 1))
    }

    private func label(_ minutes: Double) -> String {
        let m = Int(minutes.rounded(.down)) % (24 * 60)
        let h = m / 60, mm = m % 60
        return (h < 10 ? "0" : "") + String(h) + ":" + (mm < 10 ? "0" : "") + String(mm)
    }
}

/// A piecewise-linear function of run seconds, flat before the first and after the last point.
public struct Curve: Sendable, Equatable {
    public struct Point: Sendable, Equatable {
        public var t: Double
        public var value: Double
        public init(t: Double, value: Double) {
            self.t = t
            self.value = value
        }
    }

    public let points: [Point]

    public init(_ points: [Point]) throws(ScenarioError) {
        guard !points.isEmpty else { throw ScenarioError("needs at least one point") }
        for (a, b) in zip(points, points.dropFirst()) where b.t < a.t {
            throw ScenarioError("points must be in time order")
        }
        self.points = points
    }

    public func value(at t: Double) -> Double {
        guard let first = points.first, let last = points.last else { return 0 }
        if t <= first.t { return first.value }
        if t >= last.t { return last.value }
        var i = 1
        while points[i].t < t { i += 1 }
        let a = points[i - 1], b = points[i]
        guard b.t > a.t else { return b.value }
        return a.value + (b.value - a.value) * (t - a.t) / (b.t - a.t)
    }
}

/// Turns a rate that varies over time into whole events: `advance` adds rate × elapsed and returns
/// how many events are due, carrying the fraction over, so over any run the count of events is the
/// integral of the rate, never off by more than one.
public struct RateAccumulator: Sendable {
    private var owed = 0.0

    public init() {}

    /// Events due after `seconds` at `perSecond`.
    public mutating func advance(perSecond: Double, seconds: Double) -> Int {
        guard perSecond > 0, seconds > 0 else { return 0 }
        owed += perSecond * seconds
        let due = owed.rounded(.down)
        owed -= due
        return Int(due)
    }
}

/// How many patrons should arrive or leave now so the crowd follows its curve, within the
/// scenario's arrival and departure rate limits.
public struct CrowdPlanner: Sendable {
    public let capacity: Int
    public let present: Curve
    public let maxArrivalsPerSecond: Double
    public let maxDeparturesPerSecond: Double
    private var arrivals = RateAccumulator()
    private var departures = RateAccumulator()

    public init(capacity: Int, present: Curve, maxArrivalsPerSecond: Double, maxDeparturesPerSecond: Double) {
        self.capacity = capacity
        self.present = present
        self.maxArrivalsPerSecond = maxArrivalsPerSecond
        self.maxDeparturesPerSecond = maxDeparturesPerSecond
    }

    /// The crowd the curve asks for at run second `t`.
    public func target(at t: Double) -> Int { Int((present.value(at: t) * Double(capacity)).rounded()) }

    /// Arrivals (positive) or departures (negative) to start after `dt` seconds, given the crowd
    /// that is present or on its way.
    public mutating func step(at t: Double, dt: Double, current: Int) -> Int {
        let want = target(at: t) - current
        if want > 0 {
            _ = departures.advance(perSecond: 0, seconds: dt)
            return min(want, arrivals.advance(perSecond: maxArrivalsPerSecond, seconds: dt))
        } else if want < 0 {
            return -min(-want, departures.advance(perSecond: maxDeparturesPerSecond, seconds: dt))
        }
        return 0
    }
}
