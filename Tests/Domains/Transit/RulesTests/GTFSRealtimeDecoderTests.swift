import SwiftProtobuf
import Transit
import TransitFeeds
import XCTest

/// GTFS-Realtime messages decoded into alerts: stops, routes, trips, translations, periods, a
/// deleted entity; entities refused with a reason; bytes that are not a FeedMessage refused whole.
/// (An independent encoder, the operators' own Python bindings, comes with the feed's endpoint.)
final class GTFSRealtimeDecoderTests: XCTestCase {
    func message(_ entities: [TransitRealtime_FeedEntity], incrementality: TransitRealtime_FeedHeader.Incrementality = .fullDataset) throws -> [UInt8] {
        var m = TransitRealtime_FeedMessage()
        m.header.gtfsRealtimeVersion = "2.0"
        m.header.incrementality = incrementality
        m.header.timestamp = 1_764_000_000
        m.entity = entities
        return try m.serializedBytes()
    }

    func entity(_ id: String?, _ build: (inout TransitRealtime_Alert) -> Void) -> TransitRealtime_FeedEntity {
        var e = TransitRealtime_FeedEntity()
        if let id { e.id = id }
        var a = TransitRealtime_Alert()
        build(&a)
        e.alert = a
        return e
    }

    func translated(_ texts: [(String, String?)]) -> TransitRealtime_TranslatedString {
        var s = TransitRealtime_TranslatedString()
        s.translation = texts.map { text, language in
            var t = TransitRealtime_TranslatedString.Translation()
            t.text = text
            if let language { t.language = language }
            return t
        }
        return s
    }

    func testAlertsOfEveryKind() throws {
        let stop = entity("stop-lift") { a in
            var e = TransitRealtime_EntitySelector()
            e.stopID = "TAK"
            a.informedEntity = [e]
            a.headerText = translated([("Lift out of order", nil)])
            var p = TransitRealtime_TimeRange()
            p.start = 100
            p.end = 200
            a.activePeriod = [p]
        }
        let route = entity("t1-stopped") { a in
            var byRoute = TransitRealtime_EntitySelector(), byTrip = TransitRealtime_EntitySelector()
            byRoute.routeID = "T1"
            byTrip.trip.tripID = "T1-a"
            byTrip.trip.routeID = "T1"
            a.informedEntity = [byRoute, byTrip]
            a.headerText = translated([("Tramvay durdu", "tr"), ("Tram stopped", "en")])
            a.descriptionText = translated([("Kaza", "tr")])
            a.effect = .noService
        }
        var deleted = TransitRealtime_FeedEntity()
        deleted.id = "old"
        deleted.isDeleted = true
        let got = try GTFSRealtimeDecoder.decode(try message([stop, route, deleted], incrementality: .differential))
        XCTAssertFalse(got.isFullDataset)
        XCTAssertEqual(got.timestamp, 1_764_000_000)
        XCTAssertEqual(got.alerts, [
            TransitAlert(id: "stop-lift", activePeriods: [(start: 100, end: 200)], entities: [.init(stop: "TAK")], header: [.init("Lift out of order")]),
            TransitAlert(id: "t1-stopped", entities: [.init(route: "T1"), .init(trip: "T1-a", tripRoute: "T1")],
                         header: [.init("Tramvay durdu", language: "tr"), .init("Tram stopped", language: "en")],
                         description: [.init("Kaza", language: "tr")]),
            TransitAlert(id: "old", isDeleted: true),
        ])
        XCTAssertTrue(got.refused.isEmpty)
    }

    func testEntitiesWithoutAnIdOrAnAlertAreRefusedWithAReason() throws {
        var vehicleOnly = TransitRealtime_FeedEntity()
        vehicleOnly.id = "bus-7"
        // A vehicle position (field 4), which this subset does not know: kept as an unknown field.
        var unknown = try vehicleOnly.serializedBytes() as [UInt8]
        unknown += [0x22, 0x02, 0x08, 0x01]
        let vehicle = try TransitRealtime_FeedEntity(serializedBytes: unknown)
        let got = try GTFSRealtimeDecoder.decode(try message([entity(nil) { $0.headerText = translated([("x", nil)]) }, vehicle]))
        XCTAssertEqual(got.alerts, [])
        XCTAssertEqual(got.refused.map(\.entity), ["entity 1", "bus-7"])
        XCTAssertEqual(got.refused.map(\.reason), ["no id", "not an alert (trip updates and vehicle positions are not read)"])
    }

    func testBytesThatAreNotAFeedMessageAreRefusedWhole() throws {
        let whole = try message([entity("a") { $0.headerText = translated([("x", nil)]) }])
        for bad in [Array(whole.prefix(whole.count - 3)), Array("<html>not protobuf</html>".utf8), [0xFF, 0xFF, 0xFF]] {
            XCTAssertThrowsError(try GTFSRealtimeDecoder.decode(bad), "\(bad.prefix(8))") { error in
                XCTAssertTrue((error as? GTFSRealtimeDecoder.Failure)?.reason.hasPrefix("not a GTFS-Realtime FeedMessage") ?? false, "\(error)")
            }
        }
        XCTAssertThrowsError(try GTFSRealtimeDecoder.decode([])) { error in
            XCTAssertEqual((error as? GTFSRealtimeDecoder.Failure)?.reason, "the FeedMessage has no header")
        }
    }
}
