import Foundation
import XCTest
import LoadHarness

final class RSSSlopeTests: XCTestCase {
    /// Half an hour of one sample a second, RSS in KB from `rss(t)`.
    private func samples(_ rss: (Double) -> Double) -> [ServerSample] {
        (0..<1800).map { i in
            let t = Double(i)
            return ServerSample(t: t, cpuPercent: 10, rssKB: Int(rss(t).rounded()))
        }
    }

    /// A few dozen KB of jitter either way, as a real process shows.
    private func jitter(_ t: Double) -> Double { Int(t) % 3 == 0 ? 40 : (Int(t) % 3 == 1 ? -40 : 0) }

    private func report(_ server: [ServerSample]) throws -> RunReport {
        let scenario = try Scenario.parse(Array(#"{"name":"t","kind":"fanout","fanout":{},"thresholds":{"maxRssSlopeKBPerMinute":256}}"#.utf8))
        return RunReport(scenario: scenario, target: "hubbub", url: "ws://x", startedAt: Date(), seconds: 1800, total: Interval(),
                         connectionsOpened: 1, connectionsWanted: 1, connectFailures: [:], setupSeconds: 0, timeline: [], server: server)
    }

    func testLeastSquaresFindsTheLine() throws {
        let line = try XCTUnwrap(RSSSlope.leastSquares([(x: 0, y: 3), (x: 1, y: 5), (x: 2, y: 7), (x: 4, y: 11)]))
        XCTAssertEqual(line.slope, 2, accuracy: 1e-9)
        XCTAssertEqual(line.intercept, 3, accuracy: 1e-9)
        let noisy = try XCTUnwrap(RSSSlope.leastSquares([(x: 0, y: 1), (x: 1, y: 0), (x: 2, y: 3), (x: 3, y: 2)]))
        XCTAssertEqual(noisy.slope, 0.6, accuracy: 1e-9)
        XCTAssertEqual(noisy.intercept, 0.6, accuracy: 1e-9)
        XCTAssertNil(RSSSlope.leastSquares([(x: 1, y: 1)]), "one point has no slope")
        XCTAssertNil(RSSSlope.leastSquares([(x: 1, y: 1), (x: 1, y: 5)]), "nor points all at one time")
    }

    func testAFlatSeriesPasses() throws {
        let server = samples { 150_000 + self.jitter($0) }
        let slope = try XCTUnwrap(RSSSlope(secondHalfOf: server))
        XCTAssertEqual(slope.kbPerMinute, 0, accuracy: 1)
        XCTAssertEqual(slope.samples, 900)
        XCTAssertEqual(slope.fromSeconds, 900)
        XCTAssertEqual(slope.toSeconds, 1799)
        let run = try report(server)
        XCTAssertTrue(run.passed)
        XCTAssertEqual(run.summary["serverRssSlopeKBPerMinute"] ?? .nan, 0, accuracy: 1)
        XCTAssertNotNil(run.summary["serverRssSlopeMBPerHour"])
        XCTAssertTrue(run.table.contains("server RSS slope"))
    }

    /// Memory that rises while the server warms up and then stays is not a leak.
    func testGrowthInTheFirstHalfOnlyPasses() throws {
        let server = samples { t in (t < 900 ? 50_000 + 100 * t : 140_000) + self.jitter(t) }
        XCTAssertEqual(try XCTUnwrap(RSSSlope(secondHalfOf: server)).kbPerMinute, 0, accuracy: 1)
        XCTAssertTrue(try report(server).passed)
    }

    func testAGrowingSeriesFails() throws {
        // 1 MB a minute: 60 MB an hour.
        let server = samples { 150_000 + $0 * 1024 / 60 + self.jitter($0) }
        let slope = try XCTUnwrap(RSSSlope(secondHalfOf: server))
        XCTAssertEqual(slope.kbPerMinute, 1024, accuracy: 1)
        XCTAssertEqual(slope.mbPerHour, 60, accuracy: 0.1)
        XCTAssertEqual(slope.toKB - slope.fromKB, 899 * 1024 / 60, accuracy: 5, "the fitted line spans the second half")
        let run = try report(server)
        XCTAssertFalse(run.passed)
        XCTAssertEqual(run.thresholds.first?.metric, "maxRssSlopeKBPerMinute")
        XCTAssertEqual(run.thresholds.first?.actual ?? 0, 1024, accuracy: 1)
        XCTAssertTrue(run.table.contains("+60.00 MB/h"), run.table)
        let decoded = try JSONDecoder().decode(ResultFile.self, from: try ResultFile(runs: [run]).json())
        XCTAssertEqual(decoded.runs.first?.serverRssSlope, run.serverRssSlope, "result.json carries the slope")
        XCTAssertTrue(HTMLReport.render(ResultFile(runs: [run])).contains("fit, 2nd half: +60.00 MB/h"))
    }

    /// A slope that cannot be measured (no --server-pid, too short a run) fails its threshold.
    func testAnUnmeasuredSlopeFails() throws {
        XCTAssertNil(RSSSlope(secondHalfOf: []))
        XCTAssertNil(RSSSlope(secondHalfOf: Array(samples { _ in 1000 }.prefix(4))), "two samples in the second half are too few")
        let run = try report([])
        XCTAssertNil(run.serverRssSlope)
        XCTAssertNil(run.summary["serverRssSlopeKBPerMinute"])
        XCTAssertFalse(run.passed)
        XCTAssertNil(run.thresholds.first?.actual)
    }
}
