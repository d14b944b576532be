import Foundation
import HubbubTestSupport
import Realtime
import SwiftProtobuf
import TransitFeeds
import XCTest

/// Transit alerts end to end: a GTFS zip and a GTFS-Realtime message posted by an operator, pushed
/// over `/ws` to travellers whose corridor passes an informed stop, each in the language set with
/// `profile.update {language}`; lists and recovery in that language too.
final class TransitUseCaseTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func point(_ lat: Double, _ lon: Double) -> JSON { ["lat": .double(lat), "lon": .double(lon)] }

    private func delay(_ texts: [(String, String)]) throws -> [UInt8] {
        var m = TransitRealtime_FeedMessage()
        m.header.gtfsRealtimeVersion = "2.0"
        var e = TransitRealtime_FeedEntity()
        e.id = "tram5"
        var selector = TransitRealtime_EntitySelector()
        selector.routeID = "r1"
        e.alert.informedEntity = [selector]
        e.alert.headerText.translation = texts.map { text, language in
            var t = TransitRealtime_TranslatedString.Translation()
            t.text = text
            t.language = language
            return t
        }
        m.entity = [e]
        return try m.serializedBytes()
    }

    func testEachReaderGetsTheAlertInTheLanguageTheySet() async throws {
        XCTAssertEqual(try server.api("POST", "/api/feeds/gtfs?feed=city", body: try makeZip(TransitFixture.smallCity())).status, 200)
        let (finn, _) = try await server.user("finn")
        let (anna, _) = try await server.user("anna")
        let bad = try await finn.errorCode("profile.update", ["language": "Finnish please"])
        XCTAssertEqual(bad, "bad_request")
        let profile = try await finn.ok("profile.update", ["language": "fi-FI"])
        XCTAssertEqual(profile["profile"]?["language"]?.string, "fi-FI")
        // Both pass stop s2 of tram route r1.
        let route: JSON = ["from": point(52.355, 4.82), "to": point(52.365, 4.82), "widthMeters": 200]
        let room = try await finn.ok("route.subscribe", route)
        _ = try await anna.ok("route.subscribe", route)
        let (status, answer) = try server.api("POST", "/api/feeds/gtfs-rt?feed=city",
                                              body: try delay([("Tram 5 delayed", "en"), ("Raitiovaunu 5 myöhässä", "fi")]))
        XCTAssertEqual(status, 200, answer?.encoded ?? "")
        let toFinn = try await finn.waitForPushes(1)
        let toAnna = try await anna.waitForPushes(1)
        XCTAssertEqual(toFinn.first?["data"]?["item"]?["body"]?.string, "Raitiovaunu 5 myöhässä")
        XCTAssertEqual(toAnna.first?["data"]?["item"]?["body"]?.string, "Tram 5 delayed")
        XCTAssertEqual(toFinn.first?["seq"], toAnna.first?["seq"], "one push, two versions")
        // Lists and recovery are in the reader's language too.
        let list = try await finn.ok("route.subscribe", route)
        XCTAssertEqual(list["items"]?.items.first?["body"]?.string, "Raitiovaunu 5 myöhässä")
        let recovered = try await finn.ok("subscribe", ["room": room["room"]!, "since": ["seq": 0, "epoch": room["epoch"]!]])
        XCTAssertEqual(recovered["recovered"], .bool(true))
        let replayed = try await finn.waitForPushes(2)
        XCTAssertEqual(replayed.last?["data"]?["item"]?["body"]?.string, "Raitiovaunu 5 myöhässä")
        // Back to no language: the original.
        _ = try await finn.ok("profile.update", ["language": .null])
        let plain = try await finn.ok("route.subscribe", route)
        XCTAssertEqual(plain["items"]?.items.first?["body"]?.string, "Tram 5 delayed")
    }
}
