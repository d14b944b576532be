import Foundation
import Histogram
import LoadHarness
import CLinux

/// One benchmark's figures, printed as a table and as one JSON line.
struct BenchmarkResult {
    var mode: String
    var url: String
    var connections: Int
    var failedConnections: Int
    var messageSize: Int
    var seconds: Double
    var messages: Int
    var histogram: Histogram<UInt64>
    var errors: [String: Int]

    var rate: Double { seconds > 0 ? Double(messages) / seconds : 0 }
    func percentile(_ p: Double) -> UInt64 { histogram.totalCount == 0 ? 0 : histogram.valueAtPercentile(p) }

    func printTable() {
        let rows: [(String, String)] = [
            ("mode", mode), ("url", url), ("connections", "\(connections) (\(failedConnections) failed)"),
            ("message size", "\(messageSize) B"), ("measured", String(format: "%.1f s", seconds)),
            ("messages", "\(messages)"), ("messages/s", String(format: "%.0f", rate)),
            ("p50", "\(percentile(50)) µs"), ("p90", "\(percentile(90)) µs"), ("p99", "\(percentile(99)) µs"),
            ("p99.9", "\(percentile(99.9)) µs"), ("max", "\(histogram.totalCount == 0 ? 0 : histogram.max) µs"),
            ("errors", errors.isEmpty ? "none" : errors.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        for (k, v) in rows { FileHandle.standardError.write(Data("\(k.padding(toLength: width, withPad: " ", startingAt: 0))  \(v)\n".utf8)) }
    }

    func jsonLine() throws -> String {
        let object: [String: Any] = [
            "mode": mode, "url": url, "connections": connections, "failed_connections": failedConnections,
            "size": messageSize, "seconds": seconds, "messages": messages, "msgs_per_s": rate.rounded(),
            "p50_us": percentile(50), "p90_us": percentile(90), "p99_us": percentile(99), "p999_us": percentile(99.9),
            "max_us": histogram.totalCount == 0 ? 0 : histogram.max, "errors": errors,
        ]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}

/// A one-line progress indicator on stderr.
final class Progress {
    let total: Int
    let label: String
    private var count = 0
    private var lastPrinted = Date.distantPast

    init(total: Int, label: String) {
        self.total = total
        self.label = label
    }

    func tick() {
        count += 1
        if Date().timeIntervalSince(lastPrinted) > 0.5 || count == total {
            lastPrinted = Date()
            FileHandle.standardError.write(Data("\r\(label): \(count)/\(total)   ".utf8))
        }
    }

    func done() { FileHandle.standardError.write(Data("\n".utf8)) }
}

enum Clock {
    @inline(__always) static func nanos() -> UInt64 { clinux_now_ns() }
}

/// Raises this process's descriptor limit for `connections` (and some to spare); returns the limit.
func raiseFileLimit(for connections: Int) -> Int { clinux_raise_nofile_to(connections + 1024) }

/// A process's resident memory now, in KB (nil when it is gone).
func rssKB(of pid: Int) -> Int? {
    var sampler = ProcessSampler(pid: Int32(pid))
    return sampler.sample(at: 0)?.rssKB
}
