import Foundation

/// The event feed's catalog (categories, artists, venues, events and the affinity feed's
/// recommendations) with the indexes tonight's questions need: venues by place, events by venue,
/// artist and category, artists by name. A value: records in, answers out; the service keeps one
/// behind a lock.
public struct EventCatalog: Sendable {
    /// One recommended artist of an artist (the affinity feed).
    public struct Recommendation: Sendable, Equatable {
        public var artist: String
        public var score: Double
        public init(artist: String, score: Double) {
            self.artist = artist
            self.score = score
        }
    }

    /// What tonight means: when the night ends, and the zone of venues without one.
    public struct Rules: Sendable {
        public var night = NightWindow()
        /// The zone of venues the feed gives none for, and its name as configured (Foundation
        /// calls UTC "GMT").
        public var defaultZone = TimeZone(identifier: "UTC")!
        public var defaultZoneName = "UTC"
        public init() {}
    }

    public let rules: Rules
    public private(set) var categories = RecordTable<FeedCategory>()
    public private(set) var artists = RecordTable<FeedArtist>()
    public private(set) var venues = RecordTable<FeedVenue>()
    public private(set) var events = RecordTable<FeedEvent>()
    /// Each artist's recommendations, best score first.
    public private(set) var recommendations: [String: [Recommendation]] = [:]

    public typealias Slot = RecordTable<FeedEvent>.Slot
    /// Each event's start as an instant (its venue's zone applied), by event slot (NaN: no event).
    private var starts: [Double] = []
    /// Artist ids by `NameKey` of their names (affinity headers).
    private var artistsByName: [String: Set<String>] = [:]
    /// For each artist, the artists it is recommended for, with the score.
    private var recommendedFor: [String: [String: Double]] = [:]
    /// Venues (slots) by place.
    private var venueIndex = PlaceIndex<Slot>()
    private var zones: [String: ZoneClock] = [:]
    /// Each venue's clock, by venue slot (nil: the default zone's).
    private var clocks: [ZoneClock?] = []
    /// Event slots by venue slot and by artist slot.
    private var eventsByVenue: [Slot: Set<Slot>] = [:]
    private var eventsByArtist: [Slot: Set<Slot>] = [:]
    /// Built on the first search after artists changed.
    private var search: ArtistSearch?
    /// Events starting soon (from `soonFrom` until `soonTo`) by venue, and those venues by place:
    /// tonight never reaches past the end of the coming night, so tonight's questions look at these
    /// few venues instead of every venue in a radius. Rebuilt by `prepare(now:)`, kept by `apply`.
    private var soonFrom = -Double.infinity, soonTo = -Double.infinity
    private var soonEvents: [Slot: Set<Slot>] = [:]
    private var soonVenues = PlaceIndex<Slot>()
    /// The same soon events by performer (artist slot).
    private var soonByArtist: [Slot: Set<Slot>] = [:]
    /// How far ahead `soonEvents` reaches, and how long it serves before it is rebuilt.
    static let soonSpan = 32 * 3_600.0, soonServes = 2 * 3_600.0

    /// A catalog of `records`, each given a new row.
    public init(rules: Rules = Rules(), _ records: [FeedRecord] = []) {
        self.rules = rules
        defaultClock = ZoneClock(rules.defaultZone)
        apply(records)
    }

    /// A catalog of records as the store holds them, each in its row.
    public init(rules: Rules = Rules(), stored: [(row: Int64, record: FeedRecord)]) {
        self.rules = rules
        defaultClock = ZoneClock(rules.defaultZone)
        for (row, record) in stored {
            switch record {
            case .category(let c): _ = categories.slot(for: c.id, row: row)
            case .artist(let a): _ = artists.slot(for: a.id, row: row)
            case .venue(let v): _ = venues.slot(for: v.id, row: row)
            case .event(let e): _ = events.slot(for: e.id, row: row)
            }
        }
        apply(stored.map(\.record))
    }

    /// What the catalog holds under `record`'s ID, and the store row of that ID (given one when
    /// the ID is new: the row an ingest writes the record to).
    public mutating func row(for record: FeedRecord) -> (row: Int64, held: FeedRecord?) {
        switch record {
        case .category(let c):
            let slot = categories.slot(for: c.id)
            return (categories.row(at: slot), categories[slot].map(FeedRecord.category))
        case .artist(let a):
            let slot = artists.slot(for: a.id)
            return (artists.row(at: slot), artists[slot].map(FeedRecord.artist))
        case .venue(let v):
            let slot = venues.slot(for: v.id)
            return (venues.row(at: slot), venues[slot].map(FeedRecord.venue))
        case .event(let e):
            let slot = events.slot(for: e.id)
            return (events.row(at: slot), events[slot].map(FeedRecord.event))
        }
    }

