import Foundation
import HubbubTestSupport
import RoomLog
import RouteService
import Routes
import Storage
import XCTest

/// Items a provider names (transit alerts): added, revised, left alone, ended by a deletion or by a
/// full dataset that leaves them out, and what survives a restart.
final class NamedItemsTests: XCTestCase {
    /// A store in a temporary directory, closed and removed when the test ends.
    private func store() throws -> Store {
        try temporaryStore("hubbub-named", migrations: .of(RoomLogSchema.migrations, RouteSchema.register)).store
    }

    private func hub(_ store: Store, ttl: Double = 100, now: Double) throws -> IntelHub {
        var configuration = IntelHub.Configuration()
        configuration.ttlSeconds = ttl
        return IntelHub(store: store, configuration: configuration, clock: { now })
    }

    private let stops = [GeoPoint(52.3600, 4.8800), GeoPoint(52.3700, 4.8900), GeoPoint(52.3800, 4.9000)]

    private func alert(_ name: String, _ body: String = "Tram 5 delayed", points: [GeoPoint]? = nil, endsAt: Double? = nil,
                       scope: String = "gvb") -> NamedItem {
        NamedItem(scope: scope, name: name, source: scope, points: points ?? stops, kind: .disruption, tags: ["tram"], modes: [.transit],
                  body: body, translations: ["fi": "Raitiovaunu 5 myöhässä", "en": body], endsAt: endsAt)
    }

    private func ids(_ changes: [NamedChange]) -> [String] {
        changes.map {
            switch $0 {
            case .added(let i): "added \(i.reference!)"
            case .revised(_, let i): "revised \(i.reference!)"
            case .ended(let i): "ended \(i.reference!)"
            }
        }
    }

    func testANamedItemIsAddedRevisedLeftAloneAndEndedByDeletion() async throws {
        let h = try hub(try store(), now: 1000)
        var (changes, unchanged) = try await h.apply([alert("a1")], scope: "gvb", ending: .listed([]), now: 1000)
        XCTAssertEqual(ids(changes), ["added gvb/a1"])
        guard case .added(let item) = changes[0] else { return XCTFail() }
        XCTAssertEqual(item.points, stops, "at every stop it informs")
        XCTAssertEqual(item.expiresAt, 1100, "open-ended: the usual lifetime")
        XCTAssertEqual(item.origin, .provider)

        (changes, unchanged) = try await h.apply([alert("a1")], scope: "gvb", ending: .listed([]), now: 1010)
        XCTAssertEqual(changes.count, 0, "the same alert again changes nothing (and does not renew it before half its lifetime)")
        XCTAssertEqual(unchanged, 1)

        (changes, _) = try await h.apply([alert("a1", "Tram 5 diverted", points: Array(stops.prefix(2)))], scope: "gvb",
                                         ending: .listed([]), now: 1020)
        XCTAssertEqual(ids(changes), ["revised gvb/a1"])
        guard case .revised(let before, let after) = changes[0] else { return XCTFail() }
        XCTAssertEqual(before.body, "Tram 5 delayed")
        XCTAssertEqual([after.id, after.body, "\(after.points.count)"], [item.id, "Tram 5 diverted", "2"], "the same item, revised")

        (changes, _) = try await h.apply([], scope: "gvb", ending: .listed(["a1", "never-seen"]), now: 1030)
        XCTAssertEqual(ids(changes), ["ended gvb/a1"], "a deletion ends it; one of an unknown alert is nothing")
        let live = try await h.item(item.id)
        XCTAssertNil(live)
    }

    func testAFullDatasetEndsOnlyItsOwnScopesOthers() async throws {
        let h = try hub(try store(), now: 1000)
        _ = try await h.apply([alert("a1"), alert("a2")], scope: "gvb", ending: .allOthers, now: 1000)
        _ = try await h.apply([alert("x", scope: "ret")], scope: "ret", ending: .allOthers, now: 1000)
        let (changes, unchanged) = try await h.apply([alert("a2")], scope: "gvb", ending: .allOthers, now: 1001)
        XCTAssertEqual(ids(changes), ["ended gvb/a1"])
        XCTAssertEqual(unchanged, 1)
        let count = await h.liveCount
        XCTAssertEqual(count, 2, "gvb/a2 and ret/x stay")
    }

