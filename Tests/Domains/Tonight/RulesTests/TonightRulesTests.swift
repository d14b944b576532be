import Foundation
import SeededRandom
import Tonight
import XCTest

/// Tonight's rules as pure values: the window in each venue's zone, the radius, the exclusions,
/// the order, the type-ahead and the audience index.
final class TonightRulesTests: XCTestCase {
    static func utc(_ text: String) -> Double {
        let f = ISO8601DateFormatter()
        return f.date(from: text)!.timeIntervalSince1970
    }

    static func at(_ date: String, _ time: String) -> LocalDateTime { LocalDateTime(date: date, time: time)! }

    // A venue in Los Angeles and one in Madrid; a user near each.
    static let la = Place(lat: 34.0522, lon: -118.2437), madrid = Place(lat: 40.4168, lon: -3.7038)

    static func catalog(_ events: [FeedEvent], extra: [FeedRecord] = []) -> EventCatalog {
        var records: [FeedRecord] = [
            .category(FeedCategory(id: "1", name: "Music")), .category(FeedCategory(id: "10", name: "Rock", parent: "1")),
            .category(FeedCategory(id: "20", name: "E-sports")),
            .artist(FeedArtist(id: "A1", name: "Celia Games")), .artist(FeedArtist(id: "A2", name: "Björk Tribute")),
            .artist(FeedArtist(id: "A3", name: "Los Ángeles Azules")), .artist(FeedArtist(id: "A4", name: "Nobody Likes")),
            .venue(FeedVenue(id: "LA", name: "The Echo", latitude: la.lat, longitude: la.lon, timeZone: "America/Los_Angeles")),
            .venue(FeedVenue(id: "MAD", name: "La Riviera", latitude: madrid.lat, longitude: madrid.lon, timeZone: "Europe/Madrid")),
            .venue(FeedVenue(id: "FAR", name: "Barcelona Hall", latitude: 41.3874, longitude: 2.1686, timeZone: "Europe/Madrid")),
            .venue(FeedVenue(id: "NOWHERE", name: "Unlocated")),
        ]
        records += extra
        records += events.map(FeedRecord.event)
        var c = EventCatalog(records)
        c.setRecommendations([.init(artist: "A2", score: 0.9), .init(artist: "A3", score: 0.4)], of: "A1")
        return c
    }

    static func event(_ id: String, _ venue: String, _ date: String, _ time: String, by performers: [String] = ["A1"],
                      status: EventStatus = .onsale, cents: Int? = nil, categories: [String] = []) -> FeedEvent {
        FeedEvent(id: id, performers: performers, categories: categories, venue: venue, start: at(date, time), status: status, minPrice: cents)
    }

    func testLocalTimesBecomeInstantsInTheirZoneAndBack() {
        let la = ZoneClock(TimeZone(identifier: "America/Los_Angeles")!), madrid = ZoneClock(TimeZone(identifier: "Europe/Madrid")!)
        XCTAssertEqual(la.instant(of: Self.at("2026-11-22", "20:00")), Self.utc("2026-11-23T04:00:00Z"))
        XCTAssertEqual(madrid.instant(of: Self.at("2026-11-22", "20:00")), Self.utc("2026-11-22T19:00:00Z"))
        XCTAssertEqual(madrid.instant(of: Self.at("2026-07-01", "20:00")), Self.utc("2026-07-01T18:00:00Z"), "summer time")
        XCTAssertEqual(la.local(at: Self.utc("2026-11-23T04:00:00Z")), Self.at("2026-11-22", "20:00"))
        // 02:30 does not exist in LA on 2026-03-08 (clocks go from 02:00 to 03:00): read with the offset before.
        XCTAssertEqual(la.instant(of: Self.at("2026-03-08", "02:30")), Self.utc("2026-03-08T10:30:00Z"))
        XCTAssertEqual(la.instant(of: Self.at("2026-03-08", "20:00")), Self.utc("2026-03-09T03:00:00Z"), "after the change")
        // 01:30 happens twice on 2026-11-01: the first.
        XCTAssertEqual(la.instant(of: Self.at("2026-11-01", "01:30")), Self.utc("2026-11-01T08:30:00Z"))
        for day in stride(from: -800_000.0, to: 800_000, by: 86_400 * 37 + 3_661) {
            let t = Self.utc("2026-01-01T00:00:00Z") + day * 60
            let local = LocalDateTime(naiveSeconds: t)
            XCTAssertEqual(local.naiveSeconds, (t / 60).rounded(.down) * 60, "civil days round-trip at \(t)")
        }
    }

