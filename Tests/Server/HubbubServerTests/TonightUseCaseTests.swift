import Foundation
import GRDB
import HubbubTestSupport
import Storage
import Realtime
import TonightService
import XCTest

/// Event-goers end to end (seeds 000, 004, 002), on a clock the tests move: suggestions and
/// announcements exactly once across re-ingests and restarts, changes of followed events with their
/// previous values, reminders (also those that fell due while the server was down), live event
/// rooms, and every refusal naming its field.
final class TonightUseCaseTests: XCTestCase {
    /// 18:00 in Madrid on Sunday 2026-11-22.
    static let start = TonightRulesClock.utc("2026-11-22T17:00:00Z")
    var clock: FakeClock!
    var server: TestServer!

    override func setUp() async throws {
        clock = FakeClock(Self.start)
        server = try Self.server(clock: clock)
    }

    override func tearDown() async throws { server.stop() }

    static func server(clock: FakeClock, dataDir: String? = nil) throws -> TestServer {
        try TestServer(dataDir: dataDir, clock: clock.clock) { c in
            c.domainSettings[TonightDomain.tickSeconds] = 1
        }
    }

    func restart() throws {
        let dir = server.configuration.dataDir
        server.stop()
        server = try Self.server(clock: clock, dataDir: dir)
    }

    static let madrid: JSON = ["lat": 40.4168, "lon": -3.7038]

    /// A feed of feeds.md's shape (see `TonightFeed.xml`).
    static func feed(_ events: [(String, String, String, String, String, String, String)]) -> [UInt8] { TonightFeed.xml(events) }

    static let tonight = [("E1", "A1", "MAD", "2026-11-22", "21:00", "onsale", "25.00"), ("E2", "A2", "MAD", "2026-11-22", "22:00", "onsale", "20.00"),
                          ("E3", "A1", "MAD", "2026-11-23", "21:00", "onsale", "25.00")]

    /// An operator request, off the cooperative pool (the test server shares it).
    func api(_ path: String, _ body: [UInt8]) async throws -> (status: Int, json: JSON?) {
        let server = self.server!
        return try await withCheckedThrowingContinuation { k in
            DispatchQueue.global().async { k.resume(with: Result { try server.api("POST", path, body: body) }) }
        }
    }

    func ingest(_ events: [(String, String, String, String, String, String, String)]) async throws {
        let r = try await api("/api/feeds/events", Self.feed(events))
        XCTAssertEqual(r.status, 200, r.json?.encoded ?? "")
    }

    /// The `n`th push (counting from 1) on `c`, waiting at most 10 s.
    func push(_ c: ProtocolClient, _ n: Int) async throws -> JSON { try await c.push(n) }

    func signIn(_ name: String) async throws -> ProtocolClient {
        let c = try await ProtocolClient(url: server.url)
        _ = try await c.ok("account.login", ["login": .string(name), "password": "secret123"])
        return c
    }

