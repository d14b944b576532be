import XCTest
import LoadHarness
import Routes

/// The `routes` section of a scenario file: read strictly, like the venues' one.
final class RouteScenarioTests: XCTestCase {
    private func parse(_ text: String) throws -> Scenario { try Scenario.parse(Array(text.utf8)) }

    private func refusal(_ routes: String) -> String {
        do {
            _ = try parse(#"{"name":"r","kind":"routes","routes":"# + routes + "}")
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    func testFieldsAndDefaults() throws {
        let s = try parse("""
            {"name":"r","kind":"routes","durationSeconds":150,
             "routes":{"travellers":200,"city":{"lat":48.85,"lon":2.35,"radiusKm":10},"hubs":5,"popularRoutes":6,
                       "popularShare":0.5,"widthMeters":250,"viaPoints":2,"seed":9,"clockFrom":"07:00","clockTo":"09:30",
                       "present":[{"at":"07:00","share":0.1},{"at":"08:15","share":1}],
                       "postsPerTravellerPerMinute":2,"providerBurstItems":10,"providerBurstSeconds":3},
             "thresholds":{"p99Ms":50,"minActionsPerSecond":1,"maxErrorShare":0.01}}
            """)
        XCTAssertEqual(s.kind, .routes)
        let r = try XCTUnwrap(s.routes)
        XCTAssertEqual(r.travellers, 200)
        XCTAssertEqual(r.city, Scenario.City(center: GeoPoint(48.85, 2.35), radiusKm: 10))
        XCTAssertEqual(r.hubs, 5)
        XCTAssertEqual(r.popularRoutes, 6)
        XCTAssertEqual(r.widthMeters, 250)
        XCTAssertEqual(r.seed, 9)
        XCTAssertEqual(r.present.value(at: 0), 0.1)
        XCTAssertEqual(r.present.value(at: 75), 1, "08:15 is half way through 07:00–09:30")
        XCTAssertEqual(r.postsPerTravellerPerMinute, 2)
        XCTAssertEqual(r.likesPerTravellerPerMinute, 1, "default")
        XCTAssertEqual(r.offCorridorShare, 0.2, "default")
        XCTAssertEqual(r.providerBurstItems, 10)
        XCTAssertEqual(r.providerSource, "load-provider", "default")
        XCTAssertEqual(s.peakConnections, 201)
        XCTAssertEqual(s.scaled(by: 0.1).routes?.travellers, 20)
        let short = s.withDuration(15)
        XCTAssertEqual(short.routes?.clock.clock(at: 7.5), "08:15", "the morning keeps its shape")
        XCTAssertEqual(short.routes?.present.value(at: 7.5), 1)
        XCTAssertEqual(short.routes?.providerBurstSeconds, 3, "the provider's pace does not stretch")
    }

    func testProviderIsOffByDefault() throws {
        let r = try XCTUnwrap(try parse(#"{"name":"r","kind":"routes","routes":{}}"#).routes)
        XCTAssertEqual(r.providerBurstItems, 0)
        XCTAssertEqual(r.clock.clock(at: 0), "07:00")
    }

    /// Misspelt and out-of-range fields are refused by their path.
    func testRefusalsNameTheField() {
        XCTAssertEqual(refusalOfMissingSection(), "routes is missing (kind routes)")
        XCTAssertEqual(refusal(#"{"travelers":10}"#), "unknown field routes.travelers")
        XCTAssertEqual(refusal(#"{"travellers":0}"#), "routes.travellers must be between 1 and 1000000, not 0")
        XCTAssertEqual(refusal(#"{"city":{"lat":41,"lng":29}}"#), "unknown field routes.city.lng")
        XCTAssertEqual(refusal(#"{"city":{"radiusKm":500}}"#), "routes.city.radiusKm must be between 0.5 and 100, not 500")
        XCTAssertEqual(refusal(#"{"city":{"lat":0,"lon":179.99,"radiusKm":10}}"#), "routes.city must not reach the antimeridian (lon ± radius)")
        XCTAssertEqual(refusal(#"{"popularShare":1.5}"#), "routes.popularShare must be between 0 and 1, not 1.5")
        XCTAssertEqual(refusal(#"{"hubs":3,"popularRoutes":7}"#),
                       "routes.popularRoutes must be at most hubs × (hubs − 1) = 6 (distinct hub-to-hub routes), not 7")
        XCTAssertEqual(refusal(#"{"popularRoutes":0,"popularShare":0.5}"#), "routes.popularShare needs routes.popularRoutes of at least 1")
        XCTAssertEqual(refusal(#"{"widthMeters":5}"#), "routes.widthMeters must be between 10 and 20000, not 5")
        XCTAssertEqual(refusal(#"{"viaPoints":26}"#), "routes.viaPoints must be between 0 and 25, not 26")
        XCTAssertEqual(refusal(#"{"present":[{"at":"10:00","share":1}]}"#), "routes.present[0].at: 10:00 is outside the night 07:00–09:30")
        XCTAssertEqual(refusal(#"{"present":[{"at":"08:00","shar":1}]}"#), "routes.present[0].share is missing")
        XCTAssertEqual(refusal(#"{"postsPerTravellerPerMinute":-1}"#), "routes.postsPerTravellerPerMinute must be between 0 and 600, not -1")
        XCTAssertEqual(refusal(#"{"providerBurstItems":1.5}"#), "routes.providerBurstItems must be a whole number")
        XCTAssertEqual(refusal(#"{"providerBurstSeconds":0}"#), "routes.providerBurstSeconds must be between 0.1 and 86400, not 0")
        XCTAssertEqual(refusal(#"{"providerSource":""}"#), "routes.providerSource must not be empty")
        XCTAssertEqual(refusal(#"{"thinkTimeMinMs":500,"thinkTimeMaxMs":100}"#), "routes.thinkTimeMinMs must not exceed routes.thinkTimeMaxMs")
    }

    private func refusalOfMissingSection() -> String {
        do {
            _ = try parse(#"{"name":"r","kind":"routes"}"#)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    func testThresholdsOfRoutes() throws {
        XCTAssertNoThrow(try parse(#"{"name":"r","kind":"routes","routes":{},"thresholds":{"minActionsPerSecond":1,"maxErrorShare":0.1,"maxMissing":0}}"#))
        XCTAssertThrowsError(try parse(#"{"name":"r","kind":"routes","routes":{},"thresholds":{"minRecoveredShare":1}}"#))
        XCTAssertThrowsError(try parse(#"{"name":"r","kind":"routes","routes":{},"thresholds":{"minMessagesPerSecond":1}}"#))
    }

    /// The shipped rush hour is the issue's: 15,000 travellers, over more than one source address.
    func testShippedRushHour() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/scenarios").standardized
        let s = try Scenario.load(path: dir.appendingPathComponent("rush-hour.json").path)
        XCTAssertEqual(s.routes?.travellers, 15_000)
        XCTAssertGreaterThan(s.client.sourceAddresses, 1, "15,000 connections from one address meet the server's per-address limit")
        XCTAssertTrue(s.thresholds.contains(Threshold(metric: .p99Ms, limit: 50)))
        let smoke = try Scenario.load(path: dir.appendingPathComponent("route-smoke.json").path)
        XCTAssertEqual(smoke.kind, .routes)
        XCTAssertLessThanOrEqual(smoke.durationSeconds, 10)
    }
}
