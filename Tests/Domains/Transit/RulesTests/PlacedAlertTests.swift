import Transit
import XCTest

/// An alert placed on the network: a stop's point, a route's stops, a trip's route; the text in
/// the agency's language, else the untagged one, else the first, with every translation; expiry
/// from the active periods; an alert nothing locates is refused with a reason.
final class PlacedAlertTests: XCTestCase {
    var network: TransitNetwork {
        var n = TransitNetwork()
        n.agencies = [TransitAgency(id: "IETT", name: "İETT", timeZone: "Europe/Istanbul", language: "tr")]
        for (id, lat, lon) in [("EMI", 41.017, 28.970), ("KAR-1", 41.0223, 28.9771), ("TAK", 41.0369, 28.985)] {
            n.stops[id] = TransitStop(id: id, name: id, lat: lat, lon: lon, parent: nil)
        }
        n.routes["T1"] = TransitRoute(id: "T1", shortName: "T1", longName: nil, type: 0, agency: "IETT")
        n.stopsOfRoute["T1"] = ["EMI", "KAR-1"]
        n.setRoute("T1", ofTrip: "T1-a")
        return n
    }

    let turkish = [TransitAlert.Translation("Tramvay durdu", language: "tr"), TransitAlert.Translation("Tram stopped", language: "en"),
                   TransitAlert.Translation("Raitiovaunu pysähtyi", language: "fi")]

    func testAStopAlert() throws {
        let placed = try PlacedAlert.place(TransitAlert(id: "a1", entities: [.init(stop: "TAK")], header: [.init("Lift out of order")]), in: network).get()
        XCTAssertEqual(placed.points, [.init(lat: 41.0369, lon: 28.985)])
        XCTAssertEqual(placed.body, "Lift out of order")
        XCTAssertEqual(placed.translations, [:])
        XCTAssertNil(placed.expiresAt)
    }

    func testARouteAlertInformsEveryStopOfTheRouteOnce() throws {
        let placed = try PlacedAlert.place(TransitAlert(id: "a2", entities: [.init(route: "T1"), .init(stop: "EMI"), .init(tripRoute: "T1")],
                                                        header: [.init("Tram stopped")]), in: network).get()
        XCTAssertEqual(placed.points, [.init(lat: 41.017, lon: 28.970), .init(lat: 41.0223, lon: 28.9771)])
    }

    func testAStopWithItsRouteInOneSelectorIsThatStopAlone() throws {
        let placed = try PlacedAlert.place(TransitAlert(id: "a9", entities: [.init(route: "T1", stop: "KAR-1")], header: [.init("Platform closed")]),
                                           in: network).get()
        XCTAssertEqual(placed.points, [.init(lat: 41.0223, lon: 28.9771)], "the fields of one selector narrow it")
        XCTAssertEqual(placed.routeTypes, [0], "its route still says the mode")
    }

    func testATripAloneInformsTheStopsOfTheRouteItRunsOn() throws {
        let placed = try PlacedAlert.place(TransitAlert(id: "a7", entities: [.init(trip: "T1-a")], header: [.init("Delayed")]), in: network).get()
        XCTAssertEqual(placed.points.count, 2)
        XCTAssertEqual(PlacedAlert.place(TransitAlert(id: "a8", entities: [.init(trip: "unknown")], header: [.init("x")]), in: network),
                       .failure(PlacementError(alert: "a8", reason: "no informed entity is a stop, route or trip of the feed's network")))
    }

    func testTheAgencysLanguageFirstThenTheUntaggedThenTheFirst() throws {
        let placed = try PlacedAlert.place(TransitAlert(id: "a3", entities: [.init(route: "T1")], header: [turkish[1], turkish[0], turkish[2]]),
                                           in: network).get()
        XCTAssertEqual(placed.body, "Tramvay durdu", "the agency's language (tr)")
        XCTAssertEqual(placed.translations, ["tr": "Tramvay durdu", "en": "Tram stopped", "fi": "Raitiovaunu pysähtyi"])
        var other = network
        other.agencies[0].language = "it"
        XCTAssertEqual(try PlacedAlert.place(TransitAlert(id: "a3", entities: [.init(route: "T1")], header: [turkish[1], .init("Untagged"), turkish[0]]),
                                             in: other).get().body, "Untagged")
        XCTAssertEqual(try PlacedAlert.place(TransitAlert(id: "a3", entities: [.init(route: "T1")], header: [turkish[2], turkish[1]]), in: other).get().body,
                       "Raitiovaunu pysähtyi")
        XCTAssertEqual(try PlacedAlert.place(TransitAlert(id: "a3", entities: [.init(route: "T1")], description: [.init("Only a description")]),
                                             in: other).get().body, "Only a description")
    }

    func testExpiryFromTheActivePeriods() throws {
        func expiry(_ periods: [(start: UInt64?, end: UInt64?)]) throws -> Double? {
            try PlacedAlert.place(TransitAlert(id: "a4", activePeriods: periods, entities: [.init(stop: "EMI")], header: [.init("x")]), in: network).get().expiresAt
        }
        XCTAssertEqual(try expiry([(start: 100, end: 200), (start: 300, end: 400)]), 400)
        XCTAssertNil(try expiry([(start: 100, end: 200), (start: 300, end: nil)]), "an open end: the usual lifetime")
        XCTAssertNil(try expiry([]))
    }

    func testAnAlertNothingLocatesIsRefusedWithAReason() {
        for entities in [[TransitAlert.Entity(agency: "IETT")], [.init(routeType: 3)], [.init(stop: "GHOST"), .init(route: "NOPE")], []] {
            XCTAssertEqual(PlacedAlert.place(TransitAlert(id: "a5", entities: entities, header: [.init("x")]), in: network),
                           .failure(PlacementError(alert: "a5", reason: "no informed entity is a stop, route or trip of the feed's network")), "\(entities)")
        }
        XCTAssertEqual(PlacedAlert.place(TransitAlert(id: "a6", entities: [.init(stop: "EMI")]), in: network),
                       .failure(PlacementError(alert: "a6", reason: "no header_text or description_text")))
    }
}