    func testSuggestionsArriveOnceAcrossReIngestsAndRestarts() async throws {
        try await ingest(Self.tonight)
        let (ana, id) = try await server.user("ana")
        _ = try await ana.ok("prefs.set", ["location": Self.madrid, "radiusKm": 10])
        let sub = try await ana.ok("subscribe", ["room": .string("user:\(id)")])
        let epoch = sub["epoch"]?.string ?? ""
        XCTAssertEqual(sub["snapshot"]?["tonight"]?.items.count, 0, "no favourites yet")

        _ = try await ana.ok("artist.favorite", ["artist": "A1"])
        let first = try await push(ana, 1)
        XCTAssertEqual(first["event"]?.string, "tonight.suggested")
        XCTAssertEqual(first["data"]?["event"]?["id"]?.string, "E1")
        XCTAssertEqual(first["data"]?["reason"], ["favorite": "A1"])
        XCTAssertEqual(first["data"]?["event"]?["venue"]?["timeZone"]?.string, "Europe/Madrid")

        // The affinity feed recommends A2 for A1's fans: E2 is suggested, with the score.
        let affinity = try await api("/api/feeds/affinity", Array("Recommended artists for CELIA GAMES\nA2,Björk Tribute,0.8\n-----\n".utf8))
        XCTAssertEqual(affinity.json?["added"]?.int, 1, affinity.json?.encoded ?? "")
        let second = try await push(ana, 2)
        XCTAssertEqual(second["data"]?["event"]?["id"]?.string, "E2")
        XCTAssertEqual(second["data"]?["reason"], ["similarTo": "A1", "score": 0.8])
        let listed = try await ana.ok("events.tonight")
        XCTAssertEqual(listed["events"]?.items.compactMap { $0["event"]?["id"]?.string }, ["E1", "E2"], "favourites first, then by score")

        // The same feed again, a preference saved again: nothing is suggested twice. The next push is
        // the next event entering tonight's window (the clock passes 04:00 in Madrid): seq 3.
        try await ingest(Self.tonight)
        _ = try await ana.ok("prefs.set", ["location": Self.madrid, "radiusKm": 10])
        clock.now = TonightRulesClock.utc("2026-11-23T05:00:00Z")
        let third = try await push(ana, 3)
        XCTAssertEqual(third["seq"]?.int, 3)
        XCTAssertEqual(third["data"]?["event"]?["id"]?.string, "E3")

        // A restart: the stream resumes from seq 1 with what was missed, and nothing comes twice.
        ana.close()
        try restart()
        let again = try await signIn("ana")
        let resumed = try await again.ok("subscribe", ["room": .string("user:\(id)"), "since": ["seq": 1, "epoch": .string(epoch)]])
        XCTAssertEqual(resumed["recovered"], true, resumed.encoded)
        let replayed = [try await push(again, 1), try await push(again, 2)]
        XCTAssertEqual(replayed.map { $0["seq"]?.int }, [2, 3])
        XCTAssertEqual(replayed.map { $0["data"]?["event"]?["id"]?.string }, ["E2", "E3"])
        try await ingest(Self.tonight + [("E4", "A1", "MAD2", "2026-11-23", "23:00", "onsale", "10.00")])
        let fourth = try await push(again, 3)
        XCTAssertEqual(fourth["seq"]?.int, 4, "after the restart the stream goes on with no repeat")
        XCTAssertEqual(fourth["data"]?["event"]?["id"]?.string, "E4")
    }

    func testAnnouncementsOfAFavouriteArtistsNewShowsNearby() async throws {
        let base = Self.tonight + [("E5", "A2", "MAD", "2026-11-23", "20:00", "onsale", "20.00")]
        try await ingest(base)
        let (ana, id) = try await server.user("ana")
        _ = try await ana.ok("prefs.set", ["location": Self.madrid, "radiusKm": 10])
        _ = try await ana.ok("subscribe", ["room": .string("user:\(id)")])
        _ = try await ana.ok("artist.favorite", ["artist": "A2"])
        let tonight = try await push(ana, 1)
        XCTAssertEqual(tonight["data"]?["event"]?["id"]?.string, "E2")
        // A2 announces a show in 30 days near Ana, and one in a year (beyond tonight.announceDays).
        let shows = base + [("N1", "A2", "MAD2", "2026-12-22", "21:00", "onsale", "30.00"),
                            ("N2", "A2", "MAD2", "2027-11-22", "21:00", "onsale", "30.00")]
        try await ingest(shows)
        let announced = try await push(ana, 2)
        XCTAssertEqual(announced["event"]?.string, "event.announced", announced.encoded)
        XCTAssertEqual(announced["data"]?["event"]?["id"]?.string, "N1")
        XCTAssertEqual(announced["data"]?["reason"], ["favorite": "A2"])
        // Re-ingested with a new price, favourited again: no second announcement or suggestion. The
        // next push is E5 entering tonight's window when the clock passes 04:00 in Madrid.
        try await ingest(shows.map { $0.0 == "N1" ? ("N1", "A2", "MAD2", "2026-12-22", "21:00", "onsale", "35.00") : $0 })
        _ = try await ana.ok("artist.unfavorite", ["artist": "A2"])
        _ = try await ana.ok("artist.favorite", ["artist": "A2"])
        clock.now = TonightRulesClock.utc("2026-11-23T05:00:00Z")
        let next = try await push(ana, 3)
        XCTAssertEqual(next["seq"]?.int, 3)
        XCTAssertEqual(next["event"]?.string, "tonight.suggested")
        XCTAssertEqual(next["data"]?["event"]?["id"]?.string, "E5")
    }

