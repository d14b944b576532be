import Foundation
import HubbubTestSupport
import Realtime
import RouteService
import XCTest

/// `POST /api/intel` (feeds.md): a provider's items, validated like `intel.post`, rejected one by
/// one with a reason, the rest added durably and pushed to the corridors containing them.
final class ProviderIntelTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws {
        server = try TestServer { $0.domainSettings[RoutesDomain.maxProviderItems] = 5 }
    }
    override func tearDown() async throws { server.stop() }

    private func point(_ lat: Double, _ lon: Double) -> JSON { ["lat": .double(lat), "lon": .double(lon)] }
    private var bridgeRoute: JSON { ["from": point(41.0170, 28.9700), "to": point(41.0245, 28.9770), "widthMeters": 300] }

    private func body(_ items: [JSON]) -> [UInt8] { Array(JSON.object([("items", .array(items))]).encoded.utf8) }

    private static func iso(_ t: Double) -> String {
        let f = ISO8601DateFormatter()
        return f.string(from: Date(timeIntervalSince1970: t.rounded(.down)))
    }

    func testGoodItemsArePushedAndBadOnesRejectedWithTheirReason() async throws {
        let (bob, _) = try await server.user("bob")
        let room = try await bob.ok("route.subscribe", bridgeRoute)["room"]
        let at = Date().timeIntervalSince1970 - 120
        let items: [JSON] = [
            ["lat": 41.0205, "lon": 28.9735, "kind": "disruption", "body": "Tram T1: 5 minutes delay #tram", "modes": ["transit"],
             "at": .string(Self.iso(at)), "source": "iett"],
            ["lat": 41.0205, "lon": 28.9735, "kind": "rumour", "body": "x", "source": "iett"],
            ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "no source"],
            ["lat": 41.0850, "lon": 29.0350, "kind": "poi", "body": "Ferry pier open", "source": "şehir hatları"],
            ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "when?", "at": "yesterday-ish", "source": "iett"],
        ]
        let (status, reply) = try server.api("POST", "/api/intel", body: body(items))
        XCTAssertEqual(status, 200, reply?.encoded ?? "")
        XCTAssertEqual(reply?["added"]?.int, 2)
        XCTAssertEqual(reply?["rejected"]?.int, 3)
        let rejects = reply?["rejects"]?.items ?? []
        XCTAssertEqual(rejects.map { $0["record"]?.string }, ["items[1]", "items[2]", "items[4]"])
        for (reject, field) in zip(rejects, ["kind", "source", "at"]) {
            XCTAssertTrue(reject["reason"]?.string?.contains("field \(field)") ?? false, "\(reject.encoded) should name \(field)")
        }
        XCTAssertNotNil(reply?["ms"]?.int)

        // Only the item on the bridge reaches bob, as a provider's, at the time it was given.
        let pushes = try await bob.waitForPushes(1)
        let item = pushes.first?["data"]?["item"]
        XCTAssertEqual(pushes.first?["room"], room)
        XCTAssertEqual(item?["origin"]?.string, "provider")
        XCTAssertEqual(item?["by"], ["source": "iett"])
        XCTAssertEqual(item?["at"]?.double, at.rounded(.down))
        XCTAssertEqual(item?["tags"], ["tram"])
        let id = try XCTUnwrap(item?["id"]?.string)
        XCTAssertEqual(reply?["ids"]?.items.first?.string, id)
        let got = try await bob.ok("intel.get", ["item": .string(id)])
        XCTAssertEqual(got["item"]?["body"]?.string, "Tram T1: 5 minutes delay #tram")
        // A provider's item may be liked (it has no poster to earn karma).
        let (carol, _) = try await server.user("carol")
        let liked = try await carol.ok("intel.like", ["item": .string(id)])
        XCTAssertEqual(liked["item"]?["likes"]?.int, 1)
    }

    func testAChunkedBodyIsReadAsItArrives() async throws {
        let items = (0..<5).map { i -> JSON in
            ["lat": 41.0205, "lon": .double(28.9735 + Double(i) * 1e-4), "kind": "poi", "body": .string("stall \(i) " + String(repeating: "é", count: 300)),
             "source": "market"]
        }
        let (status, reply) = try server.api("POST", "/api/intel", body: body(items), chunked: true)
        XCTAssertEqual(status, 200, reply?.encoded ?? "")
        XCTAssertEqual(reply?["added"]?.int, 5)
        let (c, _) = try await server.user("dora")
        let found = try await c.ok("intel.query", ["minLat": 41.0, "minLon": 28.9, "maxLat": 41.1, "maxLon": 29.1])
        XCTAssertEqual(found["items"]?.items.count, 5)
    }

    func testBadBodiesAreRefusedAndNothingIsAdded() async throws {
        let one: JSON = ["lat": 41.0205, "lon": 28.9735, "kind": "poi", "body": "x", "source": "s"]
        let notJSON = try server.api("POST", "/api/intel", body: Array("{\"items\": [".utf8))
        XCTAssertEqual(notJSON.status, 400)
        XCTAssertNotNil(notJSON.json?["offset"]?.int, "a body that is not JSON is answered with the position")
        let noItems = try server.api("POST", "/api/intel", body: Array("{\"item\": []}".utf8))
        XCTAssertEqual(noItems.status, 400)
        XCTAssertTrue(noItems.json?["error"]?.string?.contains("items") ?? false)
        let tooMany = try server.api("POST", "/api/intel", body: body(Array(repeating: one, count: 6)))
        XCTAssertEqual(tooMany.status, 413, "routes.maxProviderItems is 5 here")
        let notItem = try server.api("POST", "/api/intel", body: body([1, "two"]))
        XCTAssertEqual(notItem.json?["rejected"]?.int, 2)
        XCTAssertEqual(try server.api("POST", "/api/intel", body: body([one]), key: nil).status, 401)
        XCTAssertEqual(try server.api("POST", "/api/intel", body: body([one]), key: "wrong").status, 401)
        XCTAssertEqual(try server.api("GET", "/api/intel").status, 405)
        let (c, _) = try await server.user("eve")
        let found = try await c.ok("intel.query", ["minLat": 41.0, "minLon": 28.9, "maxLat": 41.1, "maxLon": 29.1])
        XCTAssertEqual(found["items"]?.items.count, 0, "nothing refused was added")
    }

    func testABodyOverTheLimitIs413() async throws {
        let small = try TestServer { $0.domainSettings[RoutesDomain.maxProviderBodyBytes] = 2048 }
        defer { small.stop() }
        let big = Array(JSON.object([("items", .array([["body": .string(String(repeating: "x", count: 4000))]]))]).encoded.utf8)
        XCTAssertEqual(try small.api("POST", "/api/intel", body: big).status, 413)
        XCTAssertEqual(try small.api("POST", "/api/intel", body: big, chunked: true).status, 413, "also when no length is announced")
    }
}
