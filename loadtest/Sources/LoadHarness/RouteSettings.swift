import Foundation
import Routes

extension Scenario {
    /// Rush hour for travellers (kind `routes`): a city's commuters each subscribe to their
    /// commute's corridor, post intel along it (and off it), like and comment on what they see; a
    /// provider may post bursts of items over HTTP. See `config/scenarios/README.md`.
    public struct RouteSettings: Sendable, Equatable {
        /// Simulated travellers (accounts), each with one commute.
        public var travellers: Int
        /// Where the commutes lie.
        public var city: City
        /// Stations and business districts: every commute ends at one, popular ones run between two.
        public var hubs: Int
        /// Distinct hub-to-hub routes that many travellers share (ranked: the first is busiest).
        public var popularRoutes: Int
        /// Share of travellers on a popular route; the others each have a route of their own.
        public var popularShare: Double
        /// Every corridor's width.
        public var widthMeters: Double
        /// Bends of each route: points between its ends, pushed off the straight line.
        public var viaPoints: Int
        /// Seed of the commute generator: the same seed gives the same city, routes and travellers.
        public var seed: UInt64
        /// The morning being simulated, compressed into `durationSeconds`.
        public var clock: NightClock
        /// Share of the travellers on their way (subscribed) over the morning.
        public var present: Curve
        public var maxArrivalsPerSecond: Double
        public var maxDeparturesPerSecond: Double
        /// Pause between a traveller's arrival steps (connect, auth, route.subscribe), uniform in range.
        public var thinkTimeMillis: ClosedRange<Double>
        public var postsPerTravellerPerMinute: Double
        /// Share of a traveller's posts placed outside its own corridor.
        public var offCorridorShare: Double
        public var likesPerTravellerPerMinute: Double
        public var commentsPerTravellerPerMinute: Double
        /// Items in each provider burst (`POST /api/intel`); 0: no provider.
        public var providerBurstItems: Int
        /// Seconds between provider bursts (run seconds, not clock minutes).
        public var providerBurstSeconds: Double
        /// The provider's `source` name on its items.
        public var providerSource: String
    }

    /// A city: a disc around its centre.
    public struct City: Sendable, Equatable {
        public var center: GeoPoint
        public var radiusKm: Double

        public init(center: GeoPoint, radiusKm: Double) {
            self.center = center
            self.radiusKm = radiusKm
        }
    }

    static func readRoutes(_ r: inout ScenarioReader, duration: Double) throws(ScenarioError) -> RouteSettings {
        let travellers = try r.int("travellers", in: 1...1_000_000, default: 100)
        var city = City(center: GeoPoint(41.015, 28.979), radiusKm: 15)
        if var c = try r.object("city") {
            let lat = try c.double("lat", in: -80...80, default: city.center.lat)
            let lon = try c.double("lon", in: -180...180, default: city.center.lon)
            city = City(center: GeoPoint(lat, lon), radiusKm: try c.double("radiusKm", in: 0.5...100, default: city.radiusKm))
            try c.finish()
            // The harness boxes corridors in plain degrees: a city across the antimeridian would break them.
            let spanDegrees = city.radiusKm * 1.5 / (111.2 * cos(lat * .pi / 180))
            guard lon - spanDegrees > -180, lon + spanDegrees < 180 else {
                throw ScenarioError("routes.city must not reach the antimeridian (lon ± radius)")
            }
        }
        let hubs = try r.int("hubs", in: 1...200, default: 12)
        let popular = try r.int("popularRoutes", in: 0...39_800, default: 20)
        guard popular <= hubs * (hubs - 1) else {
            throw ScenarioError("routes.popularRoutes must be at most hubs × (hubs − 1) = \(hubs * (hubs - 1)) (distinct hub-to-hub routes), not \(popular)")
        }
        let share = try r.double("popularShare", in: 0...1, default: 0.6)
        guard share == 0 || popular > 0 else { throw ScenarioError("routes.popularShare needs routes.popularRoutes of at least 1") }
        let width = try r.double("widthMeters", in: 10...20_000, default: 300)
        let via = try r.int("viaPoints", in: 0...25, default: 1)
        let seed = UInt64(try r.int("seed", in: 0...(1 << 53), default: 1))
        let clock = try NightClock(from: try r.string("clockFrom", default: "07:00"), to: try r.string("clockTo", default: "09:30"),
                                   seconds: duration)
        let present = try readPresent(&r, clock: clock)
        let thinkMin = try r.double("thinkTimeMinMs", in: 0...60_000, default: 50)
        let thinkMax = try r.double("thinkTimeMaxMs", in: 0...60_000, default: 500)
        guard thinkMin <= thinkMax else { throw ScenarioError("routes.thinkTimeMinMs must not exceed routes.thinkTimeMaxMs") }
        let settings = RouteSettings(
            travellers: travellers, city: city, hubs: hubs, popularRoutes: popular, popularShare: share, widthMeters: width,
            viaPoints: via, seed: seed, clock: clock, present: present,
            maxArrivalsPerSecond: try r.double("maxArrivalsPerSecond", in: 0.01...1_000_000, default: 500),
            maxDeparturesPerSecond: try r.double("maxDeparturesPerSecond", in: 0.01...1_000_000, default: 500),
            thinkTimeMillis: thinkMin...thinkMax,
            postsPerTravellerPerMinute: try r.double("postsPerTravellerPerMinute", in: 0...600, default: 0.5),
            offCorridorShare: try r.double("offCorridorShare", in: 0...1, default: 0.2),
            likesPerTravellerPerMinute: try r.double("likesPerTravellerPerMinute", in: 0...600, default: 1),
            commentsPerTravellerPerMinute: try r.double("commentsPerTravellerPerMinute", in: 0...600, default: 0.2),
            providerBurstItems: try r.int("providerBurstItems", in: 0...10_000, default: 0),
            providerBurstSeconds: try r.double("providerBurstSeconds", in: 0.1...86_400, default: 10),
            providerSource: try r.string("providerSource", default: "load-provider"))
        guard !settings.providerSource.isEmpty else { throw ScenarioError("routes.providerSource must not be empty") }
        try r.finish()
        return settings
    }
}
