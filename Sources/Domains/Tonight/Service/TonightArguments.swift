import DomainSeam
import Realtime
import Tonight

/// The arguments of the tonight ops, parsed before any handler runs; every failure names the field.

/// `prefs.set {location: {lat, lon}, radiusKm, maxPrice?, categories?}`
struct PrefsArgs: OpArguments {
    var prefs: Preferences

    init(_ a: Args) throws(ProtocolError) {
        let loc = try a.object("location")
        guard let lat = try? loc.double("lat"), let lon = try? loc.double("lon"), (-90...90).contains(lat), (-180...180).contains(lon) else {
            throw .badRequest("field location must be {lat, lon} with lat in -90…90 and lon in -180…180")
        }
        let radius = try a.double("radiusKm")
        guard radius > 0, radius.isFinite else { throw .badRequest("field radiusKm must be a distance above 0") }
        let maxPrice = try a.optionalDouble("maxPrice")
        if let maxPrice, !(maxPrice >= 0 && maxPrice.isFinite) { throw .badRequest("field maxPrice must be a price ≥ 0") }
        let categories = try a.optionalStringArray("categories", maxCount: 200, maxLength: 64) ?? []
        prefs = Preferences(location: Place(lat: lat, lon: lon), radiusKm: radius, maxPrice: maxPrice, categories: Set(categories))
    }
}

/// `{artist}`
struct ArtistArg: OpArguments {
    var artist: String
    init(_ a: Args) throws(ProtocolError) { artist = try a.string("artist", maxLength: 64) }
}

/// `{category}`
struct CategoryArg: OpArguments {
    var category: String
    init(_ a: Args) throws(ProtocolError) { category = try a.string("category", maxLength: 64) }
}

/// `{event}`
struct EventArg: OpArguments {
    var event: String
    init(_ a: Args) throws(ProtocolError) { event = try a.string("event", maxLength: 64) }
}

/// `artist.search {q, limit?}`
struct SearchArgs: OpArguments {
    var q: String
    var limit: Int?
    init(_ a: Args) throws(ProtocolError) {
        q = try a.string("q", maxLength: 200)
        limit = try a.optionalInt("limit")
        if let limit, limit < 1 { throw .badRequest("field limit must be at least 1") }
    }
}

/// `events.explore {limit?}`
struct ExploreArgs: OpArguments {
    var limit: Int?
    init(_ a: Args) throws(ProtocolError) {
        limit = try a.optionalInt("limit")
        if let limit, limit < 1 { throw .badRequest("field limit must be at least 1") }
    }
}

/// `events.nearby {radiusKm?, limit?}`
struct NearbyArgs: OpArguments {
    var radiusKm: Double?
    var limit: Int?
    init(_ a: Args) throws(ProtocolError) {
        radiusKm = try a.optionalDouble("radiusKm")
        if let r = radiusKm, !(r > 0 && r.isFinite) { throw .badRequest("field radiusKm must be a distance above 0") }
        limit = try a.optionalInt("limit")
        if let limit, limit < 1 { throw .badRequest("field limit must be at least 1") }
    }
}
