import DomainSeam
import HubbubTestSupport
import Foundation
import Realtime
import SwiftProtobuf
import TransitFeeds
import XCTest

/// GTFS feeds posted as zips (kept, replaced whole, refused whole when hostile) and GTFS-Realtime
/// alerts placed at their stops and pushed to the corridors that pass them, in each reader's language.
final class TransitIngestTests: XCTestCase {
    func message(_ entities: [TransitRealtime_FeedEntity], full: Bool = true) throws -> [UInt8] {
        var m = TransitRealtime_FeedMessage()
        m.header.gtfsRealtimeVersion = "2.0"
        m.header.incrementality = full ? .fullDataset : .differential
        m.entity = entities
        return try m.serializedBytes()
    }

    func alert(_ id: String, stop: String? = nil, route: String? = nil, header: [(String, String?)], end: UInt64? = nil) -> TransitRealtime_FeedEntity {
        var e = TransitRealtime_FeedEntity()
        e.id = id
        var selector = TransitRealtime_EntitySelector()
        if let stop { selector.stopID = stop }
        if let route { selector.routeID = route }
        if stop == nil && route == nil { selector.agencyID = "A" }
        e.alert.informedEntity = [selector]
        e.alert.headerText.translation = header.map { text, language in
            var t = TransitRealtime_TranslatedString.Translation()
            t.text = text
            if let language { t.language = language }
            return t
        }
        if let end {
            var period = TransitRealtime_TimeRange()
            period.end = end
            e.alert.activePeriod = [period]
        }
        return e
    }

    func testAFeedIsReadWithItsRejectsAndKeptAcrossARestart() async throws {
        let h = try DomainHarness.routesAndTransit()
        let zip = try makeZip(TransitFixture.smallCity(extraStops: "bad,Nowhere,91,4.9\nshort,Short\n", stopTimes: "t9,08:00:00,08:00:00,s1,1\n"))
        let (status, answer) = try await h.post("/api/feeds/gtfs?feed=city", zip)
        XCTAssertEqual(status, 200, answer.encoded)
        XCTAssertEqual(answer["stops"], .int(12))
        XCTAssertEqual(answer["routes"], .int(2))
        XCTAssertEqual(answer["trips"], .int(2))
        XCTAssertEqual(answer["rejected"], .int(3))
        let reasons = answer["rejects"]?.arrayValue?.map { "\($0["record"]!.stringValue!):\($0["line"]!.intValue!) \($0["reason"]!.stringValue!)" } ?? []
        XCTAssertTrue(reasons.contains { $0.hasPrefix("stops.txt:14") && $0.contains("latitude") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("stops.txt:15") && $0.contains("fields") }, "\(reasons)")
        XCTAssertTrue(reasons.contains { $0.hasPrefix("stop_times.txt:") && $0.contains("t9") }, "\(reasons)")
        let again = try h.restarted()
        XCTAssertEqual(again.transit.networks.network("city")?.stopsOfRoute["r1"]?.count, 6, "the feed in force after a restart")
        XCTAssertEqual(again.transit.networks.network("city")?.route(ofTrip: "t2"), "r2")
    }

    func testUploadsOfOneFeedAtOnceLeaveOneWholeVersionInForce() async throws {
        let h = try DomainHarness.routesAndTransit()
        let a = try makeZip(TransitFixture.smallCity())
        let b = try makeZip(TransitFixture.smallCity(extraStops: "s99,Extra,52.37,4.85\n"))
        async let first = h.post("/api/feeds/gtfs?feed=city", a)
        async let second = h.post("/api/feeds/gtfs?feed=city", b)
        let (x, y) = try await (first, second)
        XCTAssertEqual([x.0, y.0], [200, 200])
        let inForce = try XCTUnwrap(h.transit.networks.network("city"))
        let again = try h.restarted()
        XCTAssertEqual(again.transit.networks.network("city"), inForce, "a restart finds the version in force, whole")
        let rows = try await h.store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM transit_stop") ?? 0 }
        XCTAssertEqual(rows, inForce.stops.count, "the other version's rows are gone")
    }

    func testRowsOfAnUploadCutShortAreDeletedAndTheFeedInForceIsNot() async throws {
        let h = try DomainHarness.routesAndTransit()
        _ = try await h.post("/api/feeds/gtfs?feed=city", try makeZip(TransitFixture.smallCity()))
        // What a crash in the middle of an upload leaves: rows of a version never put in force.
        try await h.store.write { db in
            for i in 0..<3 { try db.execute(sql: "INSERT INTO transit_stop (feed, version, id, name, lat, lon) VALUES ('city', 42, ?, 'x', 1, 1)", arguments: ["o\(i)"]) }
        }
        func count(_ sql: String) async throws -> Int { try await h.store.read { db in try Int.fetchOne(db, sql: sql) ?? -1 } }
        let sweeper = Task { try await h.transit.services[0].run() }
        defer { sweeper.cancel() }
        try await eventually(every: .milliseconds(10)) { try await count("SELECT COUNT(*) FROM transit_stop WHERE version = 42") <= 0 }
        let orphans = try await count("SELECT COUNT(*) FROM transit_stop WHERE version = 42")
        let inForce = try await count("SELECT COUNT(*) FROM transit_stop WHERE feed = 'city'")
        XCTAssertEqual(orphans, 0)
        XCTAssertEqual(inForce, 12, "the version in force keeps its stops")
    }

