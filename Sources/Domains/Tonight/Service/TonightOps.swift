import DomainSeam
import Realtime
import Tonight

/// The tonight ops of protocol.md. Reads answer from the catalog and the users' committed state
/// at once; changes go through the user's actor, which answers once they are durable.
struct TonightOps {
    let catalog: Catalog
    let goers: EventGoers
    let settings: SettingValues

    var all: [Op] {
        let catalog = self.catalog, goers = self.goers
        let maxRadius = settings[TonightDomain.maxRadiusKm], maxResults = settings[TonightDomain.maxResults]
        let maxSearch = settings[TonightDomain.maxSearchResults]

        @Sendable func requireEvent(_ id: String) throws(ProtocolError) {
            guard catalog.event(id) != nil else { throw .notFound("no event \(id)") }
        }
        func favorite(_ name: String, _ kind: FavoriteKind, _ on: Bool) -> Op {
            switch kind {
            case .artist:
                return .user(name, .write, ArtistArg.self) { c throws(ProtocolError) in
                    if on, catalog.artist(c.args.artist) == nil { throw .notFound("no artist \(c.args.artist)") }
                    try await goers.actor(for: c.user).favorite(.artist, c.args.artist, on, reply: c.reply)
                    return .sent
                }
            case .category:
                return .user(name, .write, CategoryArg.self) { c throws(ProtocolError) in
                    if on, catalog.with({ $0.categories[c.args.category] }) == nil { throw .notFound("no category \(c.args.category)") }
                    try await goers.actor(for: c.user).favorite(.category, c.args.category, on, reply: c.reply)
                    return .sent
                }
            }
        }
        func plan(_ name: String, _ followed: Bool?) -> Op {
            .user(name, .write, EventArg.self) { c throws(ProtocolError) in
                if followed != nil { try requireEvent(c.args.event) }
                try await goers.actor(for: c.user).plan(c.args.event, followed: followed, reply: c.reply)
                return .sent
            }
        }
        @Sendable func place(of user: String) throws(ProtocolError) -> Preferences {
            guard let prefs = goers.goer(user).prefs else { throw .badRequest("set your location first (prefs.set)") }
            return prefs
        }

        return [
            .user("prefs.set", .write, PrefsArgs.self) { c throws(ProtocolError) in
                let p = c.args.prefs
                guard p.radiusKm <= maxRadius else { throw .badRequest("field radiusKm must be at most \(maxRadius) (tonight.maxRadiusKm)") }
                let unknown = catalog.with { cat in p.categories.sorted().first { cat.categories[$0] == nil } }
                if let unknown { throw .badRequest("field categories: no category \(unknown)") }
                try await goers.actor(for: c.user).setPrefs(p, reply: c.reply)
                return .sent
            },
            .user("prefs.get", .read, NoArguments.self) { c in .reply(GoerJSON.prefs(goers.goer(c.user))) },
            .user("categories.list", .read, NoArguments.self) { _ in
                .reply(["categories": .array(catalog.with { cat in
                    cat.categories.values.sorted { ($0.name, $0.id) < ($1.name, $1.id) }.map {
                        ["category": .string($0.id), "name": .string($0.name), "parent": $0.parent.map(JSON.string) ?? .null]
                    }
                })])
            },
            favorite("category.favorite", .category, true),
            favorite("category.unfavorite", .category, false),
            .user("artist.search", .read, SearchArgs.self) { c in
                let limit = min(c.args.limit ?? 10, maxSearch)
                return .reply(["artists": .array(catalog.with { cat in
                    cat.searchArtists(c.args.q, limit: limit).compactMap { cat.artists[$0].map { ["id": .string($0.id), "name": .string($0.name)] } }
                })])
            },
            .user("artist.get", .read, ArtistArg.self) { c throws(ProtocolError) in
                let now = goers.clock.now, user = goers.goer(c.user)
                guard let result = catalog.with({ cat -> JSON? in
                    guard let a = cat.artists[c.args.artist] else { return nil }
                    return ["artist": TonightJSON.artist(a), "favorite": .bool(user.artists.contains(a.id)),
                            "events": .array(cat.upcoming(of: a.id, now: now).prefix(maxResults).compactMap { cat.events[$0].map { TonightJSON.event($0, cat) } })]
                }) else { throw .notFound("no artist \(c.args.artist)") }
                return .reply(result)
            },
            favorite("artist.favorite", .artist, true),
            favorite("artist.unfavorite", .artist, false),
            .user("events.tonight", .read, NoArguments.self) { c throws(ProtocolError) in
                let goer = goers.goer(c.user), now = goers.clock.now
                _ = try place(of: c.user)
                return .reply(["events": .array(catalog.with { cat in
                    cat.tonight(for: goer, now: now).prefix(maxResults).compactMap { TonightJSON.suggestion($0, cat) }
                })])
            },
            .user("events.explore", .read, ExploreArgs.self) { c in
                let goer = goers.goer(c.user), now = goers.clock.now, limit = min(c.args.limit ?? maxResults, maxResults)
                return .reply(["events": .array(catalog.with { cat in
                    cat.explore(for: goer, now: now, limit: limit).compactMap { TonightJSON.suggestion($0, cat) }
                })])
            },
            .user("events.nearby", .read, NearbyArgs.self) { c throws(ProtocolError) in
                let prefs = try place(of: c.user), now = goers.clock.now
                let km = c.args.radiusKm ?? prefs.radiusKm, limit = min(c.args.limit ?? maxResults, maxResults)
                guard km <= maxRadius else { throw .badRequest("field radiusKm must be at most \(maxRadius) (tonight.maxRadiusKm)") }
                return .reply(["events": .array(catalog.with { cat in
                    cat.nearby(prefs.location, km: km, now: now, limit: limit).compactMap { cat.events[$0].map { TonightJSON.event($0, cat) } }
                })])
            },
            .user("event.get", .read, EventArg.self) { c throws(ProtocolError) in
                let goer = goers.goer(c.user)
                guard let event = catalog.with({ cat in cat.events[c.args.event].map { TonightJSON.event($0, cat) } }) else {
                    throw .notFound("no event \(c.args.event)")
                }
                return .reply(["event": event, "plan": GoerJSON.plan(c.args.event, goer)])
            },
            plan("event.follow", true),
            plan("event.unfollow", nil),
            plan("event.dismiss", false),
            .user("plans.list", .read, NoArguments.self) { c in
                let goer = goers.goer(c.user)
                return .reply(["plans": catalog.with { GoerJSON.plans(goer, $0) }])
            },
        ]
    }
}
