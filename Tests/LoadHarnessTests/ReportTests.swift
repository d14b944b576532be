import Foundation
import XCTest
import LoadHarness

final class ReportTests: XCTestCase {
    private func scenario() throws -> Scenario {
        try Scenario.parse(Array(#"{"name":"t","kind":"fanout","fanout":{},"thresholds":{"p99Ms":50,"maxMissing":0}}"#.utf8))
    }

    private func interval(latenciesMs: [Double], received: Int, missing: Int = 0) -> Interval {
        var i = Interval()
        for ms in latenciesMs { i.recordLatency(nanos: UInt64(ms * 1e6)) }
        i.received = received
        i.sent = received
        i.violations.missing = missing
        return i
    }

    func testThresholdsDecideTheResult() throws {
        let good = RunReport(scenario: try scenario(), target: "hubbub", url: "ws://x", startedAt: Date(), seconds: 10,
                             total: interval(latenciesMs: Array(repeating: 2, count: 100), received: 1000),
                             connectionsOpened: 10, connectionsWanted: 10, connectFailures: [:], setupSeconds: 1, timeline: [], server: [])
        XCTAssertTrue(good.passed)
        XCTAssertEqual(good.summary["pushesPerSecond"], 100)
        XCTAssertEqual(good.summary["latencyP99Ms"] ?? 0, 2, accuracy: 0.01)
        let slow = RunReport(scenario: try scenario(), target: "hubbub", url: "ws://x", startedAt: Date(), seconds: 10,
                             total: interval(latenciesMs: Array(repeating: 2, count: 90) + Array(repeating: 80, count: 10), received: 1000, missing: 3),
                             connectionsOpened: 10, connectionsWanted: 10, connectFailures: [:], setupSeconds: 1, timeline: [], server: [])
        XCTAssertFalse(slow.passed)
        XCTAssertEqual(slow.thresholds.map(\.passed), [false, false])
        XCTAssertTrue(slow.table.contains("FAIL"))
        XCTAssertFalse(ResultFile(runs: [good, slow]).passed)
    }

    /// The HTML report draws its plots inline and fetches nothing.
    func testHTMLIsSelfContainedWithPlots() throws {
        let rows = (1...5).map { t in
            TimelineRow(t: Double(t), clock: nil, connections: 10 * t, seconds: 1,
                        interval: interval(latenciesMs: [Double(t), Double(2 * t)], received: 100 * t))
        }
        let samples = (0...5).map { ServerSample(t: Double($0), cpuPercent: Double(10 * $0), rssKB: 1000 + $0) }
        let run = RunReport(scenario: try scenario(), target: "hubbub <&>", url: "ws://x", startedAt: Date(), seconds: 5,
                            total: interval(latenciesMs: [1, 2], received: 1500), connectionsOpened: 50, connectionsWanted: 50,
                            connectFailures: [:], setupSeconds: 1, timeline: rows, server: samples)
        let html = HTMLReport.render(ResultFile(runs: [run]))
        XCTAssertTrue(html.hasPrefix("<!doctype html>"))
        XCTAssertEqual(html.components(separatedBy: "<svg").count - 1, 5, "latency, throughput, connections, CPU, RSS")
        let lines: Int = html.components(separatedBy: "<polyline").count - 1
        XCTAssertEqual(lines, 10, "4 percentiles, 2 rates, connections, CPU, RSS and its fit over the second half")
        XCTAssertFalse(html.contains("<script"))
        XCTAssertFalse(html.contains("src=\""), "nothing loaded from anywhere")
        XCTAssertFalse(html.contains("href=\""))
        XCTAssertTrue(html.contains("hubbub &lt;&amp;&gt;"), "names are escaped")
        let json = try ResultFile(runs: [run]).json()
        let decoded = try JSONDecoder().decode(ResultFile.self, from: json)
        XCTAssertEqual(decoded.runs.first?.timeline, rows)
        XCTAssertEqual(decoded.passed, run.passed)
    }

    func testReadsProcFiles() {
        let stat = "1234 (hubbub worker) S 1 1234 1234 0 -1 4194560 500 0 0 0 150 25 0 0 20 0 3 0 100 1000000 2000 18446744073709551615"
        XCTAssertEqual(ProcessSampler.cpuTicks(stat: stat), 175, "utime + stime, a command with a space in it")
        XCTAssertEqual(ProcessSampler.rssKB(status: "Name:\thubbub\nVmPeak:\t 9999 kB\nVmRSS:\t   31337 kB\nThreads:\t3\n"), 31337)
        XCTAssertNil(ProcessSampler.rssKB(status: "Name:\tx\n"))
        var me = ProcessSampler(pid: getpid())
        XCTAssertGreaterThan(me.sample(at: 0)?.rssKB ?? 0, 1000)
    }

    func testChartTicksAreRound() {
        XCTAssertEqual(SVGChart.niceCeiling(73), 100)
        XCTAssertEqual(SVGChart.niceCeiling(0.3), 0.5)
        XCTAssertEqual(SVGChart.niceCeiling(1500), 2000)
        XCTAssertEqual(SVGChart.tick(2_500_000), "2.5M")
        XCTAssertEqual(SVGChart.tick(25_000), "25k")
    }
}
