import Foundation
import Routes

extension Scenario {
    /// Event-goers in the early evening (kind `tonight`): users with a place, a radius and favourite
    /// artists connect and watch their `user:` room while the seed-sized event feed is ingested,
    /// an affinity feed follows, users follow events, then the feed is ingested again with changes
    /// (moved, rescheduled, cancelled and newly announced events). See `config/scenarios/README.md`.
    public struct TonightSettings: Sendable, Equatable {
        /// Simulated users (accounts).
        public var users: Int
        /// Where venues and users are.
        public var city: City
        /// The feed's size (seed 000: 20,000 artists, 13,700 venues, 75 categories, 60,000 events).
        public var artists: Int
        public var venues: Int
        public var categories: Int
        public var events: Int
        /// Share of the events that are tonight's (in the venues' evening); the rest lie up to
        /// `daysAhead` days ahead.
        public var tonightShare: Double
        public var daysAhead: Int
        /// Favourite artists per user, drawn with the artists' popularity (the first most popular).
        public var favouritesPerUser: Int
        /// Each user's radius, uniform in range.
        public var radiusKm: ClosedRange<Double>
        /// Events each user follows (among tonight's, not their favourites').
        public var followsPerUser: Int
        /// Seconds into the run: the feed's first ingest, then the re-ingest with changes.
        public var ingestAtSeconds: Double
        public var reingestAtSeconds: Double
        /// Users connect over this many seconds from the start.
        public var connectSeconds: Double
        /// Once the feeds are in, users favour their artists and follow their events at a moment
        /// of their own within this many seconds (those who arrive later, within as long after
        /// their arrival).
        public var engageSeconds: Double
        /// Shares of tonight's events the re-ingest moves to another venue, reschedules, cancels;
        /// and new events it publishes (a share of the feed's events).
        public var movedShare: Double
        public var rescheduledShare: Double
        public var cancelledShare: Double
        public var announcedShare: Double
        /// Recommended artists per popular artist in the affinity feed.
        public var recommendationsPerArtist: Int
        public var seed: UInt64
    }

    static func readTonight(_ r: inout ScenarioReader, duration: Double) throws(ScenarioError) -> TonightSettings {
        var city = City(center: GeoPoint(40.4168, -3.7038), radiusKm: 25)
        if var c = try r.object("city") {
            city = City(center: GeoPoint(try c.double("lat", in: -80...80, default: city.center.lat), try c.double("lon", in: -170...170, default: city.center.lon)),
                        radiusKm: try c.double("radiusKm", in: 1...200, default: city.radiusKm))
            try c.finish()
        }
        let radiusMin = try r.double("radiusKmMin", in: 0.5...300, default: 3)
        let radiusMax = try r.double("radiusKmMax", in: 0.5...300, default: 10)
        guard radiusMin <= radiusMax else { throw ScenarioError("tonight.radiusKmMin must not exceed tonight.radiusKmMax") }
        let s = TonightSettings(
            users: try r.int("users", in: 1...1_000_000, default: 100), city: city,
            artists: try r.int("artists", in: 2...1_000_000, default: 2_000), venues: try r.int("venues", in: 2...1_000_000, default: 1_000),
            categories: try r.int("categories", in: 1...10_000, default: 75), events: try r.int("events", in: 1...10_000_000, default: 6_000),
            tonightShare: try r.double("tonightShare", in: 0...1, default: 0.05), daysAhead: try r.int("daysAhead", in: 1...3_650, default: 120),
            favouritesPerUser: try r.int("favouritesPerUser", in: 0...1_000, default: 5), radiusKm: radiusMin...radiusMax,
            followsPerUser: try r.int("followsPerUser", in: 0...100, default: 2),
            ingestAtSeconds: try r.double("ingestAtSeconds", in: 0...86_400, default: 5),
            reingestAtSeconds: try r.double("reingestAtSeconds", in: 0...86_400, default: 30),
            connectSeconds: try r.double("connectSeconds", in: 0...86_400, default: 10),
            engageSeconds: try r.double("engageSeconds", in: 0...86_400, default: 5),
            movedShare: try r.double("movedShare", in: 0...1, default: 0.05), rescheduledShare: try r.double("rescheduledShare", in: 0...1, default: 0.05),
            cancelledShare: try r.double("cancelledShare", in: 0...1, default: 0.05), announcedShare: try r.double("announcedShare", in: 0...1, default: 0.02),
            recommendationsPerArtist: try r.int("recommendationsPerArtist", in: 0...1_000, default: 5),
            seed: UInt64(try r.int("seed", in: 0...(1 << 53), default: 1)))
        guard s.ingestAtSeconds < s.reingestAtSeconds, s.reingestAtSeconds < duration else {
            throw ScenarioError("tonight: ingestAtSeconds < reingestAtSeconds < durationSeconds")
        }
        guard s.connectSeconds < s.reingestAtSeconds else {
            throw ScenarioError("tonight.connectSeconds must end before reingestAtSeconds (every user is settled before the changes)")
        }
        try r.finish()
        return s
    }
}
