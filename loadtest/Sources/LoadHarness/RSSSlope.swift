/// How fast a process's resident memory grew over the second half of a run: the least-squares
/// slope of its sampled RSS against time. The first half is left out because a server's memory
/// rises while it warms up (connections arrive, caches and room histories fill); what still grows
/// in the second half of a steady load is what a leak looks like.
public struct RSSSlope: Sendable, Equatable, Codable {
    /// KB per minute (negative: shrinking).
    public var kbPerMinute: Double
    /// The same in MB per hour.
    public var mbPerHour: Double
    /// Seconds (since the run began) of the first and last sample fitted.
    public var fromSeconds: Double
    public var toSeconds: Double
    /// The fitted line's RSS at `fromSeconds` and at `toSeconds`, KB (to draw it).
    public var fromKB: Double
    public var toKB: Double
    /// Samples fitted.
    public var samples: Int

    /// The slope over the second half of `samples` (those at or after the midpoint of the first
    /// and last sample's times); nil with fewer than three samples there, or all at one time.
    public init?(secondHalfOf samples: [ServerSample]) {
        guard let first = samples.first, let last = samples.last else { return nil }
        let middle = (first.t + last.t) / 2
        let half = samples.filter { $0.t >= middle }
        guard half.count >= 3, let from = half.first?.t, let to = half.last?.t,
              let line = Self.leastSquares(half.map { (x: $0.t, y: Double($0.rssKB)) }) else { return nil }
        kbPerMinute = line.slope * 60
        mbPerHour = line.slope * 3600 / 1024
        fromSeconds = from
        toSeconds = to
        fromKB = line.intercept + line.slope * from
        toKB = line.intercept + line.slope * to
        self.samples = half.count
    }

    /// The least-squares line y = intercept + slope·x through `points`; nil with fewer than two
    /// points or no spread in x.
    public static func leastSquares(_ points: [(x: Double, y: Double)]) -> (slope: Double, intercept: Double)? {
        guard points.count >= 2 else { return nil }
        let n = Double(points.count)
        let meanX = points.reduce(0.0) { $0 + $1.x } / n
        let meanY = points.reduce(0.0) { $0 + $1.y } / n
        var sxy = 0.0, sxx = 0.0
        for p in points {
            let dx = p.x - meanX
            sxy += dx * (p.y - meanY)
            sxx += dx * dx
        }
        guard sxx > 0, sxx.isFinite, sxy.isFinite else { return nil }
        let slope = sxy / sxx
        return (slope, meanY - slope * meanX)
    }
}
