import Routes
import SeededRandom
import XCTest

/// Corridor geometry on the sphere, canonical ids, limits, and the spatial index against brute force.
final class CorridorTests: XCTestCase {
    /// The distance to the path by brute force: the nearest of many points along each great-circle segment.
    private func sampledDistance(_ corridor: Corridor, _ p: GeoPoint, samples: Int = 20_000) -> Double {
        var best = Double.infinity
        for (a, b) in zip(corridor.path, corridor.path.dropFirst()) {
            for i in 0...samples {
                best = min(best, p.distance(to: a.interpolated(to: b, fraction: Double(i) / Double(samples))))
            }
        }
        return best
    }

    private func corridor(_ points: [GeoPoint], width: Double = 500) throws -> Corridor {
        try Corridor(from: points[0], via: Array(points.dropFirst().dropLast()), to: points[points.count - 1], widthMeters: width)
    }

    func testDistancesOnTheSphere() {
        XCTAssertEqual(GeoPoint(0, 0).distance(to: GeoPoint(1, 0)), 111_195, accuracy: 1)
        XCTAssertEqual(GeoPoint(0, 179.5).distance(to: GeoPoint(0, -179.5)), 111_195, accuracy: 1, "across the antimeridian")
        XCTAssertNil(GeoPoint(lat: 91, lon: 0))
        XCTAssertNil(GeoPoint(lat: 0, lon: .nan))
    }

    func testDistanceToThePathMatchesBruteForceEverywhere() throws {
        let cases: [([GeoPoint], [GeoPoint])] = [
            // A bend: points inside and outside the corner, and past the ends.
            ([GeoPoint(52.0, 4.0), GeoPoint(52.0, 4.1), GeoPoint(52.1, 4.1)],
             [GeoPoint(52.003, 4.103), GeoPoint(51.998, 4.102), GeoPoint(52.05, 4.05), GeoPoint(52.0, 3.99), GeoPoint(52.11, 4.1)]),
            // Across the antimeridian.
            ([GeoPoint(-17.7, 179.9), GeoPoint(-17.8, -179.9)], [GeoPoint(-17.75, 180), GeoPoint(-17.75, -180), GeoPoint(-17.74, 179.95)]),
            // High latitude: the great circle bulges towards the pole between its ends.
            ([GeoPoint(80, 0), GeoPoint(80, 10)], [GeoPoint(80, 5), GeoPoint(80.1, 5), GeoPoint(79.9, 0.5)]),
            // Over the pole.
            ([GeoPoint(89.9, 0), GeoPoint(89.9, 180)], [GeoPoint(90, 0), GeoPoint(89.95, 90)]),
        ]
        for (path, points) in cases {
            let c = try corridor(path)
            for p in points {
                XCTAssertEqual(c.distance(from: p), sampledDistance(c, p), accuracy: 1.5, "\(p) to \(path)")
            }
        }
    }

    func testTheBandIsNotTheBox() throws {
        let c = try corridor([GeoPoint(52.0, 4.0), GeoPoint(52.0, 4.1), GeoPoint(52.1, 4.1)], width: 500)
        XCTAssertTrue(c.contains(GeoPoint(52.002, 4.05)), "220 m beside the first leg")
        XCTAssertFalse(c.contains(GeoPoint(52.05, 4.05)), "inside the bounding box, kilometres from the path")
        XCTAssertTrue(c.contains(GeoPoint(52.1, 4.102)), "beside the end")
        XCTAssertTrue(c.contains(GeoPoint(52.1015, 4.1)), "just past the end, on its round cap")
        XCTAssertFalse(c.contains(GeoPoint(52.1035, 4.1)), "390 m past the end")
        // South-east of the bend: 222 m south of the first leg's line and 171 m east of the second's,
        // but 280 m from the bend itself: outside the band's round outer corner (a square one holds it).
        XCTAssertFalse(c.contains(GeoPoint(51.998, 4.1025)), "outside the bend's outer corner")
        XCTAssertTrue(c.contains(GeoPoint(52.0024, 4.103)), "inside the bend, near both legs")
    }

    func testAcrossTheAntimeridian() throws {
        let c = try corridor([GeoPoint(-17.7, 179.9), GeoPoint(-17.8, -179.9)], width: 1000)
        XCTAssertTrue(c.contains(GeoPoint(-17.75, 180)))
        XCTAssertTrue(c.contains(GeoPoint(-17.75, -180)))
        XCTAssertFalse(c.contains(GeoPoint(-17.75, 0)), "not the long way round")
    }

    func testEqualRoutesShareOneID() throws {
        let a = try Corridor(from: GeoPoint(41.0082, 28.9784), to: GeoPoint(41.0369, 28.9850), widthMeters: 500)
        let nearby = try Corridor(from: GeoPoint(41.00821, 28.97839), to: GeoPoint(41.03689, 28.98501), widthMeters: 500.2)
        let wider = try Corridor(from: GeoPoint(41.0082, 28.9784), to: GeoPoint(41.0369, 28.9850), widthMeters: 600)
        let moved = try Corridor(from: GeoPoint(41.0087, 28.9784), to: GeoPoint(41.0369, 28.9850), widthMeters: 500)
        let reversed = try Corridor(from: GeoPoint(41.0369, 28.9850), to: GeoPoint(41.0082, 28.9784), widthMeters: 500)
        XCTAssertEqual(a.id, nearby.id, "the same points to a metre or two")
        XCTAssertNotEqual(a.id, wider.id)
        XCTAssertNotEqual(a.id, moved.id, "55 m away is another route")
        XCTAssertNotEqual(a.id, reversed.id, "the destination is part of the route")
        XCTAssertEqual(a.id.count, 16)
        let antimeridian = try Corridor(from: GeoPoint(0, 180), to: GeoPoint(1, 179), widthMeters: 500)
        let sameAntimeridian = try Corridor(from: GeoPoint(0, -180), to: GeoPoint(1, 179), widthMeters: 500)
        XCTAssertEqual(antimeridian.id, sameAntimeridian.id, "180 and -180 are one meridian")
    }