    func testTonightEndsWithEachVenuesLocalNightAcrossMidnight() {
        let window = NightWindow(endHour: 4)
        let la = ZoneClock(TimeZone(identifier: "America/Los_Angeles")!), madrid = ZoneClock(TimeZone(identifier: "Europe/Madrid")!)
        let now = Self.utc("2026-11-22T20:00:00Z") // 21:00 in Madrid, 12:00 in Los Angeles
        XCTAssertEqual(window.end(at: now, in: madrid), Self.utc("2026-11-23T03:00:00Z"), "04:00 Madrid, after midnight")
        XCTAssertEqual(window.end(at: now, in: la), Self.utc("2026-11-23T12:00:00Z"), "04:00 Los Angeles")
        XCTAssertTrue(window.contains(madrid.instant(of: Self.at("2026-11-23", "01:00")), at: now, in: madrid), "after midnight is tonight")
        XCTAssertFalse(window.contains(madrid.instant(of: Self.at("2026-11-23", "05:00")), at: now, in: madrid))
        XCTAssertFalse(window.contains(madrid.instant(of: Self.at("2026-11-22", "20:00")), at: now, in: madrid), "already started")
        XCTAssertTrue(window.contains(la.instant(of: Self.at("2026-11-22", "20:00")), at: now, in: la))
        XCTAssertTrue(window.contains(la.instant(of: Self.at("2026-11-23", "03:30")), at: now, in: la))
        XCTAssertFalse(window.contains(la.instant(of: Self.at("2026-11-23", "19:00")), at: now, in: la), "tomorrow evening")
        // At 03:30 in Madrid the night is still on; at 05:00 tonight is the coming evening.
        XCTAssertEqual(window.end(at: Self.utc("2026-11-23T02:30:00Z"), in: madrid), Self.utc("2026-11-23T03:00:00Z"))
        XCTAssertEqual(window.end(at: Self.utc("2026-11-23T04:00:00Z"), in: madrid), Self.utc("2026-11-24T03:00:00Z"))
    }

    func testTonightForAUserInMadridAndOneInLosAngeles() {
        var c = Self.catalog([
            Self.event("M1", "MAD", "2026-11-23", "01:00"), Self.event("M2", "MAD", "2026-11-23", "21:00"),
            Self.event("L1", "LA", "2026-11-22", "20:00"), Self.event("L2", "LA", "2026-11-23", "19:00"),
        ])
        var madrid = EventGoer(user: "ana", prefs: Preferences(location: Self.madrid, radiusKm: 20))
        madrid.artists = ["A1"]
        var la = EventGoer(user: "bo", prefs: Preferences(location: Self.la, radiusKm: 20))
        la.artists = ["A1"]
        let now = Self.utc("2026-11-22T20:00:00Z")
        XCTAssertEqual(c.tonight(for: madrid, now: now).map(\.event), ["M1"])
        XCTAssertEqual(c.tonight(for: la, now: now).map(\.event), ["L1"])
        // The next morning in Madrid (09:00): Madrid's tonight is the 23rd's evening; LA is still in its night of the 22nd.
        let morning = Self.utc("2026-11-23T08:00:00Z")
        XCTAssertEqual(c.tonight(for: madrid, now: morning).map(\.event), ["M2"])
        XCTAssertEqual(c.tonight(for: la, now: morning).map(\.event), [], "L1 started; L2 is tomorrow night in LA (00:00 LA now)")
    }