    func testHostileOrBrokenZipsAreRefusedWholeAndTheFeedInForceStays() async throws {
        let h = try DomainHarness.routesAndTransit(settings: ["routes.gtfsMaxUncompressedBytes": .int(200_000)])
        var (status, _) = try await h.post("/api/feeds/gtfs?feed=city", try makeZip(TransitFixture.smallCity()))
        XCTAssertEqual(status, 200)
        let before = h.transit.networks.network("city")
        let zeros = String(repeating: "0", count: 300_000)
        let cases: [(String, [UInt8], String)] = [
            ("not a zip", Array("stop_id\ns1\n".utf8), "not a zip"),
            ("traversal", try makeZip(TransitFixture.smallCity() + [("../evil.txt", "x")]), "leave"),
            ("absolute", try makeZip(TransitFixture.smallCity() + [("/etc/evil.txt", "x")]), "leave"),
            ("bomb", try makeZip(TransitFixture.smallCity().map { $0.0 == "stop_times.txt" ? ($0.0, $0.1 + zeros) : $0 }), "routes.gtfsMaxUncompressedBytes"),
            ("missing", try makeZip(TransitFixture.smallCity().filter { $0.0 != "trips.txt" }), "no trips.txt"),
            ("damaged", damaged(try makeZip(TransitFixture.smallCity(stopTimes: String(repeating: "t1,08:00:00,08:00:00,s1,1\n", count: 2_000))),
                                at: "stop_times.txt"), "stop_times.txt"),
        ]
        for (name, body, expected) in cases {
            let answer: JSON
            (status, answer) = try await h.post("/api/feeds/gtfs?feed=city", body)
            XCTAssertEqual(status, 400, name)
            XCTAssertTrue(answer["error"]?.stringValue?.contains(expected) == true, "\(name): \(answer.encoded)")
            XCTAssertEqual(h.transit.networks.network("city"), before, "\(name): the feed in force is unchanged")
        }
        (status, _) = try await h.post("/api/feeds/gtfs?feed=a/b", try makeZip(TransitFixture.smallCity()))
        XCTAssertEqual(status, 400, "a feed name with a slash")
    }

    /// `zip` with one byte in the middle of `entry`'s compressed data flipped (its checksum no longer matches).
    func damaged(_ zip: [UInt8], at entry: String) -> [UInt8] {
        var out = zip
        let name = Array(entry.utf8)
        for i in 0..<(zip.count - 30) where zip[i..<i + 4].elementsEqual([0x50, 0x4b, 0x03, 0x04]) {
            let nameLength = Int(zip[i + 26]) | Int(zip[i + 27]) << 8, extra = Int(zip[i + 28]) | Int(zip[i + 29]) << 8
            let size = Int(zip[i + 18]) | Int(zip[i + 19]) << 8 | Int(zip[i + 20]) << 16
            guard zip[(i + 30)..<(i + 30 + nameLength)].elementsEqual(name) else { continue }
            out[i + 30 + nameLength + extra + size / 2] ^= 0x10
            return out
        }
        XCTFail("no entry \(entry)")
        return out
    }

    func testALyingZipThatInflatesBeyondWhatItDeclaresIsRefused() async throws {
        let h = try DomainHarness.routesAndTransit(settings: ["routes.gtfsMaxUncompressedBytes": .int(100_000)])
        var zip = try makeZip(TransitFixture.smallCity().map { $0.0 == "stop_times.txt" ? ($0.0, $0.1 + String(repeating: "0", count: 150_000)) : $0 })
        // Rewrite every declared uncompressed size (local and central headers) to 1,000 bytes.
        for i in 0..<(zip.count - 4) {
            let signature = UInt32(zip[i]) | UInt32(zip[i + 1]) << 8 | UInt32(zip[i + 2]) << 16 | UInt32(zip[i + 3]) << 24
            let offset = signature == 0x0403_4b50 ? 22 : signature == 0x0201_4b50 ? 24 : nil
            guard let offset, i + offset + 4 <= zip.count else { continue }
            zip.replaceSubrange(i + offset..<i + offset + 4, with: [0xE8, 0x03, 0, 0])
        }
        let (status, answer) = try await h.post("/api/feeds/gtfs?feed=city", zip)
        XCTAssertEqual(status, 400, answer.encoded)
        XCTAssertNil(h.transit.networks.network("city"))
    }