    func testFollowedEventsChangesAndReminders() async throws {
        try await ingest(Self.tonight)
        let (ana, id) = try await server.user("ana")
        let (bo, _) = try await server.user("bob")
        let followed = try await ana.ok("event.follow", ["event": "E1"])
        XCTAssertEqual(followed["plan"]?.string, "following")
        _ = try await ana.ok("subscribe", ["room": .string("user:\(id)")])
        let room = try await bo.ok("subscribe", ["room": "event:E1"])
        XCTAssertEqual(room["snapshot"]?["event"]?["id"]?.string, "E1")

        // The feed moves E1 to another venue, half an hour later, at another price.
        try await ingest(Self.tonight.map { $0.0 == "E1" ? ("E1", "A1", "MAD2", "2026-11-22", "21:30", "onsale", "30.00") : $0 })
        let changed = try await push(ana, 1)
        XCTAssertEqual(changed["event"]?.string, "event.changed")
        XCTAssertEqual(changed["data"]?["changed"], ["venue", "start", "price"])
        XCTAssertEqual(changed["data"]?["previous"]?["venue"]?["id"]?.string, "MAD")
        XCTAssertEqual(changed["data"]?["previous"]?["start"]?.string, "2026-11-22T21:00")
        XCTAssertEqual(changed["data"]?["previous"]?["minPrice"], 25.0)
        XCTAssertEqual(changed["data"]?["event"]?["venue"]?["id"]?.string, "MAD2")
        let inRoom = try await push(bo, 1)
        XCTAssertEqual(inRoom["event"]?.string, "event.changed", "the event's room hears it too")

        // The reminder comes an hour before the new start (20:30 UTC): not at 19:15, at 19:31.
        clock.now = TonightRulesClock.utc("2026-11-22T19:15:00Z")
        try await Task.sleep(for: .milliseconds(1_500))
        _ = try await ana.ok("prefs.get") // reads whatever came before its reply
        XCTAssertEqual(ana.pushes.count, 1, "not due yet")
        clock.now = TonightRulesClock.utc("2026-11-22T19:31:00Z")
        let reminder = try await push(ana, 2)
        XCTAssertEqual(reminder["event"]?.string, "event.reminder")
        XCTAssertEqual(reminder["data"]?["event"]?["id"]?.string, "E1")
        XCTAssertEqual(reminder["data"]?["minutes"]?.int, 59)

        // Cancelled: the status change, with the previous status.
        try await ingest(Self.tonight.map { $0.0 == "E1" ? ("E1", "A1", "MAD2", "2026-11-22", "21:30", "cancelled", "30.00") : $0 })
        let cancelled = try await push(ana, 3)
        XCTAssertEqual(cancelled["data"]?["changed"], ["status"])
        XCTAssertEqual(cancelled["data"]?["previous"]?["status"]?.string, "onsale")
        let plans = try await ana.ok("plans.list")
        XCTAssertEqual(plans["plans"]?.items.first?["event"]?["status"]?.string, "cancelled")
        _ = try await ana.ok("event.unfollow", ["event": "E1"])
        let got1 = try await ana.ok("plans.list")["plans"]?.items.count
        XCTAssertEqual(got1, 0)
    }

