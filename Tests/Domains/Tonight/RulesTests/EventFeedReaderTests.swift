import StreamingXML
import Tonight
import TonightService
import XCTest


/// The event-info feed of feeds.md, read record by record: good records whole, bad ones refused
/// with their line and reason while the rest goes on.
final class EventFeedReaderTests: XCTestCase {
    private func read(_ xml: String) throws -> (records: [FeedRecord], rejects: [FeedReject]) {
        var records: [FeedRecord] = [], rejects: [FeedReject] = []
        let reader = EventFeedReader(onRecord: { record, _ in records.append(record) }, onReject: { rejects.append($0) })
        let parser = StreamingXMLParser(handler: reader)
        try Array(xml.utf8).withUnsafeBytes { try parser.feed($0) }
        try parser.finish()
        return (records, rejects)
    }

    static let sample = """
        <?xml version="1.0" encoding="UTF-8"?>
        <EventFeed>
          <Category ID="10"><CategoryName>Rock</CategoryName><ParentCategory ID="1"/></Category>
          <Artist ID="707496">
            <ArtistCategory ID="10" />
            <ArtistImageURL>http://media.example.com/img/707496.jpg</ArtistImageURL>
            <ArtistName>Celia Games</ArtistName>
            <ArtistURL><![CDATA[http://tickets.example.com/Celia-Games-tickets/artist/707496]]></ArtistURL>
          </Artist>
          <Venue ID="4471">
            <VenueName>The Independent</VenueName><VenueStreet>628 Divisadero St</VenueStreet>
            <VenueCity>San Francisco</VenueCity><VenueState>CA</VenueState><VenueZip>94117</VenueZip>
            <VenueLatitude>37.7755</VenueLatitude><VenueLongitude>-122.4378</VenueLongitude>
            <VenueTimeZone>America/Los_Angeles</VenueTimeZone>
          </Venue>
          <Event ID="0B004F1A9C2E3D11">
            <EventPerformer ID="707496"/>
            <EventCategory ID="10"/>
            <EventVenue ID="4471"/>
            <EventDate>2026-11-22</EventDate>
            <EventTime>20:00</EventTime>
            <EventStatus>onsale</EventStatus>
            <OnSaleDate>2026-10-01T10:00</OnSaleDate>
            <PerformanceName>Celia Games — Winter Tour</PerformanceName>
            <EventURL><![CDATA[http://tickets.example.com/event/0B004F1A9C2E3D11]]></EventURL>
            <MinPrice>25.00</MinPrice><MaxPrice>80.5</MaxPrice><Currency>USD</Currency>
          </Event>
        </EventFeed>
        """

    func testTheSampleOfFeedsMd() throws {
        let (records, rejects) = try read(Self.sample)
        XCTAssertEqual(rejects, [])
        XCTAssertEqual(records.count, 4)
        XCTAssertEqual(records[0], .category(FeedCategory(id: "10", name: "Rock", parent: "1")))
        XCTAssertEqual(records[1], .artist(FeedArtist(id: "707496", name: "Celia Games", categories: ["10"],
                                                      imageURL: "http://media.example.com/img/707496.jpg",
                                                      url: "http://tickets.example.com/Celia-Games-tickets/artist/707496")))
        guard case .venue(let venue) = records[2], case .event(let event) = records[3] else { return XCTFail("\(records)") }
        XCTAssertEqual(venue.latitude, 37.7755)
        XCTAssertEqual(venue.longitude, -122.4378)
        XCTAssertEqual(venue.timeZone, "America/Los_Angeles")
        XCTAssertEqual(event.performers, ["707496"])
        XCTAssertEqual(event.venue, "4471")
        XCTAssertEqual(event.start, LocalDateTime(year: 2026, month: 11, day: 22, hour: 20, minute: 0))
        XCTAssertEqual(event.status, .onsale)
        XCTAssertEqual(event.onSale?.description, "2026-10-01T10:00")
        XCTAssertEqual(event.minPrice, 2500)
        XCTAssertEqual(event.maxPrice, 8050)
        XCTAssertEqual(event.name, "Celia Games — Winter Tour")
    }

