import Realtime
import Tonight

/// Tonight's pushes are `RoomEvent`s.
extension TonightPush: RoomEvent {}

/// How the catalog's records look on the wire: one place, for every op and push.
enum TonightJSON {
    static func price(_ cents: Int?) -> JSON { cents.map { .double(Double($0) / 100) } ?? .null }

    /// An event as clients see it: its performers and venue inlined, its start both venue-local
    /// (`start`) and as an instant (`startsAt`, seconds since 1970).
    static func event(_ e: FeedEvent, _ catalog: EventCatalog) -> JSON {
        var fields: [(String, JSON)] = [
            ("id", .string(e.id)), ("name", e.name.map(JSON.string) ?? .null),
            ("performers", .array(e.performers.map { artistRef($0, catalog) })),
            ("categories", .array(e.categories.map(JSON.string))),
            ("venue", venue(e.venue, catalog)),
            ("start", .string(e.start.description)), ("startsAt", catalog.startsAt(e.id).map(JSON.double) ?? .null),
            ("status", .string(e.status.rawValue)),
            ("minPrice", price(e.minPrice)), ("maxPrice", price(e.maxPrice)), ("currency", e.currency.map(JSON.string) ?? .null),
        ]
        if let onSale = e.onSale { fields.append(("onSale", .string(onSale.description))) }
        if let url = e.url { fields.append(("url", .string(url))) }
        return .object(fields)
    }

    static func artistRef(_ id: String, _ catalog: EventCatalog) -> JSON {
        ["id": .string(id), "name": catalog.artists[id].map { JSON.string($0.name) } ?? .null]
    }

    static func artist(_ a: FeedArtist) -> JSON {
        ["id": .string(a.id), "name": .string(a.name), "categories": .array(a.categories.map(JSON.string)),
         "imageUrl": a.imageURL.map(JSON.string) ?? .null, "url": a.url.map(JSON.string) ?? .null]
    }

    static func venue(_ id: String, _ catalog: EventCatalog) -> JSON {
        guard let v = catalog.venues[id] else { return ["id": .string(id)] }
        return ["id": .string(v.id), "name": .string(v.name), "street": v.street.map(JSON.string) ?? .null,
                "city": v.city.map(JSON.string) ?? .null, "state": v.state.map(JSON.string) ?? .null,
                "lat": v.latitude.map(JSON.double) ?? .null, "lon": v.longitude.map(JSON.double) ?? .null,
                "timeZone": .string(v.timeZone ?? catalog.rules.defaultZoneName)]
    }

    static func reason(_ r: Reason) -> JSON {
        switch r {
        case .favorite(let artist): ["favorite": .string(artist)]
        case .category(let c): ["category": .string(c)]
        case .similar(let artist, let score): ["similarTo": .string(artist), "score": .double(score)]
        }
    }

    /// `{event, reason}` of suggestions, announcements and `events.tonight`/`explore` entries.
    static func suggestion(_ s: Suggestion, _ catalog: EventCatalog) -> JSON? {
        guard let e = catalog.events[s.event] else { return nil }
        return ["event": event(e, catalog), "reason": reason(s.reason)]
    }

    /// The previous values of the changed fields of an event (`event.changed`'s `previous`).
    static func previous(_ old: FeedEvent, _ fields: [EventField], _ catalog: EventCatalog) -> JSON {
        var out: [(String, JSON)] = []
        for f in fields {
            switch f {
            case .venue: out.append(("venue", venue(old.venue, catalog)))
            case .start: out.append(("start", .string(old.start.description)))
            case .status: out.append(("status", .string(old.status.rawValue)))
            case .price: out += [("minPrice", price(old.minPrice)), ("maxPrice", price(old.maxPrice)), ("currency", old.currency.map(JSON.string) ?? .null)]
            }
        }
        return .object(out)
    }
}