    func testEachExclusionRule() {
        let now = Self.utc("2026-11-22T17:00:00Z") // 18:00 Madrid
        var c = Self.catalog([
            Self.event("ok", "MAD", "2026-11-22", "21:00"),
            Self.event("soldout", "MAD", "2026-11-22", "21:00", status: .soldout),
            Self.event("cancelled", "MAD", "2026-11-22", "21:00", status: .cancelled),
            Self.event("offsale", "MAD", "2026-11-22", "21:00", status: .offsale),
            Self.event("postponed", "MAD", "2026-11-22", "21:00", status: .postponed),
            Self.event("rescheduled", "MAD", "2026-11-22", "22:00", status: .rescheduled),
            Self.event("past", "MAD", "2026-11-22", "17:30"),
            Self.event("far", "FAR", "2026-11-22", "21:00"),
            Self.event("unlocated", "NOWHERE", "2026-11-22", "21:00"),
            Self.event("dear", "MAD", "2026-11-22", "21:00", cents: 9_000),
            Self.event("cheap", "MAD", "2026-11-22", "21:30", cents: 2_000),
            Self.event("followed", "MAD", "2026-11-22", "21:00"),
            Self.event("dismissed", "MAD", "2026-11-22", "21:00"),
            Self.event("stranger", "MAD", "2026-11-22", "21:00", by: ["A4"]),
            Self.event("esports", "MAD", "2026-11-22", "21:00", by: ["A4"], categories: ["20"]),
        ])
        var g = EventGoer(user: "ana", prefs: Preferences(location: Self.madrid, radiusKm: 50, maxPrice: 50))
        g.artists = ["A1"]
        g.followed = ["followed": now]
        g.dismissed = ["dismissed"]
        XCTAssertEqual(Set(c.tonight(for: g, now: now).map(\.event)), ["ok", "rescheduled", "cheap"])
        // A favourite category counts like a favourite artist; chosen categories narrow the list.
        g.categories = ["20"]
        XCTAssertEqual(c.tonight(for: g, now: now).first { $0.event == "esports" }?.reason, .category("20"))
        g.prefs?.categories = ["20"]
        XCTAssertEqual(c.tonight(for: g, now: now).map(\.event), ["esports"])
        // Without a place, nothing is tonight's.
        g.prefs = nil
        XCTAssertEqual(c.tonight(for: g, now: now), [])
    }

    func testCategoriesCountWithAllTheirAncestors() {
        let now = Self.utc("2026-11-22T17:00:00Z")
        let hardRock = FeedRecord.category(FeedCategory(id: "27", name: "Hard Rock", parent: "10"))
        var c = Self.catalog([Self.event("loud", "MAD", "2026-11-22", "21:00", by: ["A4"], categories: ["27"])], extra: [hardRock])
        var g = EventGoer(user: "ana", prefs: Preferences(location: Self.madrid, radiusKm: 10, categories: ["1"]))
        g.categories = ["1"]
        XCTAssertEqual(c.categoryLineage(c.events["loud"]!), ["27", "10", "1"])
        XCTAssertEqual(c.tonight(for: g, now: now).map(\.reason), [.category("1")], "Music counts for Hard Rock, two levels down")
        // A cycle in the feed's parents ends the walk.
        c.apply([.category(FeedCategory(id: "1", name: "Music", parent: "27"))])
        XCTAssertEqual(c.categoryLineage(c.events["loud"]!), ["27", "10", "1"])
    }

