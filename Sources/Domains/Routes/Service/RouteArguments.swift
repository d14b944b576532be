import DomainSeam
import Realtime
import Routes

/// The arguments of the route ops, parsed before any handler runs; every failure names the field.

extension Args {
    /// `{lat, lon}` under `key`.
    func point(_ key: String) throws(ProtocolError) -> GeoPoint {
        try Args.point(try object(key), key)
    }

    static func point(_ a: Args, _ field: String) throws(ProtocolError) -> GeoPoint {
        guard let lat = try? a.double("lat"), let lon = try? a.double("lon"),
              let p = GeoPoint(lat: lat, lon: lon) else {
            throw .badRequest("field \(field) must be {lat, lon} with lat in -90…90 and lon in -180…180")
        }
        return p
    }

    /// A list of one of the protocol's names (`kinds`, `modes`...) under `key`, each checked.
    func names<T: RawRepresentable & CaseIterable>(_ key: String, as type: T.Type) throws(ProtocolError) -> [T] where T.RawValue == String {
        guard let raw = try optionalStringArray(key, maxCount: 10, maxLength: 20) else { return [] }
        var out: [T] = []
        for (i, name) in raw.enumerated() {
            guard let value = T(rawValue: name) else {
                throw .badRequest("field \(key)[\(i)]: \(name) is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            out.append(value)
        }
        return out
    }

    /// Tags as a client gives them: letters, marks, digits or `_`, without `#`.
    func tags(_ key: String, maxCount: Int = 20) throws(ProtocolError) -> [String] {
        guard let raw = try optionalStringArray(key, maxCount: maxCount, maxLength: 50) else { return [] }
        for (i, tag) in raw.enumerated() where !Hashtags.isValid(tag) {
            throw .badRequest("field \(key)[\(i)]: a tag is letters, digits or _ (without #)")
        }
        return raw
    }

    /// `filter: {kinds?, origins?, modes?, tags?}`.
    func filter(_ key: String) throws(ProtocolError) -> IntelFilter {
        guard let f = try optionalObject(key) else { return IntelFilter() }
        return IntelFilter(kinds: Set(try f.names("kinds", as: IntelKind.self)), origins: Set(try f.names("origins", as: IntelOrigin.self)),
                           modes: Set(try f.names("modes", as: TravelMode.self)), tags: Set(try f.tags("tags").map { $0.lowercased() }))
    }
}

/// How a corridor's list is ordered.
enum IntelSort: String, CaseIterable, Sendable {
    /// Newest first.
    case time
    /// Closest to the destination first.
    case distance
}

/// How a subscriber first sees a corridor's items: `route.subscribe`'s `{filter?, sort?}` (sent
/// to the routes' owner as the snapshot's view); a plain `subscribe` sees all of them, nearest the
/// destination first.
struct CorridorView: Sendable {
    var filter = IntelFilter()
    var sort = IntelSort.distance

    init() {}

    init(filter: IntelFilter, sort: IntelSort) {
        self.filter = filter
        self.sort = sort
    }

    /// From a view as `json` gives it (an empty object: the default).
    init(_ view: JSON) throws(ProtocolError) {
        let a = Args(view)
        filter = try a.filter("filter")
        if let name = try a.optionalString("sort", maxLength: 20) {
            guard let s = IntelSort(rawValue: name) else { throw .badRequest("field sort must be \"time\" or \"distance\"") }
            sort = s
        }
    }

    var json: JSON {
        func names(_ values: [String]) -> JSON { .array(values.sorted().map { .string($0) }) }
        return ["filter": ["kinds": names(filter.kinds.map(\.rawValue)), "origins": names(filter.origins.map(\.rawValue)),
                           "modes": names(filter.modes.map(\.rawValue)), "tags": names(Array(filter.tags))],
         "sort": .string(sort.rawValue)]
    }

    /// `items` filtered, then newest first or closest to `destination` first (ties by id, so the
    /// order is stable), as a reader of `language` sees them.
    func list(_ items: [IntelItem], to destination: GeoPoint, aliases: Aliases, language: String?) -> [JSON] {
        let kept = items.filter(filter.matches)
        let ordered: [IntelItem]
        switch sort {
        case .time: ordered = kept.sorted { ($0.at, $0.id) > ($1.at, $1.id) }
        case .distance:
            let keyed = kept.map { ($0.distance(to: destination), $0) }
            ordered = keyed.sorted { ($0.0, $0.1.id) < ($1.0, $1.1.id) }.map(\.1)
        }
        return ordered.map { $0.json(distanceTo: destination, aliases: aliases, language: language) }
    }
}

/// `route.subscribe {from, to, via?, widthMeters?, filter?, sort?, label?}`
struct RouteSubscribeArgs: OpArguments {
    var from, to: GeoPoint
    var via: [GeoPoint]
    var widthMeters: Double?
    var filter: IntelFilter
    var sort: IntelSort
    var label: String?
    /// The filter and order, for the snapshot the routes' owner takes.
    var view: CorridorView { CorridorView(filter: filter, sort: sort) }

    init(_ a: Args) throws(ProtocolError) {
        from = try a.point("from")
        to = try a.point("to")
        via = []
        if a.has("via") {
            for (i, v) in try a.array("via", maxCount: 100).enumerated() {
                guard case .object = v else { throw .badRequest("field via[\(i)] must be an object {lat, lon}") }
                via.append(try Args.point(Args(v), "via[\(i)]"))
            }
        }
        widthMeters = try a.optionalDouble("widthMeters")
        filter = try a.filter("filter")
        let sortName = try a.optionalString("sort", maxLength: 20) ?? IntelSort.time.rawValue
        guard let s = IntelSort(rawValue: sortName) else { throw .badRequest("field sort must be \"time\" or \"distance\"") }
        sort = s
        label = try a.optionalString("label", maxLength: 100)
    }
}

/// `intel.post {lat, lon, kind, tags?, modes?, body, at?}`
struct IntelPostArgs: OpArguments {
    var draft: IntelHub.Draft

    init(_ a: Args) throws(ProtocolError) {
        draft = try Self.draft(a, at: try a.optionalDouble("at"))
    }

    /// The fields an item has whoever posts it (travellers here, providers through `POST /api/intel`).
    static func draft(_ a: Args, at: Double?) throws(ProtocolError) -> IntelHub.Draft {
        let lat = try a.double("lat"), lon = try a.double("lon")
        guard let point = GeoPoint(lat: lat, lon: lon) else { throw .badRequest("fields lat and lon must be in -90…90 and -180…180") }
        let kindName = try a.string("kind", maxLength: 20)
        guard let kind = IntelKind(rawValue: kindName) else {
            throw .badRequest("field kind: \(kindName) is not one of \(IntelKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let body = try a.string("body", maxLength: 1000)
        guard !body.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw .badRequest("field body must not be empty") }
        return IntelHub.Draft(point: point, kind: kind, tags: try a.tags("tags"), modes: try a.names("modes", as: TravelMode.self),
                              body: body, at: at)
    }
}

/// `{item}`
struct ItemArgs: OpArguments {
    var item: String
    init(_ a: Args) throws(ProtocolError) { item = try a.string("item", maxLength: 64) }
}

/// `intel.comment {item, text}`
struct CommentArgs: OpArguments {
    var item, text: String
    init(_ a: Args) throws(ProtocolError) {
        item = try a.string("item", maxLength: 64)
        text = try a.string("text", maxLength: 500)
        guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw .badRequest("field text must not be empty") }
    }
}

/// `intel.link {item, to}`
struct LinkArgs: OpArguments {
    var item, to: String
    init(_ a: Args) throws(ProtocolError) {
        item = try a.string("item", maxLength: 64)
        to = try a.string("to", maxLength: 64)
    }
}

/// `intel.query {minLat, minLon, maxLat, maxLon, since?, until?, filter?}`; `minLon > maxLon` is a
/// box across the antimeridian.
struct QueryArgs: OpArguments {
    var minLat, minLon, maxLat, maxLon: Double
    var since, until: Double?
    var filter: IntelFilter

    init(_ a: Args) throws(ProtocolError) {
        minLat = try a.double("minLat")
        minLon = try a.double("minLon")
        maxLat = try a.double("maxLat")
        maxLon = try a.double("maxLon")
        for (name, value, limit) in [("minLat", minLat, 90.0), ("maxLat", maxLat, 90), ("minLon", minLon, 180), ("maxLon", maxLon, 180)]
        where !(value.isFinite && abs(value) <= limit) {
            throw .badRequest("field \(name) must be between -\(Int(limit)) and \(Int(limit))")
        }
        guard minLat <= maxLat else { throw .badRequest("field minLat must not be greater than maxLat") }
        since = try a.optionalDouble("since")
        until = try a.optionalDouble("until")
        if let since, let until, since > until { throw .badRequest("field since must not be after until") }
        filter = try a.filter("filter")
    }
}

/// `{destination}`
struct DestinationArgs: OpArguments {
    var destination: String
    init(_ a: Args) throws(ProtocolError) { destination = try a.string("destination", maxLength: 64) }
}

/// `route.track {destination, points: [{lat, lon, at}]}`: at most `maxPoints` a batch, in time order.
struct TrackArgs: OpArguments {
    static let maxPoints = 500
    var destination: String
    var fixes: [RecordedPath.Fix]

    init(_ a: Args) throws(ProtocolError) {
        destination = try a.string("destination", maxLength: 64)
        let points = try a.array("points", maxCount: Self.maxPoints)
        guard !points.isEmpty else { throw .badRequest("field points must hold at least one {lat, lon, at}") }
        fixes = []
        for (i, p) in points.enumerated() {
            guard case .object = p else { throw .badRequest("field points[\(i)] must be an object {lat, lon, at}") }
            let point = try Args.point(Args(p), "points[\(i)]")
            guard let at = try? Args(p).double("at") else { throw .badRequest("field points[\(i)].at must be a time (seconds since 1970)") }
            if let previous = fixes.last, at < previous.at { throw .badRequest("field points[\(i)].at is before points[\(i - 1)].at") }
            fixes.append(RecordedPath.Fix(point: point, at: at))
        }
    }
}
