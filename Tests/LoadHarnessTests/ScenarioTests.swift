import Foundation
import XCTest
import LoadHarness

final class ScenarioTests: XCTestCase {
    private func parse(_ text: String) throws -> Scenario { try Scenario.parse(Array(text.utf8)) }

    private func refusal(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "accepted"
        } catch {
            return "\(error)"
        }
    }

    /// Every shipped scenario file parses, and the ones the issue names are there.
    func testShippedScenariosParse() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/scenarios").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        for required in ["smoke", "friday-night", "reconnect-storm", "echo", "fanout", "rush-hour", "route-smoke"] {
            XCTAssertTrue(files.contains("\(required).json"), "config/scenarios/\(required).json is missing")
        }
        for f in files {
            let s = try Scenario.load(path: dir.appendingPathComponent(f).path)
            XCTAssertEqual(s.name + ".json", f, "a scenario's name is its file's name")
            XCTAssertFalse(s.thresholds.isEmpty, "\(f) states no thresholds")
        }
    }

    /// The soak runs 30 minutes unless told otherwise, and fails on a growing server RSS.
    func testSoakScenario() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/scenarios").standardized
        let s = try Scenario.load(path: dir.appendingPathComponent("soak.json").path)
        XCTAssertEqual(s.kind, .venues)
        XCTAssertEqual(s.durationSeconds, 1800)
        XCTAssertTrue(s.thresholds.contains { $0.metric == .maxRssSlopeKBPerMinute })
        let long = s.withDuration(try XCTUnwrap(Scenario.seconds(fromDuration: "2h")))
        XCTAssertEqual(long.durationSeconds, 7200)
        XCTAssertEqual(long.venues?.reconnectStorms.map(\.atSeconds), [1200, 2400, 3600, 4800, 6000], "storms keep their place in the clock")
        XCTAssertEqual(long.venues?.trackSeconds, s.venues?.trackSeconds, "a player's pace does not stretch")
    }

    func testDurationsTakeUnits() {
        XCTAssertEqual(Scenario.seconds(fromDuration: "1800"), 1800)
        XCTAssertEqual(Scenario.seconds(fromDuration: "90s"), 90)
        XCTAssertEqual(Scenario.seconds(fromDuration: "30m"), 1800)
        XCTAssertEqual(Scenario.seconds(fromDuration: "1.5h"), 5400)
        XCTAssertEqual(Scenario.seconds(fromDuration: "0.5"), 0.5)
        for bad in ["", "m", "30 m", "30min", "-5m", "0", "25h", "nan", "infs", "1e9"] {
            XCTAssertNil(Scenario.seconds(fromDuration: bad), bad)
        }
    }

    /// `--scale` takes a factor above 0, at most 1000: a NaN, an infinity or 1e300 used to trap in
    /// `scaled(by:)` converting the count to an Int (fuzz/regressions/scenario).
    func testScalesAreFactorsAbove0AtMost1000() {
        XCTAssertEqual(Scenario.scale(fromArgument: "0.37"), 0.37)
        XCTAssertEqual(Scenario.scale(fromArgument: "1000"), 1000)
        for bad in ["0", "-2", "1000.5", "1e300", "inf", "nan", "", "x2"] {
            XCTAssertNil(Scenario.scale(fromArgument: bad), bad)
        }
    }

    func testVenueScenarioFieldsAndDefaults() throws {
        let s = try parse("""
            {"name":"n","kind":"venues","durationSeconds":100,
             "venues":{"count":4,"patronsPerVenue":25,"clockFrom":"18:00","clockTo":"23:00",
                       "present":[{"at":"18:00","share":0.2},{"at":"20:30","share":1}],
                       "reconnectStorms":[{"at":"22:00","share":0.5}]},
             "thresholds":{"p99Ms":50,"minRecoveredShare":0.99}}
            """)
        XCTAssertEqual(s.kind, .venues)
        let v = try XCTUnwrap(s.venues)
        XCTAssertEqual(v.count, 4)
        XCTAssertEqual(v.patronsPerVenue, 25)
        XCTAssertEqual(v.tracksPerPlaylist, 40, "default")
        XCTAssertEqual(v.present.value(at: 0), 0.2)
        XCTAssertEqual(v.present.value(at: 50), 1, "20:30 is half way through 18:00–23:00")
        XCTAssertEqual(v.reconnectStorms.first?.atSeconds, 80)
        XCTAssertEqual(v.reconnectStorms.first?.withSince, true)
        XCTAssertEqual(s.thresholds, [Threshold(metric: .p99Ms, limit: 50), Threshold(metric: .minRecoveredShare, limit: 0.99)])
        XCTAssertEqual(s.peakConnections, 4 * 26 + 1)
        XCTAssertEqual(s.scaled(by: 2.5).venues?.count, 10)
        let short = s.withDuration(10)
        XCTAssertEqual(short.venues?.reconnectStorms.first?.atSeconds, 8, "the night keeps its shape")
        XCTAssertEqual(short.venues?.present.value(at: 5), 1)
        XCTAssertEqual(short.venues?.clock.clock(at: 5), "20:30")
    }

    func testRefusalsNameTheField() {
        XCTAssertEqual(refusal(#"{"kind":"echo"}"#), "name is missing")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"party"}"#), "kind must be venues, routes, tonight, echo or fanout, not party")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"echo","echo":{"connections":0}}"#), "echo.connections must be between 1 and 1000000, not 0")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"echo","echo":{"conections":5}}"#), "unknown field echo.conections")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"echo","echo":{},"colour":1}"#), "unknown field colour")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"echo","echo":{"messageBytes":"big"}}"#), "echo.messageBytes must be a whole number")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"venues"}"#), "venues is missing (kind venues)")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"tonight"}"#), "tonight is missing (kind tonight)")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"tonight","durationSeconds":60,"tonight":{"ingestAtSeconds":30,"reingestAtSeconds":20}}"#),
                       "tonight: ingestAtSeconds < reingestAtSeconds < durationSeconds")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"tonight","durationSeconds":60,"tonight":{"connectSeconds":40,"reingestAtSeconds":30}}"#),
                       "tonight.connectSeconds must end before reingestAtSeconds (every user is settled before the changes)")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"venues","venues":{"present":[{"at":"25:00","share":1}]}}"#),
                       "venues.present[0].at: 25:00 is not a time of day (HH:MM)")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"venues","venues":{"present":[{"at":"23:30","share":1}]}}"#),
                       "venues.present[0].at: 23:30 is outside the night 18:00–23:00")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"venues","venues":{"present":[{"at":"19:00","share":1},{"at":"18:30","share":1}]}}"#),
                       "venues.present: points must be in time order")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"venues","venues":{"present":[{"at":"19:00","share":1.5}]}}"#),
                       "venues.present[0].share must be between 0 and 1, not 1.5")
        XCTAssertEqual(refusal(#"{"name":"x","kind":"echo","echo":{},"thresholds":{"minRecoveredShare":1}}"#),
                       "thresholds.minRecoveredShare does not apply to a echo scenario")
        XCTAssertTrue(refusal(#"{"name":"x","kind":"echo","echo":{},"thresholds":{"p99":1}}"#).hasPrefix("unknown field thresholds.p99 (known: p50Ms"))
        XCTAssertTrue(refusal("{").hasPrefix("invalid JSON"))
    }

    func testThresholdsPassAndFail() {
        let summary = ["latencyP99Ms": 42.0, "recoveredShare": 0.95, "violations": 0]
        XCTAssertTrue(Threshold(metric: .p99Ms, limit: 50).evaluate(summary).passed)
        XCTAssertFalse(Threshold(metric: .p99Ms, limit: 40).evaluate(summary).passed)
        XCTAssertFalse(Threshold(metric: .minRecoveredShare, limit: 0.99).evaluate(summary).passed)
        XCTAssertTrue(Threshold(metric: .maxViolations, limit: 0).evaluate(summary).passed)
        let unmeasured = Threshold(metric: .minPushesPerSecond, limit: 1).evaluate(summary)
        XCTAssertFalse(unmeasured.passed, "a figure that was never measured cannot pass")
        XCTAssertNil(unmeasured.actual)
    }
}