    func testNoReminderOfACancelledEventAndOneAtOnceWhenTheStartMovesCloser() async throws {
        try await ingest(Self.tonight + [("E4", "A2", "MAD2", "2026-11-22", "23:30", "onsale", "10.00")])
        let (ana, id) = try await server.user("ana")
        for e in ["E1", "E2", "E4"] { _ = try await ana.ok("event.follow", ["event": .string(e)]) }
        _ = try await ana.ok("subscribe", ["room": .string("user:\(id)")])
        // 19:15 UTC: E1's reminder (due 19:00) comes.
        clock.now = TonightRulesClock.utc("2026-11-22T19:15:00Z")
        let first = try await push(ana, 1)
        XCTAssertEqual(first["data"]?["event"]?["id"]?.string, "E1", first.encoded)
        XCTAssertEqual(first["data"]?["minutes"]?.int, 45)
        // Then E2 (due 20:00 UTC) is cancelled, and E4 (23:30 Madrid, due 21:30 UTC) moves to 20:45
        // Madrid, closer than the reminder's lead: its reminder is due at once.
        try await ingest(Self.tonight.map { $0.0 == "E2" ? ("E2", "A2", "MAD", "2026-11-22", "22:00", "cancelled", "20.00") : $0 }
                         + [("E4", "A2", "MAD2", "2026-11-22", "20:45", "onsale", "10.00")])
        let changes = [try await push(ana, 2), try await push(ana, 3)]
        XCTAssertEqual(Set(changes.compactMap { $0["event"]?.string }), ["event.changed"])
        let soon = try await push(ana, 4)
        XCTAssertEqual(soon["event"]?.string, "event.reminder", soon.encoded)
        XCTAssertEqual(soon["data"]?["event"]?["id"]?.string, "E4")
        XCTAssertEqual(soon["data"]?["minutes"]?.int, 30)
        // Past E2's reminder time: none comes for the cancelled event.
        clock.now = TonightRulesClock.utc("2026-11-22T20:05:00Z")
        try await Task.sleep(for: .milliseconds(2_000))
        _ = try await ana.ok("prefs.get") // reads whatever came before its reply
        XCTAssertEqual(ana.pushes.count, 4, "no reminder of the cancelled E2: \(ana.pushes.map(\.encoded))")
    }

    func testAReminderThatFellDueWhileTheServerWasDownIsSentAtStartUp() async throws {
        try await ingest(Self.tonight)
        let (ana, id) = try await server.user("ana")
        _ = try await ana.ok("event.follow", ["event": "E2"]) // 22:00 Madrid = 21:00 UTC; reminder due 20:00 UTC
        let sub = try await ana.ok("subscribe", ["room": .string("user:\(id)")])
        ana.close()
        let dir = server.configuration.dataDir
        server.stop()
        clock.now = TonightRulesClock.utc("2026-11-22T20:40:00Z") // due while down; E2 not started
        server = try Self.server(clock: clock, dataDir: dir)
        let again = try await signIn("ana")
        let resumed = try await again.ok("subscribe", ["room": .string("user:\(id)"), "since": ["seq": 0, "epoch": sub["epoch"] ?? ""]])
        XCTAssertEqual(resumed["recovered"], true)
        let reminder = try await push(again, 1)
        XCTAssertEqual(reminder["event"]?.string, "event.reminder")
        XCTAssertEqual(reminder["data"]?["minutes"]?.int, 20)
    }

    func testChangesWrittenButNotToldBeforeAStopAreToldAtStartUp() async throws {
        try await ingest(Self.tonight)
        let (ana, id) = try await server.user("ana")
        _ = try await ana.ok("event.follow", ["event": "E1"])
        let sub = try await ana.ok("subscribe", ["room": .string("user:\(id)")])
        ana.close()
        // What an ingest killed after its batch was durable and before it told anyone leaves behind:
        // the event changed, and the note of its earlier values.
        let dir = server.configuration.dataDir
        server.stop()
        let db = try sideDatabase(dir + "/hubbub.sqlite")
        try await db.write { db in
            try db.execute(sql: "UPDATE tonight_event SET start_local = '2026-11-22T23:00' WHERE id = 'E1'")
            try db.execute(sql: """
                INSERT INTO tonight_feed_note (changes) VALUES ('[["E1", 0, "MAD", "2026-11-22T21:00", "onsale", 2500, null, "EUR"]]')
                """)
        }
        server = try Self.server(clock: clock, dataDir: dir)
        let again = try await signIn("ana")
        _ = try await again.ok("subscribe", ["room": .string("user:\(id)"), "since": ["seq": 0, "epoch": sub["epoch"] ?? ""]])
        let changed = try await push(again, 1)
        XCTAssertEqual(changed["event"]?.string, "event.changed", changed.encoded)
        XCTAssertEqual(changed["data"]?["changed"], ["start"])
        XCTAssertEqual(changed["data"]?["previous"]?["start"]?.string, "2026-11-22T21:00")
        // The note goes once its users were told (just after the push is durable).
        var left: Int? = 1
        try await eventually(every: .milliseconds(50)) {
            left = try await db.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tonight_feed_note") }
            return left == 0
        }
        XCTAssertEqual(left, 0)
    }

