import Routes
import SeededRandom
import XCTest

/// Which shard an item belongs to, and which shards a corridor follows: every item a corridor's
/// band holds must be in a shard it follows, or that corridor would never hear of it.
final class IntelShardsTests: XCTestCase {
    func testEveryPointOfABandLiesInAShardTheCorridorFollows() throws {
        let shards = IntelShards(degrees: 0.05)
        var random = SplitMix64(seed: 28)
        // A city, the antimeridian, high latitude, the equator; narrow and wide bands; bends.
        let paths: [([GeoPoint], Double)] = [
            ([GeoPoint(41.000, 28.950), GeoPoint(41.049, 29.051), GeoPoint(41.100, 29.000)], 300),
            ([GeoPoint(-17.70, 179.96), GeoPoint(-17.80, -179.93)], 2_000),
            ([GeoPoint(78.0, 15.0), GeoPoint(78.2, 16.5)], 5_000),
            ([GeoPoint(-0.05, 36.80), GeoPoint(0.05, 36.90)], 800),
            ([GeoPoint(52.3, 4.85), GeoPoint(52.3001, 4.85)], 20_000),
        ]
        var checked = 0
        for (path, width) in paths {
            let corridor = try Corridor(from: path[0], via: Array(path.dropFirst().dropLast()), to: path[path.count - 1], widthMeters: width)
            let followed = Set(shards.shards(covering: corridor))
            XCTAssertTrue(followed.contains(IntelShards.named), "every corridor follows the named items")
            // Points near a random place along the path, up to the band's width away each way.
            let spread = width / 111_000
            for _ in 0..<2_000 {
                let i = Int(random.next() % UInt64(path.count - 1))
                let along = path[i].interpolated(to: path[i + 1], fraction: random.uniform(0, 1))
                var lon = along.lon + random.uniform(-spread, spread) / max(0.05, cos(along.lat * .pi / 180))
                if lon > 180 { lon -= 360 } else if lon < -180 { lon += 360 }
                guard let p = GeoPoint(lat: along.lat + random.uniform(-spread, spread), lon: lon), corridor.contains(p) else { continue }
                checked += 1
                XCTAssertTrue(followed.contains(shards.shard(of: p)), "\(p) is in the band of \(path) but its shard \(shards.shard(of: p)) is not followed")
            }
        }
        XCTAssertGreaterThan(checked, 2_000, "enough points fell inside the bands")
    }

    func testAnItemOnABorderBelongsToOneShardAndNamedItemsToTheirs() throws {
        let shards = IntelShards(degrees: 0.05)
        // Bands are 0.05° of latitude from the south pole: 41.0° is a border between two.
        let south = shards.shard(of: GeoPoint(40.999_999, 29.0)), north = shards.shard(of: GeoPoint(41.000_001, 29.0))
        XCTAssertNotEqual(south, north)
        XCTAssertTrue([south, north].contains(shards.shard(of: GeoPoint(41.0, 29.0))), "a point on the border is in one of them")
        // An item's id names its shard, whatever its points (an item never changes shard).
        let shard = shards.shard(of: GeoPoint(41.0, 29.0))
        let posted = IntelItem(id: IntelShards.id(in: shard, token: "abc"), points: [GeoPoint(41.0, 29.0), GeoPoint(52.0, 4.0)],
                               kind: .disruption, author: .user("u"), tags: [], modes: [], body: "Tram 5 delayed", at: 0, expiresAt: 10)
        XCTAssertEqual(shards.shard(of: posted), shard)
        XCTAssertEqual(IntelShards.shard(ofID: posted.id), shard)
        XCTAssertEqual(IntelShards.shard(ofID: "n8Qe2"), IntelShards.named, "a named item's")
        XCTAssertEqual(IntelShards.shard(ofID: "i3kd92hdk3k2"), IntelShards.named, "an item stored before ids named shards")
        XCTAssertNil(IntelShards.shard(ofID: "ievil.x"), "a shard that is no cell: nobody's")
        XCTAssertNil(IntelShards.shard(ofID: "ic50000-1x.x"))
        XCTAssertNil(IntelShards.shard(ofID: ""))
        XCTAssertFalse(IntelShards(degrees: 0.1).isOnGrid(shard), "a cell of another size is not one of this grid's")
        XCTAssertTrue(shards.isOnGrid(shard))
    }
}