    /// Takes records in (replacing those of the same id), keeping every index in step.
    public mutating func apply(_ records: some Collection<FeedRecord>) {
        if records.count > 1_000 { events.reserveCapacity(adding: records.count) } // a feed's batch: grow once
        for r in records {
            switch r {
            case .category(let c): categories.set(c, at: categories.slot(for: c.id))
            case .artist(let a):
                if let old = artists.set(a, at: artists.slot(for: a.id)) { artistsByName[NameKey.of(old.name)]?.remove(a.id) }
                artistsByName[NameKey.of(a.name), default: []].insert(a.id)
                search = nil
            case .venue(let v):
                let slot = venues.slot(for: v.id)
                venues.set(v, at: slot)
                if let name = v.timeZone, zones[name] == nil, let zone = TimeZone(identifier: name) { zones[name] = ZoneClock(zone) }
                if clocks.count <= Int(slot) { clocks.append(contentsOf: repeatElement(nil, count: Int(slot) + 1 - clocks.count)) }
                clocks[Int(slot)] = v.timeZone.flatMap { zones[$0] }
                if let lat = v.latitude, let lon = v.longitude { venueIndex.set(slot, at: Place(lat: lat, lon: lon)) } else { venueIndex.set(slot, at: nil) }
                for e in eventsByVenue[slot] ?? [] {
                    let event = events[e]
                    if let event { starts[Int(e)] = zone(ofVenue: slot).instant(of: event.start) }
                    placeSoon(e, leaving: event)
                }
            case .event(let e): put(e)
            }
        }
    }

    private mutating func put(_ e: FeedEvent) {
        let slot = events.slot(for: e.id)
        let venue = venues.slot(for: e.venue)
        let old = events.set(e, at: slot)
        if let old {
            if old.venue != e.venue, let was = venues.slot(of: old.venue) { eventsByVenue[was]?.remove(slot) }
            for a in old.performers where !e.performers.contains(a) {
                if let artist = artists.slot(of: a) { eventsByArtist[artist]?.remove(slot) }
            }
        }
        eventsByVenue[venue, default: []].insert(slot)
        for a in e.performers { eventsByArtist[artists.slot(for: a), default: []].insert(slot) }
        if starts.count <= Int(slot) { starts.append(contentsOf: repeatElement(.nan, count: Int(slot) + 1 - starts.count)) }
        starts[Int(slot)] = zone(ofVenue: venue).instant(of: e.start)
        placeSoon(slot, leaving: old)
    }

    /// Puts event `slot` among the soon ones, or takes it out, as its start now says (`leaving`:
    /// the event as it was, whose venue and performers held it).
    private mutating func placeSoon(_ slot: Slot, leaving previous: FeedEvent?) {
        if let previous, let venue = venues.slot(of: previous.venue), soonEvents[venue]?.remove(slot) != nil {
            if soonEvents[venue]?.isEmpty == true {
                soonEvents[venue] = nil
                soonVenues.set(venue, at: nil)
            }
            for a in previous.performers {
                guard let artist = artists.slot(of: a) else { continue }
                soonByArtist[artist]?.remove(slot)
                if soonByArtist[artist]?.isEmpty == true { soonByArtist[artist] = nil }
            }
        }
        let start = starts[Int(slot)]
        guard start >= soonFrom, start < soonTo, let e = events[slot], let venue = venues.slot(of: e.venue) else { return }
        soonEvents[venue, default: []].insert(slot)
        soonVenues.set(venue, at: venueIndex.place(of: venue))
        for a in e.performers { if let artist = artists.slot(of: a) { soonByArtist[artist, default: []].insert(slot) } }
    }

    /// Makes the soon events cover the coming night as seen at `now` (a rebuild about once a day).
    public mutating func prepare(now: Double) {
        guard now < soonFrom || now + Self.soonSpan - Self.soonServes > soonTo else { return }
        soonFrom = now - 3_600
        soonTo = soonFrom + Self.soonSpan
        soonEvents = [:]
        soonByArtist = [:]
        soonVenues = PlaceIndex<Slot>()
        for (i, start) in starts.enumerated() where start >= soonFrom && start < soonTo { placeSoon(Slot(i), leaving: nil) }
    }

    /// An event's start as an instant, if the catalog holds the event.
    public func startsAt(_ event: String) -> Double? {
        guard let slot = events.slot(of: event), events[slot] != nil else { return nil }
        return starts[Int(slot)]
    }

