import XCTest
import LoadHarness
import Routes

/// The commute generator: the same seed gives the same city, and the routes are shared as told.
final class CommutePlanTests: XCTestCase {
    private func settings(travellers: Int = 2000, seed: Int = 5, popular: Int = 10, share: Double = 0.6) throws -> Scenario.RouteSettings {
        let s = try Scenario.parse(Array("""
            {"name":"r","kind":"routes","routes":{"travellers":\(travellers),"seed":\(seed),"hubs":8,"popularRoutes":\(popular),
             "popularShare":\(share),"widthMeters":300,"viaPoints":2,"city":{"lat":41.015,"lon":28.979,"radiusKm":15}}}
            """.utf8))
        return try XCTUnwrap(s.routes)
    }

    func testTheSameSeedGivesTheSameCommutes() throws {
        let a = CommutePlan(try settings()), b = CommutePlan(try settings())
        XCTAssertEqual(a.hubs, b.hubs)
        XCTAssertEqual(a.routes, b.routes)
        XCTAssertEqual(a.travellerRoutes, b.travellerRoutes)
        let c = CommutePlan(try settings(seed: 6))
        XCTAssertNotEqual(a.routes, c.routes, "another seed, another city")
    }

    func testRoutesAreSharedAsConfigured() throws {
        let s = try settings()
        let plan = CommutePlan(s)
        XCTAssertEqual(plan.travellerRoutes.count, 2000)
        let popular = plan.routes.filter { $0.popularRank != nil }
        XCTAssertEqual(popular.count, 10)
        XCTAssertEqual(popular.map(\.popularRank), (0..<10).map { $0 }, "popular routes first, by rank")
        XCTAssertEqual(Set(popular.map { [$0.from, $0.to].description }).count, 10, "distinct hub-to-hub routes")
        for r in popular {
            XCTAssertTrue(plan.hubs.contains(r.from) && plan.hubs.contains(r.to), "a popular route runs between hubs")
            XCTAssertEqual(r.via.count, 2)
        }
        let onPopular = plan.travellerRoutes.filter { $0 < 10 }.count
        XCTAssertEqual(Double(onPopular) / 2000, 0.6, accuracy: 0.05, "the popular share")
        // Every other traveller has a route of its own, ending at a hub.
        let own = plan.travellerRoutes.filter { $0 >= 10 }
        XCTAssertEqual(Set(own).count, own.count)
        XCTAssertEqual(plan.routes.count, 10 + own.count)
        for i in own { XCTAssertTrue(plan.hubs.contains(plan.routes[i].to)) }
        // The busiest route carries more than the quietest popular one (popularity falls with rank).
        let counts = (0..<10).map { r in plan.travellerRoutes.filter { $0 == r }.count }
        XCTAssertGreaterThan(counts[0], counts[9] * 3)
        // Points are at a corridor id's precision, so equal routes give one room.
        for r in plan.routes {
            for p in [r.from, r.to] + r.via {
                XCTAssertEqual(p.lat * 10_000, (p.lat * 10_000).rounded(), accuracy: 1e-6)
                XCTAssertEqual(p.lon * 10_000, (p.lon * 10_000).rounded(), accuracy: 1e-6)
            }
            XCTAssertLessThanOrEqual(r.from.distance(to: GeoPoint(41.015, 28.979)), 15_050)
        }
    }

    func testNoPopularRoutesMeansEveryoneAlone() throws {
        let plan = CommutePlan(try settings(travellers: 50, popular: 0, share: 0))
        XCTAssertEqual(plan.routes.count, 50)
        XCTAssertEqual(Set(plan.travellerRoutes).count, 50)
    }

    /// Posts meant inside a corridor lie inside it; posts meant outside mostly lie outside.
    func testPostPointsFollowTheCorridor() throws {
        let plan = CommutePlan(try settings())
        var rng = SeededGenerator(seed: 3)
        var outside = 0
        for r in [0, 3, 9, plan.routes.count - 1] {
            let corridor = plan.routes[r].corridor
            for _ in 0..<200 {
                let p = plan.postPoint(route: r, inside: true, using: &rng)
                XCTAssertLessThanOrEqual(corridor.distance(from: p), corridor.widthMeters / 2, "\(p) in route \(r)")
                if !corridor.contains(plan.postPoint(route: r, inside: false, using: &rng)) { outside += 1 }
            }
        }
        XCTAssertGreaterThan(outside, 600, "off-corridor posts land off the corridor, but for bends and ends")
    }
}