    func testAbsurdCorridorsAreRefusedNamingTheField() {
        func refusal(_ make: () throws(Corridor.Refusal) -> Corridor) -> Corridor.Refusal? {
            do throws(Corridor.Refusal) { _ = try make() } catch { return error }
            return nil
        }
        let a = GeoPoint(52.37, 4.89), b = GeoPoint(52.09, 5.12)
        XCTAssertEqual(refusal { () throws(Corridor.Refusal) in try Corridor(from: a, to: b, widthMeters: 0) }?.field, "widthMeters")
        XCTAssertEqual(refusal { () throws(Corridor.Refusal) in try Corridor(from: a, to: b, widthMeters: 1e7) }?.field, "widthMeters")
        XCTAssertEqual(refusal { () throws(Corridor.Refusal) in try Corridor(from: a, to: b, widthMeters: .nan) }?.field, "widthMeters")
        XCTAssertEqual(refusal { () throws(Corridor.Refusal) in try Corridor(from: a, to: GeoPoint(-33.87, 151.21), widthMeters: 500) }?.field, "to")
        XCTAssertEqual(refusal { () throws(Corridor.Refusal) in try Corridor(from: a, via: Array(repeating: b, count: 26), to: b, widthMeters: 500) }?.field, "via")
    }

    /// The index finds exactly the corridors brute force finds, for random corridors and points,
    /// near the antimeridian and the poles too.
    func testTheIndexAgreesWithBruteForce() throws {
        var rng = SplitMix64(seed: 7)
        for centre in [GeoPoint(41.0, 29.0), GeoPoint(-17.75, 179.95), GeoPoint(89.5, 10), GeoPoint(0, 0)] {
            var index = CorridorIndex()
            var all: [(String, Corridor)] = []
            func near(_ spread: Double) -> GeoPoint {
                GeoPoint(lat: max(-90, min(90, centre.lat + rng.uniform(-spread, spread))),
                         lon: { var l = centre.lon + rng.uniform(-spread, spread); if l > 180 { l -= 360 }; if l < -180 { l += 360 }; return l }())!
            }
            for _ in 0..<60 {
                let c = try Corridor(from: near(0.2), via: rng.uniform(0, 1) < 0.5 ? [near(0.2)] : [], to: near(0.2),
                                     widthMeters: rng.uniform(50, 3000))
                all.append((c.id, c))
                index.insert(c, id: c.id)
            }
            for _ in 0..<400 {
                let p = near(0.25)
                let expected = Set(all.filter { $0.1.contains(p) }.map(\.0))
                XCTAssertEqual(Set(index.corridors(containing: p)), expected, "at \(p) around \(centre)")
            }
            // Removing corridors takes them out of every cell.
            for (id, _) in all.prefix(30) { index.remove(id: id) }
            for _ in 0..<100 {
                let p = near(0.25)
                XCTAssertEqual(Set(index.corridors(containing: p)), Set(all.dropFirst(30).filter { $0.1.contains(p) }.map(\.0)))
            }
        }
    }

    /// Points within a few metres of the band's edge, beside every segment and around its ends, are
    /// found exactly as `Corridor.contains` finds them: the index skips a segment only when its box
    /// cannot hold the point (at a city's latitude, across the antimeridian, near a pole, on the
    /// equator, for bands of 50 m to 3 km).
    func testPointsAtTheBandsEdgeAreFoundAsBruteForceFindsThem() throws {
        var rng = SplitMix64(seed: 28)
        var edgePoints = 0
        for centre in [GeoPoint(41.0, 29.0), GeoPoint(-17.75, 179.95), GeoPoint(88.6, 10), GeoPoint(0, 0), GeoPoint(-60, -70)] {
            func near(_ spread: Double) -> GeoPoint {
                GeoPoint(lat: max(-90, min(90, centre.lat + rng.uniform(-spread, spread))),
                         lon: { var l = centre.lon + rng.uniform(-spread, spread); if l > 180 { l -= 360 }; if l < -180 { l += 360 }; return l }())!
            }
            for _ in 0..<12 {
                let c = try Corridor(from: near(0.1), via: rng.uniform(0, 1) < 0.5 ? [near(0.1)] : [], to: near(0.1), widthMeters: rng.uniform(50, 3000))
                var index = CorridorIndex()
                index.insert(c, id: c.id)
                let half = c.widthMeters / 2
                var tried = 0
                while tried < 40 {
                    let p = near(0.14)
                    let d = c.distance(from: p)
                    guard abs(d - half) < max(5, half * 0.05) else { continue }
                    tried += 1
                    XCTAssertEqual(index.corridors(containing: p) == [c.id], d <= half, "at \(p), \(d) m from a band \(half * 2) m wide")
                }
                edgePoints += tried
            }
        }
        XCTAssertEqual(edgePoints, 5 * 12 * 40)
    }

    func testACityCorridorCoversFewCells() throws {
        var index = CorridorIndex()
        let c = try Corridor(from: GeoPoint(41.0082, 28.9784), to: GeoPoint(41.0766, 29.0220), widthMeters: 500) // ~8.5 km
        index.insert(c, id: c.id)
        XCTAssertLessThan(index.registrations, 60, "an 8.5 km corridor 500 m wide touches a few dozen 1 km cells")
        XCTAssertGreaterThan(index.registrations, 8)
    }
}
