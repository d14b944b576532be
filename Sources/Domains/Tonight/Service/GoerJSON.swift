import Realtime
import Tonight

/// How a user's tonight state looks on the wire (`prefs.get`, `plans.list`, the `user:` snapshot).
enum GoerJSON {
    static func prefs(_ g: EventGoer) -> JSON {
        var fields: [(String, JSON)] = []
        if let p = g.prefs {
            fields = [("location", ["lat": .double(p.location.lat), "lon": .double(p.location.lon)]), ("radiusKm", .double(p.radiusKm)),
                      ("maxPrice", p.maxPrice.map(JSON.double) ?? .null), ("categories", .array(p.categories.sorted().map(JSON.string)))]
        }
        fields += [("favoriteArtists", .array(g.artists.sorted().map(JSON.string))),
                   ("favoriteCategories", .array(g.categories.sorted().map(JSON.string)))]
        return .object(fields)
    }

    /// `"following"`, `"dismissed"` or null.
    static func plan(_ event: String, _ g: EventGoer) -> JSON {
        if g.followed[event] != nil { return "following" }
        return g.dismissed.contains(event) ? "dismissed" : .null
    }

    /// Followed events, by start (those the catalog no longer holds last).
    static func plans(_ g: EventGoer, _ c: EventCatalog) -> JSON {
        let ordered = g.followed.keys.sorted { (c.startsAt($0) ?? .infinity, $0) < (c.startsAt($1) ?? .infinity, $1) }
        return .array(ordered.map { id in
            guard let e = c.events[id] else { return ["event": ["id": .string(id)], "followedAt": .double(g.followed[id]!)] }
            return ["event": TonightJSON.event(e, c), "followedAt": .double(g.followed[id]!)]
        })
    }
}
