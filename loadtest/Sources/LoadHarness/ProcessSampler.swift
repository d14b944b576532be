import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One reading of a process's CPU and memory.
public struct ServerSample: Sendable, Equatable, Codable {
    /// Seconds since the run started.
    public var t: Double
    /// CPU used since the previous sample, in percent of one core (200 = both cores of this machine).
    public var cpuPercent: Double
    public var rssKB: Int

    public init(t: Double, cpuPercent: Double, rssKB: Int) {
        self.t = t
        self.cpuPercent = cpuPercent
        self.rssKB = rssKB
    }
}

/// Samples a process on this machine from /proc (the server under test, or the harness itself).
public struct ProcessSampler: Sendable {
    public let pid: Int32
    private var lastTicks: Int?
    private var lastTime: Double?
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    public init(pid: Int32) { self.pid = pid }

    /// Reads /proc/PID/stat and /proc/PID/status; nil once the process is gone.
    public mutating func sample(at t: Double) -> ServerSample? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let ticks = Self.cpuTicks(stat: stat), let rss = Self.rssKB(status: status) else { return nil }
        var cpu = 0.0
        if let lastTicks, let lastTime, t > lastTime {
            cpu = Double(ticks - lastTicks) / Self.ticksPerSecond / (t - lastTime) * 100
        }
        lastTicks = ticks
        lastTime = t
        return ServerSample(t: t, cpuPercent: (cpu * 10).rounded() / 10, rssKB: rss)
    }

    /// utime + stime from a /proc/PID/stat line (fields 14 and 15, counted after the command's
    /// closing parenthesis because the command may hold spaces).
    public static func cpuTicks(stat: String) -> Int? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is the state (field 3), so utime (14) is fields[11] and stime (15) fields[12].
        guard fields.count > 12, let u = Int(fields[11]), let s = Int(fields[12]) else { return nil }
        return u + s
    }

    /// VmRSS from /proc/PID/status, in KB.
    public static func rssKB(status: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
        }
        return nil
    }
}