    func testAnEndInThePastEndsItAndAnOpenOneIsRenewedOnlyAfterHalfItsLife() async throws {
        let h = try hub(try store(), ttl: 100, now: 1000)
        var (changes, _) = try await h.apply([alert("gone", endsAt: 900)], scope: "gvb", ending: .listed([]), now: 1000)
        XCTAssertTrue(changes.isEmpty, "an alert already over is not added")
        (changes, _) = try await h.apply([alert("a1")], scope: "gvb", ending: .listed([]), now: 1000)
        (changes, _) = try await h.apply([alert("a1")], scope: "gvb", ending: .listed([]), now: 1060)
        guard case .revised(_, let renewed) = changes.first else { return XCTFail("renewed past half its lifetime: \(ids(changes))") }
        XCTAssertEqual(renewed.expiresAt, 1160)
        (changes, _) = try await h.apply([alert("a1", endsAt: 1070)], scope: "gvb", ending: .listed([]), now: 1065)
        guard case .revised(_, let bounded) = changes.first else { return XCTFail() }
        XCTAssertEqual(bounded.expiresAt, 1070, "an active period's end is the item's end")
        (changes, _) = try await h.apply([alert("a1", endsAt: 1070)], scope: "gvb", ending: .listed([]), now: 1071)
        XCTAssertEqual(ids(changes), ["ended gvb/a1"])
    }

    func testALikeDoesNotOutliveTheProvidersEnd() async throws {
        let h = try hub(try store(), ttl: 100, now: 1000)
        let (changes, _) = try await h.apply([alert("a1", endsAt: 1050)], scope: "gvb", ending: .listed([]), now: 1000)
        guard case .added(let item) = changes.first else { return XCTFail() }
        let liked = try await h.like(item.id, by: "bob", now: 1040).item
        XCTAssertEqual(liked.likes, 1)
        XCTAssertEqual(liked.expiresAt, 1050)
    }

    func testNamedItemsSurviveARestartWithTheirPlacesTranslationsAndScope() async throws {
        let s = try store()
        var h: IntelHub? = try hub(s, now: 1000)
        let (changes, _) = try await h!.apply([alert("a1"), alert("a2")], scope: "gvb", ending: .listed([]), now: 1000)
        guard case .added(let item) = changes.first else { return XCTFail() }
        h = nil
        let again = try hub(s, now: 1001)
        let restored = try await again.item(item.id)
        XCTAssertEqual(restored?.points, stops)
        XCTAssertEqual(restored?.translations, ["fi": "Raitiovaunu 5 myöhässä", "en": "Tram 5 delayed"])
        XCTAssertEqual(restored?.reference, "gvb/a1")
        let corridor = try Corridor(from: GeoPoint(52.379, 4.899), to: GeoPoint(52.390, 4.910), widthMeters: 300)
        let inside = await again.items(in: corridor).map(\.id).sorted()
        XCTAssertEqual(inside.count, 2, "found by its last stop alone, each item once")
        let (after, _) = try await again.apply([alert("a1")], scope: "gvb", ending: .allOthers, now: 1002)
        XCTAssertEqual(ids(after), ["ended gvb/a2"], "the scope's items are known again after the restart")
    }

    func testAnAlertBackAfterItEndedIsAFreshItemUnderTheSameId() async throws {
        let h = try hub(try store(), now: 1000)
        var (changes, _) = try await h.apply([alert("a1")], scope: "gvb", ending: .listed([]), now: 1000)
        guard case .added(let first) = changes.first else { return XCTFail() }
        _ = try await h.like(first.id, by: "bob", now: 1001)
        _ = try await h.apply([], scope: "gvb", ending: .listed(["a1"]), now: 1002)
        (changes, _) = try await h.apply([alert("a1")], scope: "gvb", ending: .listed([]), now: 1003)
        guard case .added(let back) = changes.first else { return XCTFail("\(ids(changes))") }
        XCTAssertEqual(back.id, first.id)
        XCTAssertEqual(back.likes, 0)
    }

    /// A message too large for one part (one write, one message to the `named` shard's owner) is
    /// applied in parts, in order, its ending with the last: a full dataset ends only what none of
    /// its parts names.
    func testAFullDatasetInSeveralPartsEndsOnlyWhatNoPartNames() async throws {
        let h = try hub(try store(), now: 1000)
        let feed = NamedIntelFeed(hub: h, maxPoints: stops.count) // one alert per part
        var outcome = try await feed.apply([alert("a1"), alert("a2"), alert("a3")], scope: "gvb", ending: .allOthers, now: 1000)
        XCTAssertEqual(outcome, .init(added: 3))
        outcome = try await feed.apply([alert("a1"), alert("a3", "Tram 3 delayed")], scope: "gvb", ending: .allOthers, now: 1001)
        XCTAssertEqual(outcome, .init(changed: 1, ended: 1, unchanged: 1), "a2 ends; a1, in the first part, does not")
        outcome = try await feed.apply([], scope: "gvb", ending: .listed(["a1"]), now: 1002)
        XCTAssertEqual(outcome, .init(ended: 1), "an empty message still carries its deletions")
        let corridor = try Corridor(from: GeoPoint(52.359, 4.879), to: GeoPoint(52.390, 4.910), widthMeters: 300)
        let left = await h.items(in: corridor).compactMap(\.reference)
        XCTAssertEqual(left, ["gvb/a3"])
    }
}
