import Routes
import SeededRandom
import XCTest

/// Items' rules: likes once and never one's own, likes postpone expiry, links, filters, and the
/// expiry queue's order with postponed entries.
final class IntelItemTests: XCTestCase {
    private func item(by author: IntelItem.Author = .user("alice"), kind: IntelKind = .disruption, tags: [String] = [],
                      modes: [TravelMode] = []) -> IntelItem {
        IntelItem(id: "i1", point: GeoPoint(52, 4), kind: kind, author: author, tags: tags, modes: modes, body: "bridge open",
                  at: 100, expiresAt: 100 + 3600)
    }

    func testLikesAreOnceNeverOwnAndPostponeExpiry() {
        var i = item()
        XCTAssertThrowsError(try i.like(by: "alice", now: 200, ttl: 3600)) { XCTAssertEqual($0 as? IntelItem.Refusal, .ownItem) }
        XCTAssertNoThrow(try i.like(by: "bob", now: 200, ttl: 3600))
        XCTAssertEqual(i.expiresAt, 3800)
        let before = i
        XCTAssertThrowsError(try i.like(by: "bob", now: 300, ttl: 3600)) { XCTAssertEqual($0 as? IntelItem.Refusal, .alreadyLiked) }
        XCTAssertEqual(i, before, "a refused like changes nothing")
        XCTAssertEqual(i.likes, 1)
        var provided = item(by: .provider(source: "gvb"))
        XCTAssertNoThrow(try provided.like(by: "alice", now: 200, ttl: 3600))
        XCTAssertEqual(provided.origin, .provider)
    }

    func testLinks() {
        var i = item()
        XCTAssertThrowsError(try i.link(to: "i1")) { XCTAssertEqual($0 as? IntelItem.Refusal, .selfLink) }
        XCTAssertNoThrow(try i.link(to: "i2"))
        XCTAssertThrowsError(try i.link(to: "i2")) { XCTAssertEqual($0 as? IntelItem.Refusal, .alreadyLinked) }
        XCTAssertEqual(i.links, ["i2"])
    }

    func testFilters() {
        let walkPoi = item(kind: .poi, tags: ["coffee"], modes: [.walk])
        let anyMode = item(kind: .disruption)
        XCTAssertTrue(IntelFilter().matches(walkPoi))
        XCTAssertTrue(IntelFilter(kinds: [.poi]).matches(walkPoi))
        XCTAssertFalse(IntelFilter(kinds: [.disruption]).matches(walkPoi))
        XCTAssertFalse(IntelFilter(modes: [.car]).matches(walkPoi))
        XCTAssertTrue(IntelFilter(modes: [.car]).matches(anyMode), "an item naming no mode concerns all")
        XCTAssertTrue(IntelFilter(tags: ["coffee", "tea"]).matches(walkPoi))
        XCTAssertFalse(IntelFilter(tags: ["tea"]).matches(walkPoi))
        XCTAssertFalse(IntelFilter(origins: [.provider]).matches(walkPoi))
    }

    func testExpiryQueueGivesDueEntriesInOrder() {
        var q = ExpiryQueue()
        var rng = SplitMix64(seed: 3)
        var times: [Double] = []
        for i in 0..<1000 {
            let t = rng.uniform(0, 1000)
            times.append(t)
            q.schedule("i\(i)", at: t)
        }
        XCTAssertEqual(q.next, times.min())
        let first = q.due(now: 500)
        XCTAssertEqual(first.map(\.at), times.filter { $0 <= 500 }.sorted())
        XCTAssertEqual(q.due(now: 500).count, 0)
        let rest = q.due(now: 1000)
        XCTAssertEqual(first.count + rest.count, 1000)
        XCTAssertEqual(rest.map(\.at), rest.map(\.at).sorted())
        XCTAssertNil(q.next)
    }

    func testKarmaLevels() {
        XCTAssertEqual(Karma.level(for: 0), "newcomer")
        XCTAssertEqual(Karma.level(for: 9), "newcomer")
        XCTAssertEqual(Karma.level(for: 10), "scout")
        XCTAssertEqual(Karma.level(for: 999), "navigator")
        XCTAssertEqual(Karma.level(for: 5000), "pathfinder")
        XCTAssertEqual(Karma.level(for: -3), "newcomer")
    }
}

/// Items at several places (a transit alert at each stop of a route) in the spatial index.
final class MultiPointIndexTests: XCTestCase {
    let stops = [GeoPoint(52.3600, 4.8800), GeoPoint(52.3605, 4.8805), GeoPoint(52.4000, 4.9500)]

    func testACorridorFindsAnItemByAnyOfItsPointsOnce() throws {
        var index = ItemIndex()
        index.insert("alert", at: stops, time: 10)
        index.insert("near", at: GeoPoint(52.3601, 4.8801), time: 5)
        let first = try Corridor(from: GeoPoint(52.355, 4.875), to: GeoPoint(52.365, 4.885), widthMeters: 300)
        XCTAssertEqual(index.items(in: first).sorted(), ["alert", "near"], "two of its points inside: listed once")
        let last = try Corridor(from: GeoPoint(52.398, 4.948), to: GeoPoint(52.402, 4.952), widthMeters: 300)
        XCTAssertEqual(index.items(in: last), ["alert"], "its far point alone is enough")
        let (newest, truncated) = index.newest(minLat: 52.0, minLon: 4.0, maxLat: 53.0, maxLon: 5.0, limit: 10)
        XCTAssertEqual(newest, ["alert", "near"], "a box query lists it once, newest first")
        XCTAssertFalse(truncated)
        let (one, more) = index.newest(minLat: 52.0, minLon: 4.0, maxLat: 53.0, maxLon: 5.0, limit: 1)
        XCTAssertEqual(one, ["alert"])
        XCTAssertTrue(more)
    }

    func testMovingOrRemovingAnItemTakesEveryPointAway() throws {
        var index = ItemIndex()
        index.insert("alert", at: stops, time: 10)
        index.insert("alert", at: [stops[2]], time: 11)
        let first = try Corridor(from: GeoPoint(52.355, 4.875), to: GeoPoint(52.365, 4.885), widthMeters: 300)
        XCTAssertEqual(index.items(in: first), [], "moved: its old points are gone")
        XCTAssertEqual(index.count, 1)
        index.remove("alert")
        XCTAssertEqual(index.count, 0)
        XCTAssertEqual(index.newest(minLat: 52.0, minLon: 4.0, maxLat: 53.0, maxLon: 5.0, limit: 10).ids, [])
    }
}
