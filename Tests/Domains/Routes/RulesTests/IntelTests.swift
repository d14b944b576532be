import Routes
import SeededRandom
import XCTest

/// Hashtags in any script, and the item index against brute force.
final class IntelTests: XCTestCase {
    func testHashtagsInAnyScript() {
        XCTAssertEqual(Hashtags.extract(from: "Köprü kapalı #Köprü #trafik, yine #KÖPRÜ!"), ["köprü", "trafik"])
        XCTAssertEqual(Hashtags.extract(from: "#ponte chiuso #ponte_vecchio #мост #橋 #café"), ["ponte", "ponte_vecchio", "мост", "橋", "café"])
        XCTAssertEqual(Hashtags.extract(from: "decomposed #cafe\u{301} too"), ["cafe\u{301}"], "a combining mark stays in its tag")
        XCTAssertEqual(Hashtags.extract(from: "no tags: a#b &#39; # alone ## #"), [])
        XCTAssertEqual(Hashtags.extract(from: "#line2 delayed 10'"), ["line2"])
        XCTAssertEqual(Hashtags.extract(from: (1...30).map { "#t\($0)" }.joined(separator: " ")).count, 20, "at most 20")
        XCTAssertEqual(Hashtags.extract(from: "#" + String(repeating: "a", count: 80)).first?.count, 50)
        XCTAssertTrue(Hashtags.isValid("köprü"))
        XCTAssertFalse(Hashtags.isValid("two words"))
        XCTAssertFalse(Hashtags.isValid(""))
        XCTAssertFalse(Hashtags.isValid("#tag"))
    }

    func testItemIndexAgreesWithBruteForce() throws {
        var rng = SplitMix64(seed: 11)
        for centre in [GeoPoint(52.37, 4.89), GeoPoint(0, 179.99), GeoPoint(-89.9, 0)] {
            var index = ItemIndex()
            var all: [String: GeoPoint] = [:]
            var times: [String: Double] = [:]
            func near(_ spread: Double) -> GeoPoint {
                var lon = centre.lon + rng.uniform(-spread, spread)
                if lon > 180 { lon -= 360 }
                if lon < -180 { lon += 360 }
                return GeoPoint(lat: max(-90, min(90, centre.lat + rng.uniform(-spread, spread))), lon: lon)!
            }
            for i in 0..<2000 {
                let p = near(0.3)
                all["i\(i)"] = p
                // Times with ties, so the id breaks them.
                times["i\(i)"] = Double(rng.next() % 500)
                index.insert("i\(i)", at: p, time: times["i\(i)"]!)
            }
            for i in 0..<500 { all["i\(i)"] = nil; index.remove("i\(i)") }
            XCTAssertEqual(index.count, 1500)
            for _ in 0..<30 {
                let c = try Corridor(from: near(0.2), to: near(0.2), widthMeters: rng.uniform(100, 5000))
                XCTAssertEqual(Set(index.items(in: c)), Set(all.filter { c.contains($0.value) }.map(\.key)), "corridor \(c.path)")
                let a = near(0.3), b = near(0.3)
                let (minLat, maxLat) = (min(a.lat, b.lat), max(a.lat, b.lat))
                let (minLon, maxLon) = (a.lon, b.lon) // either order: across the antimeridian when minLon > maxLon
                let inBox = all.filter { p in
                    p.value.lat >= minLat && p.value.lat <= maxLat
                        && (minLon <= maxLon ? p.value.lon >= minLon && p.value.lon <= maxLon : p.value.lon >= minLon || p.value.lon <= maxLon)
                }
                let found = index.newest(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon, limit: .max)
                XCTAssertEqual(Set(found.ids), Set(inBox.keys), "box \(minLat)…\(maxLat), \(minLon)…\(maxLon)")
                XCTAssertFalse(found.truncated)
                // Newest first, within a time range, accepted ones only, cut at the limit: as brute force says.
                let since = Double(rng.next() % 200), until = since + Double(rng.next() % 300), limit = Int(rng.next() % 40)
                let expected = inBox.keys.filter { times[$0]! >= since && times[$0]! <= until && $0.hasSuffix("7") == false }
                    .sorted { (times[$0]!, $0) > (times[$1]!, $1) }
                let newest = index.newest(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon, since: since, until: until,
                                          limit: limit, accept: { !$0.hasSuffix("7") })
                XCTAssertEqual(newest.ids, Array(expected.prefix(limit)))
                XCTAssertEqual(newest.truncated, expected.count > limit)
            }
        }
        var index = ItemIndex()
        for i in 0..<10 { index.insert("x\(i)", at: GeoPoint(10, 10 + Double(i) * 0.001), time: Double(i)) }
        let limited = index.newest(minLat: 9, minLon: 9, maxLat: 11, maxLon: 11, limit: 4)
        XCTAssertEqual(limited.ids, ["x9", "x8", "x7", "x6"])
        XCTAssertTrue(limited.truncated)
    }
}
