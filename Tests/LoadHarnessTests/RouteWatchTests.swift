import XCTest
import LoadHarness
import Routes

/// A traveller's checks: the place of each item pushed, and deliveries missing or repeated.
final class RouteWatchTests: XCTestCase {
    /// Galata bridge, 300 m wide: Eminönü to Karaköy.
    private let corridor = Corridor(path: [GeoPoint(41.017, 28.97), GeoPoint(41.0245, 28.977)], widthMeters: 300)
    private let onTheBridge = GeoPoint(41.0205, 28.9735)
    private let farAway = GeoPoint(41.05, 29.05)
    /// 200 m east of the path's start: outside a 300 m band (half-width 150 m).
    private let justOutside = GeoPoint(41.017, 28.97 + 200 / (111_195 * cos(41.017 * .pi / 180)))

    func testAnItemOutsideTheCorridorIsAViolation() {
        var w = RouteWatch(route: 0, corridor: corridor)
        w.began(at: 100)
        XCTAssertEqual(w.added(at: onTheBridge, post: 0).total, 0)
        XCTAssertEqual(w.added(at: farAway, post: 1).outsideCorridor, 1)
        XCTAssertEqual(w.added(at: justOutside, post: nil).outsideCorridor, 1, "someone else's item is checked too")
        XCTAssertEqual(w.updated(at: justOutside).outsideCorridor, 1, "an update as well")
        XCTAssertEqual(w.updated(at: onTheBridge).total, 0)
    }

    func testTheSameItemTwiceIsADuplicate() {
        var w = RouteWatch(route: 0, corridor: corridor)
        w.began(at: 100)
        XCTAssertEqual(w.added(at: onTheBridge, post: 4).total, 0)
        XCTAssertEqual(w.added(at: onTheBridge, post: 4).redelivered, 1)
        XCTAssertEqual(w.added(at: onTheBridge, post: nil).total, 0, "items the harness did not post are not counted")
        w.ended(at: 200)
        w.began(at: 300)
        XCTAssertEqual(w.added(at: onTheBridge, post: 4).total, 0, "a new window (set off again) starts afresh")
    }

    /// The audit: what was posted inside the corridor while the traveller watched must have come.
    func testTheAuditFindsAMissingItem() {
        var w = RouteWatch(route: 0, corridor: corridor)
        w.began(at: 1_000)
        _ = w.added(at: onTheBridge, post: 0)
        w.ended(at: 5_000)
        let posts = [
            PostRecord(key: 1, point: onTheBridge, sentAt: 1_100, ackedAt: 1_200), // received
            PostRecord(key: 2, point: onTheBridge, sentAt: 1_300, ackedAt: 1_400), // missing
            PostRecord(key: 3, point: farAway, sentAt: 1_300, ackedAt: 1_400), // elsewhere
            PostRecord(key: 4, point: onTheBridge, sentAt: 900, ackedAt: 1_400), // sent before it subscribed
            PostRecord(key: 5, point: onTheBridge, sentAt: 4_900, ackedAt: 5_100), // acknowledged after it left
            PostRecord(key: 6, point: onTheBridge, sentAt: 2_000, ackedAt: nil), // refused
            PostRecord(key: 7, point: justOutside, sentAt: 2_000, ackedAt: 2_100), // just outside
        ]
        let audit = DeliveryAudit.audit(watches: [w], posts: posts, pushLagNanos: 100)
        XCTAssertEqual(audit.expected, 2)
        XCTAssertEqual(audit.undelivered, 1)
        // Acknowledged too shortly before it left for the push (which follows the reply) to come.
        let late = DeliveryAudit.audit(watches: [w], posts: posts + [PostRecord(key: 8, point: onTheBridge, sentAt: 4_850, ackedAt: 4_950)],
                                       pushLagNanos: 100)
        XCTAssertEqual(late.expected, 2, "a post acknowledged within the push's lag of leaving is not expected")
    }

