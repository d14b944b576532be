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