    func testLiveEventRooms() async throws {
        try await ingest(Self.tonight)
        let (bo, _) = try await server.user("bob")
        let sub = try await bo.ok("subscribe", ["room": "event:E1"])
        XCTAssertEqual(sub["snapshot"]?["live"], .null)
        let posted = try await api("/api/events/E1/live", Array(#"{"status": "half time", "score": {"home": 1, "away": 0}}"#.utf8))
        XCTAssertEqual(posted.status, 200)
        XCTAssertEqual(posted.json?["added"]?.int, 1)
        let live = try await push(bo, 1)
        XCTAssertEqual(live["event"]?.string, "event.live")
        XCTAssertEqual(live["data"]?["score"], ["home": 1, "away": 0])
        XCTAssertEqual(live["data"]?["status"]?.string, "half time")
        XCTAssertNotNil(live["data"]?["at"]?.double)

        let bad = try await api("/api/events/E1/live", Array(#"{"score": {"home": -1}}"#.utf8))
        XCTAssertEqual(bad.status, 400)
        XCTAssertTrue(bad.json?["rejects"]?.items.first?["reason"]?.string?.contains("score.home") ?? false, bad.json?.encoded ?? "")
        let got2 = try await api("/api/events/E1/live", Array("{}".utf8)).status
        XCTAssertEqual(got2, 400)
        let got3 = try await api("/api/events/NOPE/live", Array(#"{"text": "hi"}"#.utf8)).status
        XCTAssertEqual(got3, 404)
        let got4 = try await api("/api/events/E1/live", Array("{not json".utf8)).status
        XCTAssertEqual(got4, 400)

        // The latest live state is the snapshot, across a restart too.
        try restart()
        let (cy, _) = try await server.user("cyd")
        let later = try await cy.ok("subscribe", ["room": "event:E1"])
        XCTAssertEqual(later["snapshot"]?["live"]?["score"], ["home": 1, "away": 0])
        XCTAssertEqual(later["snapshot"]?["event"]?["id"]?.string, "E1")
    }

    func testLookupsAndRefusalsNameTheirField() async throws {
        try await ingest(Self.tonight)
        let (ana, id) = try await server.user("ana")
        let (bo, _) = try await server.user("bob")
        let got5 = try await bo.errorCode("subscribe", ["room": .string("user:\(id)")])
        XCTAssertEqual(got5, "forbidden")
        let got6 = try await bo.errorCode("subscribe", ["room": "event:NOPE"])
        XCTAssertEqual(got6, "not_found")
        let got7 = try await ana.errorCode("events.tonight")
        XCTAssertEqual(got7, "bad_request", "no place yet")
        for (args, field) in [(["location": Self.madrid, "radiusKm": 0] as JSON, "radiusKm"), (["location": ["lat": 91, "lon": 0], "radiusKm": 5], "location"),
                              (["location": Self.madrid, "radiusKm": 100_000], "radiusKm"), (["location": Self.madrid, "radiusKm": 5, "maxPrice": -1], "maxPrice"),
                              (["location": Self.madrid, "radiusKm": 5, "categories": ["99"]], "categories")] {
            let r = try await ana.call("prefs.set", args)
            XCTAssertEqual(r["error"]?["code"]?.string, "bad_request", r.encoded)
            XCTAssertTrue(r["error"]?["message"]?.string?.contains(field) ?? false, r.encoded)
        }
        let got8 = try await ana.errorCode("artist.favorite", ["artist": "NOPE"])
        XCTAssertEqual(got8, "not_found")
        let got9 = try await ana.errorCode("category.favorite", ["category": "NOPE"])
        XCTAssertEqual(got9, "not_found")
        let got10 = try await ana.errorCode("event.follow", ["event": "NOPE"])
        XCTAssertEqual(got10, "not_found")
        let got11 = try await ana.errorCode("artist.search", [:])
        XCTAssertEqual(got11, "bad_request")

        let found = try await ana.ok("artist.search", ["q": "bjo"])
        XCTAssertEqual(found["artists"], [["id": "A2", "name": "Björk Tribute"]])
        let categories = try await ana.ok("categories.list")
        XCTAssertEqual(categories["categories"]?.items.compactMap { $0["name"]?.string }, ["E-sports", "Music"])
        _ = try await ana.ok("category.favorite", ["category": "20"])
        let prefs = try await ana.ok("prefs.set", ["location": Self.madrid, "radiusKm": 5, "maxPrice": 22, "categories": ["1"]])
        XCTAssertEqual(prefs["favoriteCategories"], ["20"])
        let got12 = try await ana.ok("prefs.get")["maxPrice"]
        XCTAssertEqual(got12, 22.0)
        let artist = try await ana.ok("artist.get", ["artist": "A1"])
        XCTAssertEqual(artist["events"]?.items.compactMap { $0["id"]?.string }, ["E1", "E3"])
        let nearby = try await ana.ok("events.nearby", ["radiusKm": 20])
        XCTAssertEqual(nearby["events"]?.items.compactMap { $0["id"]?.string }, ["E1", "E2", "E3"])
        _ = try await ana.ok("event.dismiss", ["event": "E1"])
        let got13 = try await ana.ok("event.get", ["event": "E1"])["plan"]?.string
        XCTAssertEqual(got13, "dismissed")
    }

    /// Each record has one row, given by the catalog (the tables have no unique index on the ID):
    /// a store written before that (tonight.v5) keeps its rows, a change is written over its row,
    /// across restarts too, and new records get rows past every other.
    func testEachRecordKeepsOneRowAcrossUpgradeReIngestsAndRestarts() async throws {
        server.stop()
        // A store as tonight.v5 left it (the directory is removed when the test ends).
        let old = try temporaryStore("hubbub-rows", migrations: SQLMigrations.of(TonightSchema.register).upTo("tonight.v5"))
        let dir = old.directory
        do {
            let db = old.store
            defer { db.close() }
            try await db.write { db in
                try db.execute(sql: """
                    INSERT INTO tonight_category (id, name) VALUES ('1', 'Music');
                    INSERT INTO tonight_artist (id, name, categories) VALUES ('A1', 'Celia Games', '1');
                    INSERT INTO tonight_venue (id, name, lat, lon, time_zone) VALUES ('MAD', 'La Riviera', 40.4128, -3.72, 'Europe/Madrid');
                    INSERT INTO tonight_event (id, performers, categories, venue, start_local, status, min_price, currency)
                        VALUES ('E1', 'A1', '1', 'MAD', '2026-11-22T21:00', 'onsale', 2500, 'EUR');
                    """)
            }
        }
        server = try Self.server(clock: clock, dataDir: dir)
        let (ana, _) = try await server.user("ana")
        let before = try await ana.ok("event.get", ["event": "E1"])
        XCTAssertEqual(before["event"]?["start"]?.string, "2026-11-22T21:00", "the upgraded store's event is in the catalog")

        let db = try sideDatabase(dir + "/hubbub.sqlite")
        func rows() async throws -> [String: [Int64]] {
            try await db.read { db in
                var out: [String: [Int64]] = [:]
                for table in ["tonight_category", "tonight_artist", "tonight_venue", "tonight_event"] {
                    for r in try Row.fetchAll(db, sql: "SELECT id, row FROM \(table) ORDER BY row") { out["\(table) \(r["id"] as String)", default: []].append(r["row"]) }
                }
                return out
            }
        }
        let upgraded = try await rows()
        XCTAssertEqual(upgraded["tonight_event E1"], [1])

        // E1 moved, E2 and E3 new, the same records again, a restart, and one more new event.
        let moved = [("E1", "A1", "MAD", "2026-11-22", "22:30", "onsale", "25.00")] + Self.tonight.dropFirst()
        try await ingest(moved)
        try await ingest(moved)
        ana.close()
        try restart()
        try await ingest(moved + [("E4", "A1", "MAD2", "2026-11-23", "23:00", "onsale", "10.00")])
        let after = try await rows()
        XCTAssertEqual(after.filter { $0.value.count != 1 }, [:], "one row per record")
        for (record, row) in upgraded { XCTAssertEqual(after[record], row, "\(record) kept its row") }
        let eventRows = ["E1", "E2", "E3", "E4"].compactMap { after["tonight_event \($0)"]?.first }
        XCTAssertEqual(eventRows.count, 4)
        XCTAssertEqual(Set(eventRows).count, 4, "new records get rows of their own")
        XCTAssertEqual(eventRows.last, eventRows.max(), "the event added after the restart comes after every other")
        let (cy, _) = try await server.user("cyd")
        let e1 = try await cy.ok("event.get", ["event": "E1"])
        XCTAssertEqual(e1["event"]?["start"]?.string, "2026-11-22T22:30", "the change was written over E1's row and read back after the restart")
        let stored = try await db.read { db in try String.fetchOne(db, sql: "SELECT start_local FROM tonight_event WHERE id = 'E1'") }
        XCTAssertEqual(stored, "2026-11-22T22:30")
    }
}

/// ISO 8601 times for the tonight tests.
enum TonightRulesClock {
    static func utc(_ text: String) -> Double { ISO8601DateFormatter().date(from: text)!.timeIntervalSince1970 }
}

/// A feed whose write fails half-way (a trigger refuses one event): the ingest answers 503, and
/// the catalog holds exactly what the store does (batches commit while the feed is read on, and
/// the catalog takes each only once durable).
final class TonightIngestFailureTests: XCTestCase {
    func testAFailedWriteLeavesTheCatalogEqualToTheStore() async throws {
        let server = try TestServer { c in c.domainSettings[TonightDomain.ingestBatch] = 3 }
        defer { server.stop() }
        let ids = (1...40).map { "E\($0)" }
        var events = ids.map { ($0, "A1", "MAD", "2026-12-01", "21:00", "onsale", "10.00") }
        events.insert(("BOOM", "A1", "MAD", "2026-12-01", "21:00", "onsale", "10.00"), at: 17)
        let db = try sideDatabase(server.configuration.dataDir + "/hubbub.sqlite")
        try await db.write { db in
            try db.execute(sql: "CREATE TRIGGER boom BEFORE INSERT ON tonight_event WHEN NEW.id = 'BOOM' BEGIN SELECT RAISE(ABORT, 'boom'); END")
        }
        let body = TonightUseCaseTests.feed(events)
        let failed = try await withCheckedThrowingContinuation { k in
            DispatchQueue.global().async { k.resume(with: Result { try server.api("POST", "/api/feeds/events", body: body) }) }
        }
        XCTAssertEqual(failed.status, 503, failed.json?.encoded ?? "")
        let stored = Set(try await db.read { db in try String.fetchAll(db, sql: "SELECT id FROM tonight_event") })
        XCTAssertFalse(stored.contains("BOOM"))
        XCTAssertLessThan(stored.count, 41, "the failed batch is not stored")
        let (c, _) = try await server.user("ana")
        var known = Set<String>()
        for id in ids + ["BOOM"] where try await c.call("event.get", ["event": .string(id)])["ok"] == true { known.insert(id) }
        XCTAssertEqual(known, stored, "the catalog holds what the store holds, no more, no less")
    }
}
