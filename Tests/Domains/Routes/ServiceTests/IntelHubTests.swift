import Foundation
import HubbubTestSupport
import Realtime
import RoomLog
import RouteService
import Routes
import Storage
import XCTest

/// The intel stream's owner: posts, likes, expiry on its schedule, and what survives a restart.
final class IntelHubTests: XCTestCase {
    /// A store in a temporary directory, closed and removed when the test ends.
    private func store() throws -> Store {
        try temporaryStore("hubbub-routes", migrations: .of(RoomLogSchema.migrations, RouteSchema.register)).store
    }

    private func hub(_ store: Store, ttl: Double = 10, now: Double) throws -> IntelHub {
        var configuration = IntelHub.Configuration()
        configuration.ttlSeconds = ttl
        return IntelHub(store: store, configuration: configuration, clock: { now })
    }

    private let bridge = IntelHub.Draft(point: GeoPoint(41.0256, 28.9744), kind: .disruption, tags: ["Traffic"], modes: [.car],
                                        body: "Galata #köprü closed #trafik")

    func testAHubThatCannotReloadAfterATakeOverAnswersUnavailableUntilItCan() async throws {
        let s = try store(), now = Date().timeIntervalSince1970 // a reload reads the items live at the system's time
        let h = try hub(s, ttl: 3600, now: now)
        let item = try await h.post(bridge, by: .user("alice"), now: now).item
        // This node takes the lease while the items cannot be read.
        try await s.write { db in try db.execute(sql: "ALTER TABLE intel_item RENAME TO intel_item_away") }
        h.invalidate(IntelShards.shard(ofID: item.id)!)
        for attempt in ["like", "item"] {
            do {
                if attempt == "like" { _ = try await h.like(item.id, by: "bob", now: now + 1) } else { _ = try await h.item(item.id) }
                XCTFail("\(attempt) answered from memory the store may have moved past")
            } catch {
                XCTAssertEqual(error.code, .unavailable, attempt)
            }
        }
        try await s.write { db in try db.execute(sql: "ALTER TABLE intel_item_away RENAME TO intel_item") }
        let liked = try await h.like(item.id, by: "bob", now: now + 2).item
        XCTAssertEqual(liked.likes, 1, "reloaded once the store could be read")
    }

    func testAPostIsDurableWithItsTagsAndKarma() async throws {
        let s = try store()
        let h = try hub(s, now: 1000)
        let item = try await h.post(bridge, by: .user("alice"), now: 1000).item
        XCTAssertEqual(item.tags, ["traffic", "köprü", "trafik"], "given tags, then the body's hashtags, each once")
        XCTAssertEqual(item.expiresAt, 1010)
        XCTAssertEqual(item.origin, .traveler)
        let corridor = try Corridor(from: GeoPoint(41.020, 28.970), to: GeoPoint(41.035, 28.980), widthMeters: 500)
        let inside = await h.items(in: corridor).map(\.id)
        XCTAssertEqual(inside, [item.id])
        let again = try hub(s, now: 1001)
        let restored = try await again.item(item.id)
        XCTAssertEqual(restored, item, "read back as it was acknowledged")
        let karma = try await again.karma(of: "alice")
        XCTAssertEqual(karma, 1)
    }

    func testLikesAreOnceNeverOwnAndPostponeExpiry() async throws {
        let s = try store()
        let h = try hub(s, now: 1000)
        let item = try await h.post(bridge, by: .user("alice"), now: 1000).item
        do { _ = try await h.like(item.id, by: "alice", now: 1001); XCTFail("liked one's own") } catch { XCTAssertEqual(error.code, .forbidden) }
        let liked = try await h.like(item.id, by: "bob", now: 1005).item
        XCTAssertEqual(liked.likes, 1)
        XCTAssertEqual(liked.expiresAt, 1015)
        do { _ = try await h.like(item.id, by: "bob", now: 1006); XCTFail("liked twice") } catch { XCTAssertEqual(error.code, .conflict) }
        do { _ = try await h.like("nope", by: "bob", now: 1006); XCTFail("liked nothing") } catch { XCTAssertEqual(error.code, .notFound) }
        // Its first schedule (1010) has passed: the item lives on until 1015.
        let early = await h.expire(now: 1012)
        XCTAssertEqual(early, [])
        let due = await h.expire(now: 1015)
        XCTAssertEqual(due.map(\.id), [item.id])
        let gone = try await h.item(item.id)
        XCTAssertNil(gone)
        let karma = try await h.karma(of: "alice")
        XCTAssertEqual(karma, 1 + 2, "one for sharing, two for the like")
        // After a restart the like still holds: the item's new expiry and its liker are durable.
        let again = try hub(s, now: 1011)
        let restored = try await again.item(item.id)
        XCTAssertEqual(restored?.likedBy, ["bob"])
        XCTAssertEqual(restored?.expiresAt, 1015)
    }

