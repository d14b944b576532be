import Realtime
import RoomLog
import RouteService
import Routes
import XCTest

/// A shard's log entry is written as JSON and read back on every node that follows the shard:
/// what a node reads must be what the owner wrote, or its corridors push something else.
final class IntelEntryTests: XCTestCase {
    private func item(_ id: String, by author: IntelItem.Author = .user("u1"), points: [GeoPoint] = [GeoPoint(41.0205, 28.9735)]) -> IntelItem {
        var item = IntelItem(id: id, points: points, kind: .disruption, author: author, tags: ["köprü", "trafik"], modes: [.car, .transit],
                             body: "Bridge \"closed\" \\ to cars", at: 1_700_000_000.25, expiresAt: 1_700_043_200.5)
        item.comments = 3
        try? item.like(by: "u2", now: 1_700_000_001, ttl: 43_200)
        try? item.like(by: "u3", now: 1_700_000_002, ttl: 43_200)
        try? item.link(to: "i-other")
        return item
    }

    /// What a node's copy holds of an item: everything clients see (likes as a count).
    private func assertShownAlike(_ a: IntelItem, _ b: IntelItem, file: StaticString = #filePath, line: UInt = #line) {
        func shown(_ i: IntelItem) -> String { IntelEntry(.added(i), aliases: ["u1": "Ayşe"]).json.encoded }
        XCTAssertEqual(shown(a), shown(b), file: file, line: line)
        XCTAssertEqual(a.points, b.points, file: file, line: line)
        XCTAssertEqual(a.translations, b.translations, file: file, line: line)
    }

    func testEveryChangeReadsBackAsWritten() throws {
        var alert = item("n1", by: .provider(source: "gvb"), points: [GeoPoint(52.379, 4.899), GeoPoint(52.390, 4.910), GeoPoint(52.37, 4.89)])
        alert.translations = ["fi": "Raitiovaunu 5 myöhässä", "en-GB": "Tram 5 delayed"]
        let changes: [IntelEntry.Change] = [
            .added(item("i1")), .updated(item("i1")), .removed(item("i2")), .added(alert),
            .revised(alert, before: [GeoPoint(52.0, 4.0)]),
            .linked(item("i1"), to: item("i2", by: .user("u9")), side: .both),
            .linked(item("i1"), to: alert, side: .item), .linked(item("i1"), to: alert, side: .to),
        ]
        for change in changes {
            let written = IntelEntry(change, aliases: ["u1": "Ayşe", "u9": "Bob"])
            let text = written.json.encoded
            let read = try XCTUnwrap(IntelEntry(json: try JSONParser.parse(Array(text.utf8))), text)
            XCTAssertEqual(read.items.count, written.items.count)
            for (a, b) in zip(read.items, written.items) {
                assertShownAlike(a, b)
                XCTAssertEqual(a.likes, 2)
                XCTAssertTrue(a.likedBy.isEmpty, "a copy knows how many liked it, not who")
            }
            XCTAssertEqual(read.json.encoded, text, "written again, the same text")
            switch (read.change, change) {
            case (.revised(_, let x), .revised(_, let y)): XCTAssertEqual(x, y)
            case (.linked(_, _, let x), .linked(_, _, let y)): XCTAssertEqual(x, y)
            case (.added, .added), (.updated, .updated), (.removed, .removed): break
            default: XCTFail("\(read.change) is not \(change)")
            }
        }
    }

    func testADeletedPostersItemReadsBackAsADeletedUsers() throws {
        let written = IntelEntry(.added(item("i1", by: .user("gone"))), aliases: [:])
        let read = try XCTUnwrap(IntelEntry(json: try JSONParser.parse(Array(written.json.encoded.utf8))))
        XCTAssertEqual(IntelEntry(.added(read.items[0]), aliases: [:]).json.encoded, written.json.encoded)
        XCTAssertEqual(read.items[0].origin, .traveler)
    }

    func testWhatIsNotAnEntryIsRefused() throws {
        for text in [#"{}"#, #"{"change":"added"}"#, #"{"change":"exploded","item":{}}"#,
                     #"{"change":"revised","item":{"id":"x"}}"#, #"{"change":"added","item":{"id":"x","kind":"disruption"}}"#] {
            XCTAssertNil(IntelEntry(json: try JSONParser.parse(Array(text.utf8))), text)
        }
        let push = LoggedPush(room: "intel:c1", epoch: "e", seq: 1, at: 0, message: .init(text: #"{"type":"push","event":"venue.changed","data":{}}"#))
        XCTAssertNil(IntelEntry(push: push), "another event is not an entry")
    }
}