    func testBadRecordsAreRefusedWithTheirLineAndReasonAndTheRestGoesOn() throws {
        func event(_ id: String, date: String = "2026-11-22", time: String = "20:00", status: String = "onsale",
                   price: String = "25.00", extra: String = "") -> String {
            let idAttribute = id == "-" ? "" : " ID=\"\(id)\""
            return "<Event\(idAttribute)><EventPerformer ID=\"1\"/><EventVenue ID=\"2\"/><EventDate>\(date)</EventDate>"
                + "<EventTime>\(time)</EventTime><EventStatus>\(status)</EventStatus><MinPrice>\(price)</MinPrice>\(extra)</Event>\n"
        }
        let xml = "<EventFeed>\n" + event("ok1") + event("-") + event("") + event("d", date: "2026-02-30") + event("d2", date: "11/22/2026")
            + event("t", time: "25:00") + event("t2", time: "8pm") + event("s", status: "available") + event("p", price: "twenty")
            + event("p2", price: "-5") + event("p3", price: "80.0.0")
            + "<Event ID=\"nv\"><EventPerformer ID=\"1\"/><EventDate>2026-11-22</EventDate><EventTime>20:00</EventTime><EventStatus>onsale</EventStatus></Event>\n"
            + "<Venue ID=\"v\"><VenueName>Nowhere</VenueName><VenueLatitude>95</VenueLatitude><VenueLongitude>0</VenueLongitude></Venue>\n"
            + "<Artist ID=\"a\"><ArtistCategory ID=\"1\"/></Artist>\n"
            + event("ok2", extra: "<Unknown ID=\"9\"><Deeper>skipped</Deeper></Unknown>")
            + "</EventFeed>"
        let (records, rejects) = try read(xml)
        XCTAssertEqual(records.compactMap { if case .event(let e) = $0 { e.id } else { nil } }, ["ok1", "ok2"])
        XCTAssertEqual(rejects.map(\.record), ["Event (no ID)", "Event (no ID)", "Event d", "Event d2", "Event t", "Event t2", "Event s",
                                               "Event p", "Event p2", "Event p3", "Event nv", "Venue v", "Artist a"])
        XCTAssertEqual(rejects.map(\.line), Array(3...15), "each at the line its record starts")
        let reasons = rejects.map(\.reason)
        XCTAssertEqual(reasons[0], "no ID")
        XCTAssertTrue(reasons[2].hasPrefix("EventDate 2026-02-30"), reasons[2])
        XCTAssertTrue(reasons[5].hasPrefix("EventTime 8pm"), reasons[5])
        XCTAssertTrue(reasons[6].hasPrefix("EventStatus available"), reasons[6])
        XCTAssertTrue(reasons[8].hasPrefix("MinPrice -5"), reasons[8])
        XCTAssertEqual(reasons[10], "no EventVenue")
        XCTAssertTrue(reasons[11].hasPrefix("VenueLatitude 95"), reasons[11])
        XCTAssertEqual(reasons[12], "no ArtistName")
    }

    /// Text inside nested markup (the seed's `<ArtistURL><i><![CDATA[…]]></i></ArtistURL>`) is the
    /// field's; unknown records and elements are skipped whole; a venue without coordinates is kept.
    func testNestedTextUnknownElementsAndUnlocatedVenues() throws {
        let xml = """
            <EventFeed><Promo ID="x"><Artist ID="inside-promo"><ArtistName>no</ArtistName></Artist></Promo>
            <Artist ID="1"><ArtistName> Sigur Rós </ArtistName><ArtistURL><i><![CDATA[http://t.example.com/a?x=1&y=2]]></i></ArtistURL>
            <ArtistDescription>long <b>text</b></ArtistDescription></Artist>
            <Venue ID="2"><VenueName>Somewhere</VenueName><VenueLatitude>52.1</VenueLatitude></Venue></EventFeed>
            """
        let (records, rejects) = try read(xml)
        XCTAssertEqual(rejects, [])
        XCTAssertEqual(records.count, 2, "the artist inside an unknown element is not a record")
        XCTAssertEqual(records[0], .artist(FeedArtist(id: "1", name: "Sigur Rós", categories: [], imageURL: nil, url: "http://t.example.com/a?x=1&y=2")))
        guard case .venue(let v) = records[1] else { return XCTFail() }
        XCTAssertNil(v.latitude, "one coordinate alone does not locate a venue")
        XCTAssertNil(v.longitude)
    }

    func testLocalTimes() {
        XCTAssertNil(LocalDateTime(date: "2025-02-29", time: "10:00"))
        XCTAssertNotNil(LocalDateTime(date: "2024-02-29", time: "10:00"))
        XCTAssertNil(LocalDateTime(date: "2026-11-22", time: "24:00"))
        XCTAssertLessThan(LocalDateTime(date: "2026-11-22", time: "23:59")!, LocalDateTime(date: "2026-11-23", time: "00:00")!)
    }
}