    func testFavouritesComeFirstByStartThenRecommendationsByScore() {
        let now = Self.utc("2026-11-22T17:00:00Z")
        var c = Self.catalog([
            Self.event("fav-late", "MAD", "2026-11-22", "23:00"), Self.event("fav-early", "MAD", "2026-11-22", "20:00"),
            Self.event("close", "MAD", "2026-11-22", "19:00", by: ["A2"]), Self.event("loose", "MAD", "2026-11-22", "18:30", by: ["A3"]),
            Self.event("both", "MAD", "2026-11-22", "22:00", by: ["A3", "A1"]),
        ])
        var g = EventGoer(user: "ana", prefs: Preferences(location: Self.madrid, radiusKm: 10))
        g.artists = ["A1"]
        let list = c.tonight(for: g, now: now)
        XCTAssertEqual(list.map(\.event), ["fav-early", "both", "fav-late", "close", "loose"])
        XCTAssertEqual(list[1].reason, .favorite(artist: "A1"), "a favourite among the performers wins over a recommendation")
        XCTAssertEqual(list[3].reason, .similar(to: "A1", score: 0.9))
        // Explore: recommended artists' events at any date, best score first, favourites' own left out.
        let explore = c.explore(for: g, now: now, limit: 10)
        XCTAssertEqual(explore.map(\.event), ["close", "loose", "both"], "equal scores by start")
    }

    func testTonightIsTheSameFoundByArtistOrByPlace() {
        // A catalog of random events around Madrid over three days, and random goers: the answer
        // found from the artists a goer likes must equal the one found from the venues in reach
        // (a favourite category without events sends tonight down the second way).
        var rng = SplitMix64(seed: 7)
        var records: [FeedRecord] = (0..<40).map { .artist(FeedArtist(id: "A\($0)", name: "Artist \($0)")) }
        for v in 0..<60 {
            records.append(.venue(FeedVenue(id: "V\(v)", name: "V\(v)", latitude: 40.3 + Double(rng.next() % 300) / 1000,
                                            longitude: -3.85 + Double(rng.next() % 300) / 1000, timeZone: "Europe/Madrid")))
        }
        for e in 0..<600 {
            let day = 22 + Int(rng.next() % 3), hour = Int(rng.next() % 24)
            records.append(.event(FeedEvent(id: "E\(e)", performers: ["A\(rng.next() % 40)"], venue: "V\(rng.next() % 60)",
                                            start: Self.at("2026-11-\(day)", hour < 10 ? "0\(hour):30" : "\(hour):30"),
                                            status: rng.next() % 10 == 0 ? .soldout : .onsale)))
        }
        var c = EventCatalog(records)
        for a in 0..<10 { c.setRecommendations([.init(artist: "A\(a + 10)", score: 0.5), .init(artist: "A\(a + 20)", score: 0.3)], of: "A\(a)") }
        var compared = 0
        for g in 0..<50 {
            var goer = EventGoer(user: "u\(g)", prefs: Preferences(location: Place(lat: 40.35 + Double(rng.next() % 100) / 1000, lon: -3.75),
                                                                   radiusKm: 2 + Double(rng.next() % 15)))
            goer.artists = Set((0..<3).map { _ in "A\(rng.next() % 20)" })
            for hours in [0.0, 5, 20] {
                let now = Self.utc("2026-11-22T12:00:00Z") + hours * 3_600
                let byArtist = c.tonight(for: goer, now: now)
                var byPlace = goer
                byPlace.categories = ["no-such-category"]
                XCTAssertEqual(byArtist, c.tonight(for: byPlace, now: now), "goer \(g) at +\(hours) h")
                compared += byArtist.count
            }
        }
        XCTAssertGreaterThan(compared, 50, "the comparison covered suggestions")
    }

