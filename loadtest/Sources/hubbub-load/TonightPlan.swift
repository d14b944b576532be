import Foundation
import LoadHarness
import Tonight

/// The evening of a `tonight` scenario, drawn from its seed: the event feed as first published
/// and as changed (moved, rescheduled, cancelled, newly announced events), the affinity feed, and
/// the users (place, radius, favourites, follows). Venues sit in an `Etc/GMT±N` zone chosen so
/// that their local time is 17:xx when the run starts: tonight's events (20:00 to 01:59) are ahead
/// and their reminders (an hour before) fall after any run shorter than an hour.
///
/// What each user must receive is worked out afterwards with the server's own rules (`Tonight`'s
/// `EventCatalog`) over what the harness published: the audit checks delivery, exactly once.
struct TonightPlan: Sendable {
    struct User: Sendable {
        var place: Place
        var radiusKm: Double
        var favourites: [String]
        /// Tonight's events it follows: none by a favourite or an artist recommended for one, so
        /// following never takes a suggestion away.
        var follows: [String]
    }

    let settings: Scenario.TonightSettings
    let zone: String
    /// The venues' local date at the start.
    let today: LocalDateTime
    private(set) var first: [FeedRecord] = []
    private(set) var second: [FeedRecord] = []
    /// Each recommending artist's recommendations (the affinity feed).
    private(set) var affinity: [(artist: String, recommended: [(String, Double)])] = []
    private(set) var users: [User] = []
    /// Events the second feed changes, as they were and as they are.
    private(set) var changed: [String: (old: FeedEvent, new: FeedEvent)] = [:]
    /// Events the second feed adds.
    private(set) var added: Set<String> = []
    private(set) var tonightEvents: [String] = []

    init(_ s: Scenario.TonightSettings, now: Double) {
        settings = s
        var rng = SeededGenerator(seed: s.seed)
        let utcHour = Int(now.truncatingRemainder(dividingBy: 86_400) / 3_600)
        var offset = 17 - utcHour
        if offset > 14 { offset -= 24 }
        zone = offset >= 0 ? "Etc/GMT-\(offset)" : "Etc/GMT+\(-offset)"
        let local = LocalDateTime(naiveSeconds: now + Double(offset * 3_600))
        today = LocalDateTime(year: local.year, month: local.month, day: local.day)!

        func popular(_ n: Int) -> Int { min(n - 1, Int(pow(rng.unit(), 2.5) * Double(n))) }
        func inCity() -> Place {
            let r = s.city.radiusKm * rng.unit().squareRoot(), a = rng.unit() * 2 * .pi
            let lat = s.city.center.lat + r / 111.2 * cos(a)
            return Place(lat: lat, lon: s.city.center.lon + r / (111.2 * cos(lat * .pi / 180)) * sin(a))
        }
        func day(_ n: Int, _ hour: Int, _ minute: Int) -> LocalDateTime {
            LocalDateTime(naiveSeconds: today.naiveSeconds + Double(n * 86_400 + hour * 3_600 + minute * 60))
        }
        var records: [FeedRecord] = (0..<s.categories).map { .category(FeedCategory(id: "C\($0)", name: "Category \($0)")) }
        records += (0..<s.artists).map { .artist(FeedArtist(id: "A\($0)", name: "Artist \($0)", categories: ["C\($0 % s.categories)"])) }
        var venuePlaces: [Place] = []
        for v in 0..<s.venues {
            let p = inCity()
            venuePlaces.append(p)
            records.append(.venue(FeedVenue(id: "V\(v)", name: "Venue \(v)", city: "Loadville", latitude: p.lat, longitude: p.lon, timeZone: zone)))
        }
        var events: [FeedEvent] = []
        for e in 0..<s.events {
            var performers = ["A\(popular(s.artists))"]
            if rng.unit() < 0.1 { performers.append("A\(popular(s.artists))") }
            let tonight = rng.unit() < s.tonightShare
            // Tonight: 20:00 to 01:59; other events: 20:00 to 22:59 on a later day.
            let start = tonight ? day(0, 20 + Int(rng.next() % 6), Int(rng.next() % 4) * 15)
                                : day(1 + Int(rng.next() % UInt64(s.daysAhead)), 20 + Int(rng.next() % 3), 0)
            let event = FeedEvent(id: "E\(e)", performers: Array(Set(performers)).sorted(), categories: ["C\(e % s.categories)"],
                                  venue: "V\(Int(rng.next() % UInt64(s.venues)))", start: start,
                                  status: rng.unit() < 0.03 ? .soldout : .onsale, name: "Show \(e)",
                                  minPrice: 1_000 + Int(rng.next() % 7_000), currency: "EUR")
            if tonight { tonightEvents.append(event.id) }
            events.append(event)
        }
        first = records + events.map(FeedRecord.event)

        // The affinity feed: the most popular artists' recommendations.
        for a in 0..<min(s.artists, 500) where s.recommendationsPerArtist > 0 {
            var recs: [String: Double] = [:]
            while recs.count < min(s.recommendationsPerArtist, s.artists - 1) {
                let r = popular(s.artists)
                if r != a { recs["A\(r)"] = (0.1 + 0.89 * rng.unit() * 1000).rounded() / 1000 }
            }
            affinity.append(("A\(a)", recs.sorted { $0.key < $1.key }))
        }

        // The second feed: tonight's events moved, rescheduled, cancelled; new events announced.
        var byID = Dictionary(uniqueKeysWithValues: events.map { ($0.id, $0) })
        for id in tonightEvents {
            guard var e = byID[id], e.status == .onsale else { continue }
            let u = rng.unit(), old = e
            if u < s.movedShare {
                e.venue = "V\(Int(rng.next() % UInt64(s.venues)))"
            } else if u < s.movedShare + s.rescheduledShare {
                e.start = LocalDateTime(naiveSeconds: e.start.naiveSeconds + 1_800)
                e.status = .rescheduled
            } else if u < s.movedShare + s.rescheduledShare + s.cancelledShare {
                e.status = .cancelled
            } else {
                continue
            }
            guard e != old else { continue }
            byID[id] = e
            changed[id] = (old, e)
        }
        let fresh = Int(Double(s.events) * s.announcedShare)
        var news: [FeedEvent] = []
        for n in 0..<fresh {
            let e = FeedEvent(id: "N\(n)", performers: ["A\(popular(s.artists))"], categories: ["C\(n % s.categories)"],
                              venue: "V\(Int(rng.next() % UInt64(s.venues)))", start: day(1 + Int(rng.next() % 60), 21, 0), status: .onsale,
                              name: "New show \(n)", minPrice: 2_000, currency: "EUR")
            news.append(e)
            added.insert(e.id)
        }
        second = records + events.map { FeedRecord.event(byID[$0.id]!) } + news.map(FeedRecord.event)

        // Users: favourites with the artists' popularity; follows among tonight's other events.
        let recommendedFor = Dictionary(affinity.map { ($0.artist, Set($0.recommended.map(\.0))) }, uniquingKeysWith: { a, _ in a })
        for _ in 0..<s.users {
            var favourites = Set<String>()
            var tries = 0
            while favourites.count < min(s.favouritesPerUser, s.artists), tries < 1_000 {
                favourites.insert("A\(popular(s.artists))")
                tries += 1
            }
            var liked = favourites
            for f in favourites { liked.formUnion(recommendedFor[f] ?? []) }
            var follows: [String] = []
            tries = 0
            while follows.count < s.followsPerUser, !tonightEvents.isEmpty, tries < 100 {
                tries += 1
                let id = tonightEvents[Int(rng.next() % UInt64(tonightEvents.count))]
                if let e = byID[id], liked.isDisjoint(with: e.performers), !follows.contains(id) { follows.append(id) }
            }
            users.append(User(place: inCity(), radiusKm: s.radiusKm.lowerBound + rng.unit() * (s.radiusKm.upperBound - s.radiusKm.lowerBound),
                              favourites: favourites.sorted(), follows: follows))
        }
    }

