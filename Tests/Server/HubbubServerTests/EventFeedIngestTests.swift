import Foundation
import GRDB
import HubbubTestSupport
import Realtime
import TonightService
import XCTest

/// `POST /api/feeds/events` end to end: the feed streamed in, records upserted by ID and counted,
/// bad ones refused with their line and reason, hostile or cut-off XML answered 400 with the
/// position while what came before is kept.
final class EventFeedIngestTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    static func feed(events: String = "", venueName: String = "The Independent") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <EventFeed>
          <Event ID="E1"><EventPerformer ID="A1"/><EventCategory ID="10"/><EventVenue ID="V1"/><EventDate>2026-11-22</EventDate>
            <EventTime>20:00</EventTime><EventStatus>onsale</EventStatus><MinPrice>25.00</MinPrice><MaxPrice>80.00</MaxPrice><Currency>USD</Currency></Event>
          <Category ID="10"><CategoryName>Rock</CategoryName></Category>
          <Artist ID="A1"><ArtistCategory ID="10"/><ArtistName>Celia Games</ArtistName></Artist>
          <Venue ID="V1"><VenueName>\(venueName)</VenueName><VenueLatitude>37.7755</VenueLatitude><VenueLongitude>-122.4378</VenueLongitude>
            <VenueTimeZone>America/Los_Angeles</VenueTimeZone></Venue>
          <Venue ID="V2"><VenueName>Nowhere Hall</VenueName></Venue>
        \(events)</EventFeed>
        """
    }

    private func post(_ text: String, chunked: Bool = false) throws -> (Int, JSON?) {
        let r = try server.api("POST", "/api/feeds/events", body: Array(text.utf8), chunked: chunked)
        return (r.status, r.json)
    }

    func testAFeedIsIngestedAndAReIngestCountsWhatChanged() throws {
        let extra = """
              <Event ID="E2"><EventPerformer ID="A9"/><EventVenue ID="V1"/><EventDate>2026-11-23</EventDate><EventTime>21:00</EventTime><EventStatus>onsale</EventStatus></Event>
              <Event ID="E3"><EventPerformer ID="A1"/><EventVenue ID="V9"/><EventDate>2026-11-23</EventDate><EventTime>21:00</EventTime><EventStatus>onsale</EventStatus></Event>
              <Event ID="E4"><EventPerformer ID="A1"/><EventVenue ID="V1"/><EventDate>2026-11-31</EventDate><EventTime>21:00</EventTime><EventStatus>onsale</EventStatus></Event>
              <Venue ID="V3"><VenueName>Lost</VenueName><VenueTimeZone>Mars/Olympus</VenueTimeZone></Venue>

            """
        let (status, reply) = try post(Self.feed(events: extra), chunked: true)
        XCTAssertEqual(status, 200, reply?.encoded ?? "")
        XCTAssertEqual(reply?["added"]?.int, 5, "a category, an artist, two venues, one event")
        XCTAssertEqual(reply?["unchanged"]?.int, 0)
        XCTAssertEqual(reply?["unlocated"]?.int, 1, "V2 has no coordinates: kept, unlocated")
        let rejects = reply?["rejects"]?.items ?? []
        XCTAssertEqual(reply?["rejected"]?.int, 4)
        let reasons = Dictionary(uniqueKeysWithValues: rejects.map { ($0["record"]?.string ?? "", $0["reason"]?.string ?? "") })
        XCTAssertEqual(reasons["Event E2"], "every performer unknown")
        XCTAssertEqual(reasons["Event E3"], "unknown venue V9")
        XCTAssertTrue(reasons["Event E4"]?.hasPrefix("EventDate 2026-11-31") ?? false)
        XCTAssertTrue(reasons["Venue V3"]?.contains("Mars/Olympus") ?? false)
        XCTAssertTrue(rejects.allSatisfy { ($0["line"]?.int ?? 0) > 2 }, "each names its line")

        // The same feed again: nothing changed; then one venue renamed.
        let again = try post(Self.feed())
        XCTAssertEqual(again.1?["added"]?.int, 0)
        XCTAssertEqual(again.1?["changed"]?.int, 0)
        XCTAssertEqual(again.1?["unchanged"]?.int, 5)
        let renamed = try post(Self.feed(venueName: "The Independent SF"))
        XCTAssertEqual(renamed.1?["changed"]?.int, 1)
        XCTAssertEqual(renamed.1?["unchanged"]?.int, 4)

        // Durable: a restart holds the same catalog.
        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir)
        let after = try post(Self.feed(venueName: "The Independent SF"))
        XCTAssertEqual(after.1?["unchanged"]?.int, 5, after.1?.encoded ?? "")
    }

    func testHostileOrBrokenXMLIsRefusedWithThePositionAndWhatCameBeforeIsKept() throws {
        var laughs = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;\">]>\n<EventFeed>&lol2;</EventFeed>"
        var (status, reply) = try post(laughs)
        XCTAssertEqual(status, 400)
        XCTAssertTrue(reply?["error"]?.string?.contains("DTD") ?? false, reply?.encoded ?? "")
        XCTAssertEqual(reply?["line"]?.int, 2)
        XCTAssertNotNil(reply?["offset"]?.int)
        laughs = "<EventFeed>" + String(repeating: "<x>", count: 10_000)
        (status, reply) = try post(laughs)
        XCTAssertEqual(status, 400)
        XCTAssertTrue(reply?["error"]?.string?.contains("nested") ?? false, reply?.encoded ?? "")

        // Cut off after the venue: the records before the cut are kept and counted.
        let whole = Self.feed()
        let cut = String(whole[..<whole.range(of: "<Venue ID=\"V2\"")!.lowerBound])
        (status, reply) = try post(cut)
        XCTAssertEqual(status, 400, reply?.encoded ?? "")
        XCTAssertGreaterThan(reply?["offset"]?.int ?? 0, 500)
        XCTAssertEqual(reply?["added"]?.int, 4, "category, artist, venue and the event read before the cut")
        let notXML = try post("not xml at all")
        XCTAssertEqual(notXML.0, 400)
        XCTAssertEqual(try server.api("POST", "/api/feeds/events", body: [], key: nil).status, 401)
    }

    /// `POST /api/feeds/affinity`: headers resolved by name whatever the case and accents, names
    /// with commas, bad lines refused by number; a new feed replaces only the artists it names.
    func testAffinityFeedResolvesNamesAndReplacesOnlyTheArtistsItNames() throws {
        let artists = """
            <EventFeed>
              <Artist ID="1"><ArtistName>Björk</ArtistName></Artist>
              <Artist ID="2"><ArtistName>Sigur Rós</ArtistName></Artist>
              <Artist ID="3"><ArtistName>Crosby, Stills, Nash &amp; Young</ArtistName></Artist>
              <Artist ID="4"><ArtistName>Twin</ArtistName></Artist>
              <Artist ID="5"><ArtistName>TWIN</ArtistName></Artist>
            </EventFeed>
            """
        XCTAssertEqual(try post(artists).0, 200)
        func affinity(_ text: String) throws -> JSON? {
            try server.api("POST", "/api/feeds/affinity", body: Array(text.utf8), chunked: true).json
        }
        let first = try affinity("""
            Recommended artists for BJORK
            2,Sigur Rós,0.9
            3,Crosby, Stills, Nash & Young,0.25
            99,Nobody,0.5
            4,Twin,1.7
            -----
            Recommended artists for sigur ros
            1,Björk,0.8
            -----
            Recommended artists for Twin
            1,Björk,0.1
            -----
            Recommended artists for Unknown Band
            1,Björk,0.1
            -----

            """)
        XCTAssertEqual(first?["added"]?.int, 2, first?.encoded ?? "")
        let reasons = (first?["rejects"]?.items ?? []).map { "\($0["line"]?.int ?? 0): \($0["reason"]?.string ?? "")" }
        XCTAssertEqual(reasons.count, 4, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("4: unknown artist ID 99") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("5: score 1.7") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("10: 2 artists are called Twin") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("13: no artist is called Unknown Band") }, "\(reasons)")

        // A second feed naming only Björk replaces hers; Sigur Rós keeps his.
        let second = try affinity("Recommended artists for Björk\n3,Crosby, Stills, Nash & Young,0.5\n-----\n")
        XCTAssertEqual(second?["changed"]?.int, 1)
        let same = try affinity("Recommended artists for björk\n3,Crosby, Stills, Nash & Young,0.5\n-----\n")
        XCTAssertEqual(same?["unchanged"]?.int, 1)
        let dir = server.configuration.dataDir
        server.stop()
        let db = try sideDatabase(dir + "/hubbub.sqlite")
        let rows = try db.read { db in try Row.fetchAll(db, sql: "SELECT artist, recommended, score FROM tonight_affinity ORDER BY artist, recommended") }
        XCTAssertEqual(rows.map { "\($0["artist"] as String)>\($0["recommended"] as String)" }, ["1>3", "2>1"])
        server = try TestServer(dataDir: dir)
        let restarted = try affinity("Recommended artists for Sigur Rós\n1,Björk,0.8\n-----\n")
        XCTAssertEqual(restarted?["unchanged"]?.int, 1, "the recommendations were read back at start")
    }
}