    /// The events starting from `from` until `before`, with their starts, in no order.
    public func events(startingFrom from: Double, before: Double) -> [(event: FeedEvent, start: Double)] {
        starts.indices.compactMap { i in
            let start = starts[i]
            guard start >= from, start < before, let e = events[Slot(i)] else { return nil }
            return (e, start)
        }
    }

    /// The clock of a venue's zone (the default zone when it has none or an unknown one).
    public func zone(of venue: String) -> ZoneClock {
        venues[venue]?.timeZone.flatMap { zones[$0] } ?? defaultClock
    }

    private func zone(ofVenue slot: Slot) -> ZoneClock {
        Int(slot) < clocks.count ? clocks[Int(slot)] ?? defaultClock : defaultClock
    }

    /// The clock of venues without a zone (one, so its offsets are cached once).
    private let defaultClock: ZoneClock

    /// The ids of the artists called `name` (case and accents aside).
    public func artists(named name: String) -> Set<String> { artistsByName[NameKey.of(name)] ?? [] }

    /// An artist's recommendations, replacing the earlier ones.
    public mutating func setRecommendations(_ list: [Recommendation], of artist: String) {
        for old in recommendations[artist] ?? [] { recommendedFor[old.artist]?[artist] = nil }
        let ordered = Self.ordered(list)
        recommendations[artist] = ordered.isEmpty ? nil : ordered
        for r in ordered { recommendedFor[r.artist, default: [:]][artist] = r.score }
    }

    /// Recommendations as the catalog keeps them: best score first, ties by artist id.
    public static func ordered(_ list: [Recommendation]) -> [Recommendation] {
        list.sorted { ($0.score, $1.artist) > ($1.score, $0.artist) }
    }

    /// The artists `artist` is recommended for (whose fans may like it), with the score.
    public func recommending(_ artist: String) -> [String: Double] { recommendedFor[artist] ?? [:] }

    public func place(ofVenue id: String) -> Place? { venues.slot(of: id).flatMap { venueIndex.place(of: $0) } }

    /// Up to `limit` artists for a type-ahead query (see `ArtistSearch`).
    public mutating func searchArtists(_ query: String, limit: Int) -> [String] {
        if search == nil { search = ArtistSearch(artists.values.lazy.map { (id: $0.id, name: $0.name) }) }
        return search!.find(query, limit: limit)
    }

    // MARK: What users see

    /// Whether tickets can be had: on sale, or rescheduled to a date that is on sale.
    public static func isBookable(_ e: FeedEvent) -> Bool { e.status == .onsale || e.status == .rescheduled }

    /// Whether `e` costs at most `maxPrice` (major units); events without a price pass.
    public static func isWithinBudget(_ e: FeedEvent, _ maxPrice: Double?) -> Bool {
        guard let maxPrice, let cents = e.minPrice else { return true }
        return Double(cents) <= maxPrice * 100 + 0.5
    }

    /// An event's categories and all their ancestors (Hard Rock, Rock, Music), however deep
    /// (a cycle in the feed's parents stops the walk).
    public func categoryLineage(_ e: FeedEvent) -> Set<String> {
        var out = Set(e.categories)
        for c in e.categories {
            var parent = categories[c]?.parent
            while let p = parent, out.insert(p).inserted { parent = categories[p]?.parent }
        }
        return out
    }

    /// Why `goer` would want `e`, if they would: a favourite performer, a favourite category, or a
    /// performer recommended for one of their favourites (the best score).
    public func reason(for e: FeedEvent, _ goer: EventGoer) -> Reason? {
        if let a = e.performers.first(where: goer.artists.contains) { return .favorite(artist: a) }
        if !goer.categories.isEmpty, let c = categoryLineage(e).sorted().first(where: goer.categories.contains) { return .category(c) }
        var best: (String, Double)?
        for p in e.performers {
            for (fan, score) in recommendedFor[p] ?? [:] where goer.artists.contains(fan) {
                if best == nil || (score, best!.0) > (best!.1, fan) { best = (fan, score) }
            }
        }
        return best.map { .similar(to: $0.0, score: $0.1) }
    }

    /// Whether `e` passes `prefs`' budget and categories.
    func suits(_ e: FeedEvent, _ prefs: Preferences) -> Bool {
        Self.isWithinBudget(e, prefs.maxPrice) && (prefs.categories.isEmpty || !categoryLineage(e).isDisjoint(with: prefs.categories))
    }