    // MARK: The feeds as sent

    static func xml(_ records: [FeedRecord]) -> [UInt8] {
        func esc(_ s: String) -> String { s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;") }
        func price(_ cents: Int?) -> String { cents.map { String(format: "%d.%02d", $0 / 100, $0 % 100) } ?? "" }
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<EventFeed>\n"
        out.reserveCapacity(records.count * 400)
        for r in records {
            switch r {
            case .category(let c): out += "<Category ID=\"\(c.id)\"><CategoryName>\(esc(c.name))</CategoryName></Category>\n"
            case .artist(let a):
                out += "<Artist ID=\"\(a.id)\">" + a.categories.map { "<ArtistCategory ID=\"\($0)\"/>" }.joined()
                    + "<ArtistName>\(esc(a.name))</ArtistName></Artist>\n"
            case .venue(let v):
                out += "<Venue ID=\"\(v.id)\"><VenueName>\(esc(v.name))</VenueName><VenueCity>\(esc(v.city ?? ""))</VenueCity>"
                    + "<VenueLatitude>\(v.latitude!)</VenueLatitude><VenueLongitude>\(v.longitude!)</VenueLongitude>"
                    + "<VenueTimeZone>\(v.timeZone!)</VenueTimeZone></Venue>\n"
            case .event(let e):
                let d = e.start.description
                out += "<Event ID=\"\(e.id)\">" + e.performers.map { "<EventPerformer ID=\"\($0)\"/>" }.joined()
                    + e.categories.map { "<EventCategory ID=\"\($0)\"/>" }.joined() + "<EventVenue ID=\"\(e.venue)\"/>"
                    + "<EventDate>\(d.prefix(10))</EventDate><EventTime>\(d.suffix(5))</EventTime><EventStatus>\(e.status.rawValue)</EventStatus>"
                    + "<PerformanceName>\(esc(e.name ?? ""))</PerformanceName><MinPrice>\(price(e.minPrice))</MinPrice><Currency>EUR</Currency></Event>\n"
            }
        }
        return Array((out + "</EventFeed>\n").utf8)
    }

    func affinityText(names: [String: String]) -> [UInt8] {
        var out = ""
        for (artist, recs) in affinity {
            out += "Recommended artists for \(names[artist]!)\n"
            for (r, score) in recs { out += "\(r),\(names[r]!),\(score)\n" }
            out += "-----\n"
        }
        return Array(out.utf8)
    }

    var artistNames: [String: String] {
        var out: [String: String] = [:]
        for case .artist(let a) in first { out[a.id] = a.name }
        return out
    }

    // MARK: What users must receive

    /// The catalogs as the server holds them after the first feed and the affinity feed, and after the second.
    func catalogs() -> (first: EventCatalog, second: EventCatalog) {
        var one = EventCatalog(first), two = EventCatalog(second)
        for (artist, recs) in affinity {
            let list = recs.map { EventCatalog.Recommendation(artist: $0.0, score: $0.1) }
            one.setRecommendations(list, of: artist)
            two.setRecommendations(list, of: artist)
        }
        return (one, two)
    }

    func goer(_ i: Int, id: String, at now: Double) -> EventGoer {
        var g = EventGoer(user: id, prefs: Preferences(location: users[i].place, radiusKm: users[i].radiusKm))
        g.artists = Set(users[i].favourites)
        for f in users[i].follows { g.followed[f] = now }
        return g
    }
}
