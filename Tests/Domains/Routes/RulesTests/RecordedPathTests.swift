import Routes
import SeededRandom
import XCTest

/// Recorded paths: simplification keeps the shape within its tolerance and its bound, and the next
/// corridor follows the recording only from near its start.
final class RecordedPathTests: XCTestCase {
    /// A walk east 2 km, then north 2 km, a fix every ~11 m with a few metres of GPS noise.
    private func lShapedWalk(seed: UInt64 = 7) -> [GeoPoint] {
        var random = SplitMix64(seed: seed)
        func noise() -> Double { (Double(random.next() % 1000) / 1000 - 0.5) * 0.00004 } // about ±2 m
        var points: [GeoPoint] = []
        for i in 0...180 { points.append(GeoPoint(52.3500 + noise(), 4.8500 + Double(i) * 0.000164 + noise())) }
        for i in 1...180 { points.append(GeoPoint(52.3500 + Double(i) * 0.0001 + noise(), 4.8795 + noise())) }
        return points
    }

    private func worstDeviation(_ original: [GeoPoint], _ kept: [GeoPoint]) -> Double {
        original.map { p in zip(kept, kept.dropFirst()).map { p.distance(toSegmentFrom: $0.0, to: $0.1) }.min() ?? .infinity }.max() ?? 0
    }

    func testSimplificationKeepsTheEndsTheCornerAndTheShape() {
        let walk = lShapedWalk()
        let kept = RecordedPath.simplified(walk, toleranceMeters: 25, maxPoints: 25)
        XCTAssertEqual(kept.first, walk.first)
        XCTAssertEqual(kept.last, walk.last)
        XCTAssertLessThanOrEqual(kept.count, 5, "an L with noise needs its two ends and the corner, about")
        XCTAssertGreaterThanOrEqual(kept.count, 3, "the corner is kept")
        XCTAssertLessThanOrEqual(worstDeviation(walk, kept), 25, "no fix strays further than the tolerance")
    }

    func testSimplificationStopsAtItsBound() {
        // A zig-zag: every point matters at 1 m of tolerance, so only the bound stops it.
        let zigzag = (0..<400).map { GeoPoint(52.35 + Double($0 % 2) * 0.001, 4.85 + Double($0) * 0.0005) }
        let kept = RecordedPath.simplified(zigzag, toleranceMeters: 1, maxPoints: 25)
        XCTAssertEqual(kept.count, 25)
        XCTAssertEqual(kept.first, zigzag.first)
        XCTAssertEqual(kept.last, zigzag.last)
        XCTAssertEqual(RecordedPath.simplified([GeoPoint(1, 1), GeoPoint(2, 2)], toleranceMeters: 1, maxPoints: 25).count, 2)
    }

    func testTheCorridorFollowsTheRecordingOnlyFromNearItsStart() throws {
        let walk = lShapedWalk()
        let from = GeoPoint(52.3502, 4.8502), to = GeoPoint(52.3690, 4.8795)
        let along = try XCTUnwrap(RecordedPath.corridor(from: from, to: to, recorded: walk, widthMeters: 200))
        let straight = try Corridor(from: from, to: to, widthMeters: 200)
        let corner = GeoPoint(52.3500, 4.8795)
        XCTAssertTrue(along.contains(corner), "the corner of the walk is inside the recorded corridor")
        XCTAssertFalse(straight.contains(corner), "but not inside the straight one")
        for p in walk { XCTAssertTrue(along.contains(p), "every fix of the walk is inside: \(p)") }
        XCTAssertEqual(along.from, from)
        XCTAssertEqual(along.to, to)

        XCTAssertNil(RecordedPath.corridor(from: GeoPoint(52.40, 4.85), to: to, recorded: walk, widthMeters: 200),
                     "a start 5 km away does not follow it")
        XCTAssertNil(RecordedPath.corridor(from: from, to: to, recorded: [walk[0]], widthMeters: 200), "one fix says nothing")
        var limits = Corridor.Limits()
        limits.maxPathMeters = 1_000
        XCTAssertNil(RecordedPath.corridor(from: from, to: to, recorded: walk, widthMeters: 200, limits: limits),
                     "a recording longer than the limit is not followed")
    }
}