    func testAlertsReachTheCorridorsPassingTheirStopsInEachReadersLanguageThenUpdateAndEnd() async throws {
        let h = try DomainHarness.routesAndTransit()
        _ = try await h.post("/api/feeds/gtfs?feed=city", try makeZip(TransitFixture.smallCity()))
        // A traveller passing stop s2 only (on r1), one passing s8 only (on r2), one passing s11 (no route).
        let finn = h.connection(language: "fi-FI"), plain = h.connection(), bus = h.connection(), nobody = h.connection()
        for m in [finn, plain] { _ = try await h.subscribe(m, from: (52.355, 4.82), to: (52.365, 4.82)) }
        _ = try await h.subscribe(bus, from: (52.355, 4.88), to: (52.365, 4.88))
        _ = try await h.subscribe(nobody, from: (52.355, 4.91), to: (52.365, 4.91))
        let tram = alert("tram5", route: "r1", header: [("Tram 5 delayed", "en"), ("Raitiovaunu 5 myöhässä", "fi"), ("Tramvay 5 gecikmeli", "tr")])
        let stop = alert("s8", stop: "s8", header: [("Stop 8 closed", nil)])
        let lost = alert("agency-wide", header: [("Strike", nil)])
        var (status, answer) = try await h.post("/api/feeds/gtfs-rt?feed=city", try message([tram, stop, lost]))
        XCTAssertEqual(status, 200, answer.encoded)
        XCTAssertEqual(answer["added"], .int(2))
        XCTAssertEqual(answer["rejected"], .int(1))
        XCTAssertEqual(answer["rejects"]?.arrayValue?.first?["record"], .string("alert agency-wide"))

        let finnish = try await h.pushes(finn, count: 1)
        let english = try await h.pushes(plain, count: 1)
        XCTAssertEqual(finnish.first?["event"], .string("intel.added"))
        XCTAssertEqual(finnish.first?["data"]?["item"]?["body"], .string("Raitiovaunu 5 myöhässä"))
        XCTAssertEqual(english.first?["data"]?["item"]?["body"], .string("Tram 5 delayed"))
        let item = try XCTUnwrap(english.first?["data"]?["item"])
        XCTAssertEqual(item["points"]?.arrayValue?.count, 6, "at each of route r1's stops")
        XCTAssertEqual(item["translations"]?["tr"], .string("Tramvay 5 gecikmeli"))
        XCTAssertEqual(item["modes"], ["transit"])
        XCTAssertEqual(item["tags"], ["tram"])
        XCTAssertEqual(item["by"]?["source"], .string("city"))
        XCTAssertEqual(item["origin"], .string("provider"))
        let busPushes = try await h.pushes(bus, count: 1)
        XCTAssertEqual(busPushes.map { $0["data"]?["item"]?["body"] }, [.string("Stop 8 closed")], "only the alert of its stop")
        XCTAssertEqual(h.sink.pushes(nobody).count, 0, "no stop on its corridor: nothing")

        // Updated: a new text; then a full dataset without the stop alert ends it.
        let changed = alert("tram5", route: "r1", header: [("Tram 5 diverted", "en"), ("Raitiovaunu 5 ohjattu", "fi")])
        (status, answer) = try await h.post("/api/feeds/gtfs-rt?feed=city", try message([changed]))
        XCTAssertEqual(answer["changed"], .int(1), answer.encoded)
        XCTAssertEqual(answer["ended"], .int(1))
        let updated = try await h.pushes(finn, count: 2)
        XCTAssertEqual(updated.last?["event"], .string("intel.updated"))
        XCTAssertEqual(updated.last?["data"]?["item"]?["body"], .string("Raitiovaunu 5 ohjattu"))
        let ended = try await h.pushes(bus, count: 2)
        XCTAssertEqual(ended.last?["event"], .string("intel.expired"))

        // A differential message deleting the tram alert.
        var deletion = TransitRealtime_FeedEntity()
        deletion.id = "tram5"
        deletion.isDeleted = true
        (status, answer) = try await h.post("/api/feeds/gtfs-rt?feed=city", try message([deletion], full: false))
        XCTAssertEqual(answer["ended"], .int(1), answer.encoded)
        let gone = try await h.pushes(plain, count: 3)
        XCTAssertEqual(gone.last?["event"], .string("intel.expired"))
        XCTAssertEqual(gone.last?["data"]?["item"], item["id"])
    }

    func testBadMessagesChangeNothing() async throws {
        let h = try DomainHarness.routesAndTransit()
        var (status, answer) = try await h.post("/api/feeds/gtfs-rt?feed=city", try message([]))
        XCTAssertEqual(status, 409, "no GTFS feed of that name: \(answer.encoded)")
        _ = try await h.post("/api/feeds/gtfs?feed=city", try makeZip(TransitFixture.smallCity()))
        let good = try message([alert("x", stop: "s1", header: [("x", nil)])])
        for (name, body) in [("truncated", Array(good.dropLast(3))), ("random", (0..<200).map { UInt8(($0 * 37 + 11) & 0xFF) })] {
            (status, answer) = try await h.post("/api/feeds/gtfs-rt?feed=city", body)
            XCTAssertEqual(status, 400, "\(name): \(answer.encoded)")
        }
        let live = await h.routes.hub.liveCount
        XCTAssertEqual(live, 0)
    }
}

extension JSON {
    var arrayValue: [JSON]? { if case .array(let a) = self { a } else { nil } }
    var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    var intValue: Int? { if case .int(let n) = self { n } else { nil } }
}
