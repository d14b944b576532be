import Foundation
import Venues
import VenueService
import XCTest

/// The hand-written stored form of a jukebox reads back, through Codable, to the same state.
final class StoredStateTests: XCTestCase {
    func testStoredJSONRoundTripsThroughCodable() throws {
        var j = Jukebox(settings: VenueSettings(explicitAllowed: false, votesPerUserPerHour: 7, noRepeatHours: 2, fairMode: true))
        let tracks = (0..<20).map { Track(uri: "t\($0)", title: "Tïtle \"\($0)\"\n", artist: "A\\B", explicit: false,
                                          durationMs: $0 % 2 == 0 ? 1000 * $0 : nil, coverUrl: $0 % 3 == 0 ? "https://x/\($0)" : nil) }
        _ = try j.setPlaylist(uri: "p1", creator: "dj", tracks: tracks, now: 1_700_000_000.25)
        for (i, user) in ["u1", "u2", "u3"].enumerated() {
            _ = try j.vote(user: user, uri: "t\(i + 3)", now: 1_700_000_100.5 + Double(i))
            _ = try j.request(user: user, track: Track(uri: "r\(i)", title: "Req \(i)", artist: "Z"), now: 1_700_000_200 + Double(i) / 3)
        }
        _ = try j.nowPlaying(uri: "t3")
        _ = try j.trackEnded(uri: "t5", now: 1_700_000_300.125)
        let decoded = try JSONDecoder().decode(JukeboxRecord.self, from: Data(j.records.storedJSON.utf8))
        XCTAssertEqual(decoded, j.records)
        XCTAssertEqual(Jukebox(restoring: decoded).order, j.order)
    }
}