    func testArtistSearchIsAPrefixOfTheNameOrAWordCaseAndAccentsAside() {
        var c = Self.catalog([])
        // The ASCII fast path folds as Foundation does.
        for name in ["  Celia GAMES ", "AC/DC", "\tThe  Who\n", "Guns N' Roses", "", "   ", "MIXED case 123 !?"] {
            XCTAssertEqual(NameKey.of(name), name.trimmingCharacters(in: .whitespacesAndNewlines)
                .folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil), name)
        }
        XCTAssertEqual(NameKey.of(" Björk "), "bjork")
        XCTAssertEqual(c.searchArtists("bjo", limit: 10), ["A2"], "ö folds to o")
        XCTAssertEqual(c.searchArtists("BJÖRK t", limit: 10), ["A2"])
        XCTAssertEqual(c.searchArtists("angeles", limit: 10), ["A3"], "a later word, accent aside")
        XCTAssertEqual(c.searchArtists("games", limit: 10), ["A1"])
        XCTAssertEqual(c.searchArtists("l", limit: 10), ["A3", "A4"], "whole names first (Los…), then words (…Likes)")
        XCTAssertEqual(c.searchArtists("l", limit: 1), ["A3"])
        XCTAssertEqual(c.searchArtists("zz", limit: 10), [])
        XCTAssertEqual(c.searchArtists("  ", limit: 10), [])
        // A renamed artist is found by its new name only.
        c.apply([.artist(FeedArtist(id: "A4", name: "Somebody"))])
        XCTAssertEqual(c.searchArtists("nobody", limit: 10), [])
        XCTAssertEqual(c.searchArtists("some", limit: 10), ["A4"])
    }

    func testTheAudienceOfAnEventIsFoundThroughFavouritesAndRadius() {
        var index = AudienceIndex()
        var near = EventGoer(user: "near", prefs: Preferences(location: Self.madrid, radiusKm: 10))
        near.artists = ["A1"]
        var far = EventGoer(user: "far", prefs: Preferences(location: Self.la, radiusKm: 10))
        far.artists = ["A1"]
        var gamer = EventGoer(user: "gamer", prefs: Preferences(location: Self.madrid, radiusKm: 5))
        gamer.categories = ["20"]
        let indifferent = EventGoer(user: "indifferent", prefs: Preferences(location: Self.madrid, radiusKm: 100))
        for g in [near, far, gamer, indifferent] { index.update(g) }
        XCTAssertEqual(index.audience(artists: ["A1"], categories: [], at: Self.madrid), ["near"])
        XCTAssertEqual(index.audience(artists: ["A9"], categories: ["20"], at: Self.madrid), ["gamer"])
        XCTAssertEqual(index.audience(artists: ["A1"], categories: ["20"], at: Place(lat: 40.5, lon: -3.7)), ["near"], "9 km: not for a 5 km radius")
        // A move is taken in; a deleted user is gone.
        near.prefs?.location = Self.la
        index.update(near)
        XCTAssertEqual(index.audience(artists: ["A1"], categories: [], at: Self.la), ["far", "near"])
        index.remove("far")
        XCTAssertEqual(index.audience(artists: ["A1"], categories: [], at: Self.la), ["near"])
        XCTAssertEqual(index.fans(of: ["A1"]), ["near"])
    }

    func testPlacesWithinARadiusAcrossTheAntimeridian() {
        var index = PlaceIndex<String>()
        index.set("fiji", at: Place(lat: -17.7, lon: 179.9))
        index.set("samoa", at: Place(lat: -17.7, lon: -179.9))
        index.set("far", at: Place(lat: -17.7, lon: 170))
        XCTAssertEqual(Set(index.within(50, of: Place(lat: -17.7, lon: 179.95)).map(\.id)), ["fiji", "samoa"])
        index.set("fiji", at: nil)
        XCTAssertEqual(index.within(50, of: Place(lat: -17.7, lon: 179.95)).map(\.id), ["samoa"])
    }

    func testChangedFieldsOfAnEvent() {
        let old = Self.event("E", "MAD", "2026-11-22", "21:00", cents: 2_000)
        var new = old
        XCTAssertEqual(EventField.changed(from: old, to: new), [])
        new.venue = "FAR"
        new.status = .rescheduled
        new.start = Self.at("2026-11-23", "21:00")
        new.minPrice = 2_500
        XCTAssertEqual(EventField.changed(from: old, to: new), [.venue, .start, .status, .price])
    }
}
