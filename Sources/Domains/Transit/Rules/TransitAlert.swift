/// A GTFS-Realtime service alert as Hubbub reads it (the standard's `FeedEntity` with an `Alert`),
/// independent of the protobuf code that decodes it.
public struct TransitAlert: Sendable, Equatable {
    /// Text in one language (`language` nil: untagged).
    public struct Translation: Sendable, Equatable {
        public var text: String
        public var language: String?
        public init(_ text: String, language: String? = nil) {
            self.text = text
            self.language = language
        }
    }

    /// What the alert is about (GTFS-Realtime's `EntitySelector`): any of its fields may be set.
    public struct Entity: Sendable, Equatable {
        public var agency: String?
        public var route: String?
        public var routeType: Int?
        /// A trip the alert names, and its route when the alert gives it.
        public var trip: String?
        public var tripRoute: String?
        public var stop: String?
        public init(agency: String? = nil, route: String? = nil, routeType: Int? = nil, trip: String? = nil, tripRoute: String? = nil,
                    stop: String? = nil) {
            self.agency = agency
            self.route = route
            self.routeType = routeType
            self.trip = trip
            self.tripRoute = tripRoute
            self.stop = stop
        }
    }

    /// The feed entity's id: a later message with the same id updates the alert.
    public var id: String
    /// The entity says the alert is gone (a differential message).
    public var isDeleted = false
    /// When it is in force: `start`/`end` in seconds since 1970, either may be open.
    public var activePeriods: [(start: UInt64?, end: UInt64?)] = []
    public var entities: [Entity] = []
    public var header: [Translation] = []
    public var description: [Translation] = []

    public init(id: String, isDeleted: Bool = false, activePeriods: [(start: UInt64?, end: UInt64?)] = [], entities: [Entity] = [],
                header: [Translation] = [], description: [Translation] = []) {
        self.id = id
        self.isDeleted = isDeleted
        self.activePeriods = activePeriods
        self.entities = entities
        self.header = header
        self.description = description
    }

    public static func == (a: TransitAlert, b: TransitAlert) -> Bool {
        a.id == b.id && a.isDeleted == b.isDeleted && a.entities == b.entities && a.header == b.header && a.description == b.description
            && a.activePeriods.elementsEqual(b.activePeriods) { $0.start == $1.start && $0.end == $1.end }
    }
}

/// Where and how an alert is shown as an intel item (feeds.md's transit section): at every stop
/// it informs (a route, or a trip's route, informs all its stops), its text in the agency's
/// language (else the untagged one, else the first) with every translation, until the end of its
/// active periods.
public struct PlacedAlert: Sendable, Equatable {
    public struct Point: Sendable, Equatable {
        public var lat: Double
        public var lon: Double
        public init(lat: Double, lon: Double) {
            self.lat = lat
            self.lon = lon
        }
    }

    public var id: String
    /// Each located stop once, in stop id order.
    public var points: [Point]
    public var body: String
    /// Text by language tag (only tagged translations).
    public var translations: [String: String]
    /// When it expires (seconds since 1970), nil: the item's usual lifetime.
    public var expiresAt: Double?
    /// The `route_type`s of the routes it informs (each once, in order), for its modes and tags.
    public var routeTypes: [Int] = []

    /// Places `alert` in `network`, or says why it cannot be (no stop of the network located).
    public static func place(_ alert: TransitAlert, in network: TransitNetwork) -> Result<PlacedAlert, PlacementError> {
        var stops = Set<String>()
        var types: [Int] = []
        func note(_ type: Int?) { if let type, !types.contains(type) { types.append(type) } }
        for e in alert.entities {
            // A trip informs its route's stops: the route the alert gives, else the one the feed says it runs on.
            let tripRoute = e.tripRoute ?? e.trip.flatMap(network.route(ofTrip:))
            let routes = [e.route, tripRoute].compactMap { $0 }
            for route in routes { note(network.routes[route]?.type) }
            note(e.routeType)
            // The selector's fields together narrow it: a stop with a route is that stop (on that route).
            if let stop = e.stop {
                if network.stops[stop] != nil { stops.insert(stop) }
            } else {
                for route in routes { stops.formUnion(network.stopsOfRoute[route] ?? []) }
            }
        }
        guard !stops.isEmpty else {
            return .failure(PlacementError(alert: alert.id, reason: "no informed entity is a stop, route or trip of the feed's network"))
        }
        guard let body = pick(alert.header, language: network.agencies.first?.language) ?? pick(alert.description, language: network.agencies.first?.language),
              !body.isEmpty else {
            return .failure(PlacementError(alert: alert.id, reason: "no header_text or description_text"))
        }
        var translations: [String: String] = [:]
        for t in alert.header.isEmpty ? alert.description : alert.header {
            if let language = t.language, !language.isEmpty, translations[language] == nil { translations[language] = t.text }
        }
        // In force until the last period ends; an open end (or no period) means the usual lifetime.
        let ends = alert.activePeriods.map(\.end)
        let expiresAt = !ends.isEmpty && ends.allSatisfy({ $0 != nil }) ? ends.compactMap { $0 }.max().map { Double($0) } : nil
        let points = stops.sorted().map { id in Point(lat: network.stops[id]!.lat, lon: network.stops[id]!.lon) }
        return .success(PlacedAlert(id: alert.id, points: points, body: body, translations: translations, expiresAt: expiresAt,
                                    routeTypes: types))
    }

    /// The text in `language`, else the untagged one, else the first.
    static func pick(_ texts: [TransitAlert.Translation], language: String?) -> String? {
        if let language, let t = texts.first(where: { $0.language?.lowercased() == language.lowercased() }) { return t.text }
        return (texts.first { $0.language == nil || $0.language!.isEmpty } ?? texts.first)?.text
    }
}

/// Why an alert could not be placed.
public struct PlacementError: Error, Sendable, Equatable {
    public var alert: String
    public var reason: String
    public init(alert: String, reason: String) {
        self.alert = alert
        self.reason = reason
    }
}