    func testCommentsAndLinksAreDurable() async throws {
        let s = try store()
        let h = try hub(s, ttl: 100, now: 1000)
        let a = try await h.post(bridge, by: .user("alice"), now: 1000).item
        let b = try await h.post(bridge, by: .provider(source: "iett"), now: 1001).item
        _ = try await h.comment(a.id, by: "bob", text: "still closed", now: 1002)
        let (la, lb, _) = try await h.link(a.id, to: b.id, by: "bob", now: 1003)
        XCTAssertEqual(la.links, [b.id])
        XCTAssertEqual(lb.links, [a.id])
        do { _ = try await h.link(b.id, to: a.id, by: "carol", now: 1004); XCTFail("linked twice") } catch { XCTAssertEqual(error.code, .conflict) }
        let again = try hub(s, ttl: 100, now: 1005)
        let restored = try await again.item(a.id)
        XCTAssertEqual(restored?.comments, 1)
        XCTAssertEqual(restored?.links, [b.id])
        let comments = try await again.comments(of: a.id, limit: 200).comments
        XCTAssertEqual(comments.map(\.text), ["still closed"])
        let karma = try await again.karma(of: "alice")
        XCTAssertEqual(karma, 1 + 2, "sharing, then a link by someone else; the provider has none")
    }

    /// Items of two shards are linked in two halves, each written by its own shard; a link whose
    /// second half was never written (its node died between them) is completed by the next
    /// attempt, not refused; a link whose halves are both made is a conflict, either way round.
    func testALinkBetweenTwoShardsIsMadeInHalvesAndCompletedAfterACrashBetweenThem() async throws {
        let s = try store()
        let h = try hub(s, ttl: 100, now: 1000)
        let north = IntelHub.Draft(point: GeoPoint(41.0205, 28.9735), kind: .poi, body: "north")
        let south = IntelHub.Draft(point: GeoPoint(40.9800, 28.9735), kind: .poi, body: "south")
        let a = try await h.post(north, by: .user("alice"), now: 1000).item
        let b = try await h.post(south, by: .user("bob"), now: 1000).item
        let c = try await h.post(south, by: .user("carol"), now: 1000).item
        XCTAssertNotEqual(IntelShards.shard(ofID: a.id), IntelShards.shard(ofID: b.id))
        let (la, lb, _) = try await h.link(a.id, to: b.id, by: "dave", now: 1001)
        XCTAssertEqual(la.links, [b.id])
        XCTAssertEqual(lb.links, [a.id])
        for (x, y) in [(a.id, b.id), (b.id, a.id)] {
            do { _ = try await h.link(x, to: y, by: "dave", now: 1002); XCTFail("linked twice") } catch { XCTAssertEqual(error.code, .conflict) }
        }
        // c's half of a link to a is written, a's is not: as if a's owner died between the halves.
        try await s.write { db in try db.execute(sql: "INSERT INTO intel_link (item, other, at) VALUES (?, ?, ?)", arguments: [c.id, a.id, 1003.0]) }
        let restarted = try hub(s, ttl: 100, now: 1004)
        let (ra, rc, _) = try await restarted.link(a.id, to: c.id, by: "dave", now: 1004)
        XCTAssertEqual(ra.links, [b.id, c.id], "the missing half is made")
        XCTAssertEqual(rc.links, [a.id], "the half already made is left as it was")
        do { _ = try await restarted.link(c.id, to: a.id, by: "dave", now: 1005); XCTFail("linked twice") } catch { XCTAssertEqual(error.code, .conflict) }
        let stored = try await restarted.stored([a.id, c.id]).map(\.links)
        XCTAssertEqual(stored, [[b.id, c.id], [a.id]])
        for (user, points) in [("alice", 1 + 2 + 2), ("bob", 1 + 2), ("carol", 1)] {
            let karma = try await restarted.karma(of: user)
            XCTAssertEqual(karma, points, "\(user): sharing, and each half made on their item (carol's was never given: it crashed)")
        }
    }

    func testItemsDueWhileTheServerWasDownHaveExpiredAtStart() async throws {
        let s = try store()
        let h = try hub(s, now: 1000)
        let item = try await h.post(bridge, by: .provider(source: "iett"), now: 1000).item
        let before = try await hub(s, now: 1009).item(item.id)
        XCTAssertEqual(before?.id, item.id)
        let after = try await hub(s, now: 1010).item(item.id)
        XCTAssertNil(after, "due while no node held its shard: expired when the shard is read")
        // And its end is told in the shard's log, once: corridors that showed it hear of it.
        let log = "intel:" + IntelShards.shard(ofID: item.id)!
        func ends() async throws -> [String] {
            let pushes = try await s.read { db in try RoomLogRows.read(log, epoch: "", after: 0, limit: 100, db) }
            return pushes.compactMap { push -> String? in
                guard let entry = IntelEntry(push: push), case .removed(let gone) = entry.change else { return nil }
                return gone.id
            }
        }
        let told = try await ends()
        XCTAssertEqual(told, [item.id])
        _ = try await hub(s, now: 1011).item(item.id)
        let again = try await ends()
        XCTAssertEqual(again, [item.id], "read again: not told twice")
    }

    func testExpiryFollowsItsScheduleForManyItems() async throws {
        let s = try store()
        let h = try hub(s, ttl: 100, now: 0)
        var posted: [(String, Double)] = []
        for i in 0..<50 {
            let item = try await h.post(bridge, by: .user("u\(i)"), now: Double(i)).item
            posted.append((item.id, item.expiresAt))
        }
        var expired: [String] = []
        for t in stride(from: 100.0, through: 150, by: 5) {
            let due = await h.expire(now: t)
            XCTAssertTrue(due.allSatisfy { $0.expiresAt <= t })
            expired += due.map(\.id)
            let remaining = await h.liveCount
            XCTAssertEqual(remaining, posted.filter { $0.1 > t }.count, "at \(t)")
        }
        XCTAssertEqual(expired, posted.map(\.0), "in the order they fell due")
    }
}
