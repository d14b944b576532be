import Foundation
import Routes

/// SplitMix64: a small deterministic generator, so a seed gives the same commutes on every run
/// and every machine (the system generator is seeded randomly).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<1`, evenly spread.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// One route of the plan: what a traveller sends in `route.subscribe` (`from`, `via`, `to`,
/// `widthMeters`), and the corridor it makes.
public struct CommuteRoute: Sendable, Equatable {
    public var from: GeoPoint
    public var via: [GeoPoint]
    public var to: GeoPoint
    public var widthMeters: Double
    /// 0 for the busiest popular route, 1 for the next...; nil for a traveller's own route.
    public var popularRank: Int?

    /// The band the server makes of it (the same rules: the harness knows the geometry too).
    public var corridor: Corridor { Corridor(path: [from] + via + [to], widthMeters: widthMeters) }
}

/// A city's commuting pattern, drawn from a seed: hubs (stations, business districts) in the city,
/// the popular hub-to-hub routes many travellers share, and for each other traveller a route of
/// its own from somewhere in the city to a hub. Points are rounded to 1e-4° (the precision of a
/// corridor's id), so travellers on one popular route send the same points and share one room.
public struct CommutePlan: Sendable {
    public let hubs: [GeoPoint]
    /// Popular routes first (by rank), then the travellers' own.
    public let routes: [CommuteRoute]
    /// The route of each traveller (an index into `routes`).
    public let travellerRoutes: [Int]
    public let city: Scenario.City

    public init(_ settings: Scenario.RouteSettings) {
        var rng = SeededGenerator(seed: settings.seed)
        city = settings.city
        let city = settings.city
        let hubs = (0..<settings.hubs).map { _ in Self.pointInCity(city, &rng) }
        self.hubs = hubs

        // Popular routes: distinct ordered pairs of hubs, drawn without repeats.
        var pairs: [(Int, Int)] = []
        for a in hubs.indices { for b in hubs.indices where a != b { pairs.append((a, b)) } }
        for i in stride(from: pairs.count - 1, to: 0, by: -1) { pairs.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        var routes: [CommuteRoute] = pairs.prefix(settings.popularRoutes).enumerated().map { rank, pair in
            Self.route(from: hubs[pair.0], to: hubs[pair.1], settings: settings, rank: rank, &rng)
        }

        // Popularity falls with rank as 1/rank (Zipf): the first route is the main line.
        var cumulative: [Double] = []
        var sum = 0.0
        for r in 0..<settings.popularRoutes {
            sum += 1 / Double(r + 1)
            cumulative.append(sum)
        }
        var travellerRoutes: [Int] = []
        travellerRoutes.reserveCapacity(settings.travellers)
        for _ in 0..<settings.travellers {
            if settings.popularRoutes > 0, rng.unit() < settings.popularShare {
                let x = rng.unit() * sum
                var lo = 0, hi = cumulative.count - 1
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if cumulative[mid] > x { hi = mid } else { lo = mid + 1 }
                }
                travellerRoutes.append(lo)
            } else {
                let home = Self.pointInCity(city, &rng)
                let hub = hubs[Int(rng.next() % UInt64(hubs.count))]
                travellerRoutes.append(routes.count)
                routes.append(Self.route(from: home, to: hub, settings: settings, rank: nil, &rng))
            }
        }
        self.routes = routes
        self.travellerRoutes = travellerRoutes
    }

    /// A route from `a` to `b` bent through `viaPoints` points, each pushed sideways off the
    /// straight line by up to 15 % of its length.
    static func route(from a: GeoPoint, to b: GeoPoint, settings: Scenario.RouteSettings, rank: Int?,
                      _ rng: inout SeededGenerator) -> CommuteRoute {
        let (east, north) = Self.metres(from: a, to: b)
        let length = (east * east + north * north).squareRoot()
        var via: [GeoPoint] = []
        if length > 0 {
            for i in 0..<settings.viaPoints {
                let f = Double(i + 1) / Double(settings.viaPoints + 1)
                let side = (rng.unit() * 2 - 1) * 0.15 * length
                // Perpendicular to the line, (−north, east) normalised.
                via.append(Self.offset(a, east: east * f - north / length * side, north: north * f + east / length * side).rounded())
            }
        }
        return CommuteRoute(from: a, via: via, to: b, widthMeters: settings.widthMeters, popularRank: rank)
    }

