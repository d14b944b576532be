/// The path a traveller actually travelled to a destination (`route.track`), and the corridor
/// that follows it next time. Pure.
public enum RecordedPath {
    /// One recorded position.
    public struct Fix: Sendable, Equatable {
        public var point: GeoPoint
        /// Seconds since 1970.
        public var at: Double
        public init(point: GeoPoint, at: Double) {
            self.point = point
            self.at = at
        }
    }

    /// When a corridor follows a recorded path.
    public struct Rules: Sendable, Equatable {
        /// The recorded path is followed from a `from` within this many metres of its start.
        public var startMeters = 1_000.0
        /// Points of the recording closer than this to the simplified line are dropped.
        public var toleranceMeters = 25.0
        public init() {}
    }

    /// The corridor from `from` to `to` along `recorded` (oldest fix first) when the recording
    /// starts near `from`; nil when it does not (or is too short to say anything), or when the
    /// corridor along it would break `limits` — then the straight route is used.
    ///
    /// The recording is simplified to at most `limits.maxVia` points: the points that stray
    /// furthest from the line are kept first (top-down Douglas–Peucker), until every dropped point
    /// lies within `rules.toleranceMeters` of it.
    public static func corridor(from: GeoPoint, to: GeoPoint, recorded: [GeoPoint], widthMeters: Double, rules: Rules = .init(),
                                limits: Corridor.Limits = .init()) -> Corridor? {
        guard recorded.count >= 2, from.distance(to: recorded[0]) <= rules.startMeters else { return nil }
        let via = simplified(recorded, toleranceMeters: rules.toleranceMeters, maxPoints: limits.maxVia)
        return try? Corridor(from: from, via: via, to: to, widthMeters: widthMeters, limits: limits)
    }

    /// `points` reduced to at most `maxPoints` (its two ends always among them when `maxPoints` ≥ 2),
    /// adding the point furthest from the current line until none strays more than `toleranceMeters`.
    /// Each step scans only the two halves of the segment it splits: O(n · maxPoints).
    public static func simplified(_ points: [GeoPoint], toleranceMeters: Double, maxPoints: Int) -> [GeoPoint] {
        guard points.count > 2, maxPoints >= 2 else { return Array(points.prefix(max(0, maxPoints))) }
        /// A span of the recording between two kept points, and its point that strays furthest.
        struct Span {
            var first: Int, last: Int
            var furthest: Int, distance: Double
        }
        func span(_ first: Int, _ last: Int) -> Span {
            var best = Span(first: first, last: last, furthest: -1, distance: -1)
            guard last - first > 1 else { return best }
            for i in (first + 1)..<last {
                let d = points[i].distance(toSegmentFrom: points[first], to: points[last])
                if d > best.distance { (best.furthest, best.distance) = (i, d) }
            }
            return best
        }
        var kept: Set<Int> = [0, points.count - 1]
        var spans = [span(0, points.count - 1)]
        while kept.count < maxPoints, let worst = spans.indices.max(by: { spans[$0].distance < spans[$1].distance }),
              spans[worst].distance > toleranceMeters {
            let s = spans.remove(at: worst)
            kept.insert(s.furthest)
            spans.append(span(s.first, s.furthest))
            spans.append(span(s.furthest, s.last))
        }
        return kept.sorted().map { points[$0] }
    }
}