    /// Tonight's suggestions for `goer` at `now` (design.md): bookable events starting between now
    /// and the end of their venue's local night, within the radius, within budget, in the chosen
    /// categories, by a favourite or a recommended artist, not followed or dismissed; in
    /// `Suggestion.ordered` order.
    ///
    /// Two ways to the same answer: from the soon events of the artists the user likes (favourites
    /// and those recommended for them: a few dozen artists, a handful of events), or, when the user
    /// favours categories (whose events may be thousands), from the venues within the radius that
    /// have events soon.
    public mutating func tonight(for goer: EventGoer, now: Double) -> [Suggestion] {
        guard let prefs = goer.prefs else { return [] }
        prepare(now: now)
        var out: [Suggestion] = []
        var ends: [String: Double] = [:] // the night's end per zone, worked out once per zone
        func consider(_ slot: Slot, placeChecked: Bool) {
            let start = starts[Int(slot)]
            guard start >= now, start < soonTo, let e = events[slot], Self.isBookable(e), !goer.excludes(e.id),
                  let venue = venues.slot(of: e.venue) else { return }
            let zoneName = venues[venue]?.timeZone ?? ""
            let end = ends[zoneName] ?? rules.night.end(at: now, in: zone(ofVenue: venue))
            ends[zoneName] = end
            guard start < end, suits(e, prefs), let why = reason(for: e, goer) else { return }
            if !placeChecked {
                guard let at = venueIndex.place(of: venue), prefs.location.kilometres(to: at) <= prefs.radiusKm else { return }
            }
            out.append(Suggestion(event: e.id, reason: why, startsAt: start))
        }
        if goer.categories.isEmpty {
            var liked = goer.artists
            for a in goer.artists { for r in recommendations[a] ?? [] { liked.insert(r.artist) } }
            var seen = Set<Slot>()
            for artist in liked {
                guard let a = artists.slot(of: artist) else { continue }
                for slot in soonByArtist[a] ?? [] where seen.insert(slot).inserted { consider(slot, placeChecked: false) }
            }
        } else {
            for (venue, _) in soonVenues.within(prefs.radiusKm, of: prefs.location) {
                for slot in soonEvents[venue] ?? [] { consider(slot, placeChecked: true) }
            }
        }
        return out.sorted(by: Suggestion.ordered)
    }

    /// Affinity cards (`events.explore`): bookable events at any date ahead by artists recommended
    /// for `goer`'s favourites (within the radius when a place is set), best score first; followed
    /// and dismissed events left out.
    public func explore(for goer: EventGoer, now: Double, limit: Int) -> [Suggestion] {
        var best: [String: Suggestion] = [:]
        for fan in goer.artists {
            for r in recommendations[fan] ?? [] where !goer.artists.contains(r.artist) {
                guard let artist = artists.slot(of: r.artist) else { continue }
                for slot in eventsByArtist[artist] ?? [] {
                    let start = starts[Int(slot)]
                    guard let e = events[slot], start >= now, Self.isBookable(e), !goer.excludes(e.id) else { continue }
                    if let prefs = goer.prefs {
                        guard suits(e, prefs), let at = place(ofVenue: e.venue), prefs.location.kilometres(to: at) <= prefs.radiusKm else { continue }
                    }
                    let s = Suggestion(event: e.id, reason: .similar(to: fan, score: r.score), startsAt: start)
                    if let held = best[e.id], !Suggestion.ordered(s, held) { continue }
                    best[e.id] = s
                }
            }
        }
        return Array(best.values.sorted(by: Suggestion.ordered).prefix(limit))
    }

    /// Events near `center` (`events.nearby`) that are not over and not cancelled, by start.
    public func nearby(_ center: Place, km: Double, now: Double, limit: Int) -> [String] {
        var found: [(Double, String)] = []
        for (venue, _) in venueIndex.within(km, of: center) {
            for slot in eventsByVenue[venue] ?? [] {
                let start = starts[Int(slot)]
                guard start >= now, let e = events[slot], e.status != .cancelled else { continue }
                found.append((start, e.id))
            }
        }
        return found.sorted { $0 < $1 }.prefix(limit).map(\.1)
    }

    /// An artist's events that are not over, by start.
    public func upcoming(of artist: String, now: Double) -> [String] {
        guard let a = artists.slot(of: artist) else { return [] }
        return (eventsByArtist[a] ?? []).compactMap { slot in
            starts[Int(slot)] >= now && events[slot] != nil ? (starts[Int(slot)], events.id(at: slot)) : nil
        }.sorted { $0 < $1 }.map(\.1)
    }

}