    func testTheAuditGroupsTravellersOfOneRoute() {
        var a = RouteWatch(route: 3, corridor: corridor), b = RouteWatch(route: 3, corridor: corridor)
        let other = RouteWatch(route: 4, corridor: Corridor(path: [farAway, GeoPoint(41.051, 29.051)], widthMeters: 300))
        a.began(at: 0)
        b.began(at: 0)
        _ = a.added(at: onTheBridge, post: 0)
        let posts = [PostRecord(key: 1, point: onTheBridge, sentAt: 10, ackedAt: 20)]
        let audit = DeliveryAudit.audit(watches: [a, b, other], posts: posts, pushLagNanos: 100)
        XCTAssertEqual(audit.expected, 2, "both travellers on the bridge, not the one far away (who never subscribed either)")
        XCTAssertEqual(audit.undelivered, 1)
    }

    func testTheLedgerMatchesPushesToPosts() {
        let ledger = PostLedger()
        let i = ledger.sent(key: nameHash("Delay here #rush x-1"), point: onTheBridge, at: 50)
        XCTAssertNil(ledger.posts[0].ackedAt)
        ledger.acked(i, at: 70)
        XCTAssertEqual(ledger.lookup(nameHash("Delay here #rush x-1"))?.index, i)
        XCTAssertEqual(ledger.lookup(nameHash("Delay here #rush x-1"))?.sentAt, 50)
        XCTAssertNil(ledger.lookup(nameHash("someone else's")))
        XCTAssertEqual(ledger.posts, [PostRecord(key: nameHash("Delay here #rush x-1"), point: onTheBridge, sentAt: 50, ackedAt: 70)])
    }

    /// The `intel.added` example of docs/protocol.md.
    func testScansAnIntelPush() throws {
        let text = #"{"room":"route:7xKlwqNWyDjkWPWv","seq":1,"epoch":"m3q8xk2d","event":"intel.added","data":{"item":{"id":"ik7m2qxw9dnpa","lat":41.0205,"lon":28.9735,"kind":"disruption","origin":"traveler","tags":["traffic","köprü"],"modes":["car"],"body":"Bridge closed to cars #köprü","at":1720357800.412,"expiresAt":1720401000.412,"likes":0,"comments":0,"links":[],"by":{"user":"uAb7WNMJYR7I1","alias":"alice"},"distanceToDestinationMeters":533}}}"#
        let p = try XCTUnwrap(PushScanner.scan(Array(text.utf8)))
        XCTAssertEqual(p.event, .intelAdded)
        XCTAssertEqual(p.seq, 1)
        let item = try XCTUnwrap(p.intel)
        XCTAssertEqual(item.id, "ik7m2qxw9dnpa")
        XCTAssertEqual(item.lat, 41.0205)
        XCTAssertEqual(item.lon, 28.9735)
        XCTAssertEqual(item.body, nameHash("Bridge closed to cars #köprü"))
        XCTAssertEqual(item.by, nameHash("uAb7WNMJYR7I1"))
        let provider = try XCTUnwrap(PushScanner.scan(Array(#"{"room":"route:x","seq":2,"epoch":"e","event":"intel.updated","data":{"item":{"id":"i1","lat":-33,"lon":151.2e0,"body":"x","by":{"source":"metro"}}}}"#.utf8)))
        XCTAssertEqual(provider.event, .intelUpdated)
        XCTAssertEqual(provider.intel?.by, 0)
        XCTAssertEqual(provider.intel?.lon, 151.2)
        XCTAssertNil(PushScanner.scan(Array(#"{"room":"route:x","seq":3,"epoch":"e","event":"intel.added","data":{"item":{"id":"i1"}}}"#.utf8)),
                     "an item without a place is unreadable")
        XCTAssertEqual(PushScanner.scan(Array(#"{"room":"route:x","seq":4,"epoch":"e","event":"intel.expired","data":{"item":"i1"}}"#.utf8))?.event, .intelExpired)
    }
}
