import HubbubTestSupport
import Realtime
import VenueService
import XCTest

/// Owners changing different settings at the same moment all keep their change: the venue reads
/// and writes its settings in one step, after the ownership check (which waits for the store),
/// not before it. The interleaving is not forced, but every patch suspends at that check while the
/// others arrive: with the old order (settings read before the check) the first round already
/// loses changes.
final class SettingsRaceTests: XCTestCase {
    func testConcurrentPatchesOfDifferentSettingsAllStay() async throws {
        let h = try DomainHarness.venues()
        let owner = h.connection()
        let venue = try await h.call("venue.register", ["name": "Bar", "address": "1 St", "postcode": "1", "city": "C", "country": "X",
                                                        "lat": 1, "lon": 2], user: "owner", member: owner)["venue"]!["id"]!
        for round in 1...10 {
            let patches: [JSON] = [["votesPerUserPerHour": .int(100 + round)], ["requestsPerUserPerHour": .int(50 + round)],
                                   ["noRepeatHours": .int(round)], ["fairMode": .bool(round % 2 == 0)],
                                   ["fairModeMaxPendingPerUser": .int(1 + round)], ["explicitAllowed": .bool(round % 2 == 1)]]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for patch in patches {
                    guard case .object(let fields) = patch else { continue }
                    group.addTask {
                        try await h.call("venue.settings.set", .object([("venue", venue)] + fields), user: "owner", member: h.connection())
                    }
                }
                try await group.waitForAll()
            }
            let settings = try await h.call("venue.playlist.get", ["venue": venue], user: "owner", member: owner)["playlist"]?["settings"]
            for patch in patches {
                guard case .object(let fields) = patch, let (name, value) = fields.first else { continue }
                XCTAssertEqual(settings?[name], value, "round \(round): \(name) was lost")
            }
        }
    }
}