    /// A point for a traveller's post: inside its corridor (at most 80 % of the half-width off its
    /// path, so clear of the edge), or outside it (20 m to 1.5 km beyond the edge, on either side).
    /// Where it really lies is decided by the corridor's geometry, not by this intent.
    public func postPoint(route index: Int, inside: Bool, using rng: inout some RandomNumberGenerator) -> GeoPoint {
        let route = routes[index]
        let half = route.widthMeters / 2
        let side: Double = Double.random(in: 0..<1, using: &rng) < 0.5 ? -1 : 1
        let off = inside ? Double.random(in: 0...0.8, using: &rng) * half : half + Double.random(in: 20...1500, using: &rng)
        return point(along: route, sideways: side * off, using: &rng)
    }

    /// A point for a provider's item: on a popular route half the time (where travellers are),
    /// anywhere in the city otherwise.
    public func providerPoint(using rng: inout some RandomNumberGenerator) -> GeoPoint {
        let popular = routes.prefix { $0.popularRank != nil }
        if !popular.isEmpty, Bool.random(using: &rng) {
            let route = popular[Int.random(in: popular.indices, using: &rng)]
            return point(along: route, sideways: Double.random(in: -0.8...0.8, using: &rng) * route.widthMeters / 2, using: &rng)
        }
        let r = city.radiusKm * 1000 * Double.random(in: 0..<1, using: &rng).squareRoot()
        let a = Double.random(in: 0..<(2 * .pi), using: &rng)
        return Self.offset(city.center, east: r * cos(a), north: r * sin(a)).rounded(places: 6)
    }

    /// A point at a random place along `route`'s path (segments weighted by length), moved
    /// `sideways` metres across it.
    private func point(along route: CommuteRoute, sideways: Double, using rng: inout some RandomNumberGenerator) -> GeoPoint {
        let path = [route.from] + route.via + [route.to]
        let segments = zip(path, path.dropFirst()).map { ($0, $1, Self.metres(from: $0, to: $1)) }
        let lengths = segments.map { ($0.2.east * $0.2.east + $0.2.north * $0.2.north).squareRoot() }
        let total = lengths.reduce(0, +)
        var x = Double.random(in: 0...1, using: &rng) * total
        var k = 0
        while k < segments.count - 1, x > lengths[k] {
            x -= lengths[k]
            k += 1
        }
        let (a, _, d) = segments[k]
        let length = lengths[k]
        guard length > 0 else { return Self.offset(a, east: sideways, north: 0).rounded(places: 6) }
        let f = x / length
        return Self.offset(a, east: d.east * f - d.north / length * sideways,
                           north: d.north * f + d.east / length * sideways).rounded(places: 6)
    }

    // MARK: Local flat geometry (a city is small enough for it; the checks use the sphere)

    static let metresPerDegree = Double.pi / 180 * GeoPoint.earthRadius

    static func pointInCity(_ city: Scenario.City, _ rng: inout SeededGenerator) -> GeoPoint {
        let r = city.radiusKm * 1000 * rng.unit().squareRoot()
        let a = rng.unit() * 2 * .pi
        return offset(city.center, east: r * cos(a), north: r * sin(a)).rounded()
    }

    static func offset(_ p: GeoPoint, east: Double, north: Double) -> GeoPoint {
        let lat = p.lat + north / metresPerDegree
        let lon = p.lon + east / (metresPerDegree * cos(p.lat * .pi / 180))
        return GeoPoint(lat: min(90, max(-90, lat)), lon: min(180, max(-180, lon))) ?? p
    }

    static func metres(from a: GeoPoint, to b: GeoPoint) -> (east: Double, north: Double) {
        ((b.lon - a.lon) * metresPerDegree * cos(a.lat * .pi / 180), (b.lat - a.lat) * metresPerDegree)
    }
}

extension GeoPoint {
    /// Rounded to `places` decimals of a degree (4: a corridor id's precision, about 11 m).
    func rounded(places: Int = 4) -> GeoPoint {
        let f = pow(10, Double(places))
        return GeoPoint(lat: (lat * f).rounded() / f, lon: (lon * f).rounded() / f) ?? self
    }
}
