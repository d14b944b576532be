import CLinux
import Foundation
import HubbubClient
import LoadHarness
import Synchronization
import Transport
import WebSocket

/// The harness's client side: its event loops, where each connection comes from, the per-loop
/// meters, and the count of open connections.
final class ClientFleet: Sendable {
    let loops: [EventLoop]
    let meters: [LoopMeter]
    /// The servers (several nodes of one service): connection `i` goes to `targets[(i + hop) % n]`.
    let targets: [ClientURL]
    var target: ClientURL { targets[0] }
    let tls: TLSContext?
    let settings: Scenario.ClientSettings
    /// Connections open right now (all loops).
    let open = Atomic<Int>(0)

    init(url: String, path: String, settings: Scenario.ClientSettings, expectedConnections: Int) throws {
        let limit = raiseFileLimit(for: expectedConnections)
        if limit < expectedConnections + 64 {
            throw LoadError("the file descriptor limit is \(limit), below the \(expectedConnections) connections this scenario opens; run as root or raise `ulimit -n`")
        }
        let portsPerAddress = 28_000 // 32768–60999, the default ephemeral range
        if expectedConnections > portsPerAddress * settings.sourceAddresses {
            throw LoadError("\(expectedConnections) connections need at least \((expectedConnections + portsPerAddress - 1) / portsPerAddress) source addresses (client.sourceAddresses is \(settings.sourceAddresses))")
        }
        // Several URLs, comma-separated: the nodes of one service; clients are spread over them.
        targets = try url.split(separator: ",").map { try ClientURL(String($0) + (path == "/" ? "" : path)) }
        guard !targets.isEmpty else { throw LoadError("no URL given") }
        tls = targets.contains(where: \.secure) ? try TLSContext.client(verify: false) : nil
        self.settings = settings
        var config = TransportConfiguration()
        config.maxOutboundBytes = 1 << 30
        config.spinMicros = settings.spinMicros
        // The harness sends no pings and times nothing out: the server's behaviour is what is measured.
        config.webSocket = .init(pingIntervalNanos: 0, idleTimeoutNanos: 0)
        loops = try (0..<settings.loops).map { try EventLoop.makeClientLoop(index: $0, configuration: config) }
        meters = loops.map { _ in LoopMeter() }
    }

    /// Connection `i`'s options: its server (spread round robin over the URLs; `hop` moves it on
    /// to the next one, after a node closed it) and its source address (127.0.0.1, .2, ... round
    /// robin when the server is on loopback).
    func options(_ i: Int, hop: Int = 0) -> ClientOptions {
        let target = targets[node(i, hop: hop)]
        var source: String?
        if settings.sourceAddresses > 1, target.host.hasPrefix("127.") {
            source = "127.0.0.\(1 + i % settings.sourceAddresses)"
        }
        return ClientOptions(host: target.host, port: target.port, path: target.path, tls: target.secure ? tls : nil,
                             offerDeflate: settings.compression, minimumCompressed: 0, sourceAddress: source)
    }

    /// Connection `i`'s server, as an index among the URLs.
    func node(_ i: Int, hop: Int) -> Int { (i + hop) % targets.count }

    /// How many servers the clients are spread over.
    var targetCount: Int { targets.count }

    func loop(_ i: Int) -> EventLoop { loops[i % loops.count] }
    func meter(_ i: Int) -> LoopMeter { meters[i % meters.count] }

    /// What every loop measured since the last call (each loop's meter is reset on its thread).
    func harvest() async -> Interval {
        var total = Interval()
        for (loop, meter) in zip(loops, meters) {
            let part = await withCheckedContinuation { (done: CheckedContinuation<Interval, Never>) in
                loop.execute { _ in done.resume(returning: meter.take()) }
            }
            total.merge(part)
        }
        return total
    }

    func shutdown() {
        for loop in loops { loop.shutdownClientLoop() }
    }
}

/// One loop's running interval: written only on that loop's thread.
final class LoopMeter: @unchecked Sendable {
    var now = Interval()
    /// Measure only while true (set-up traffic is not part of the result).
    var measuring = false

    func take() -> Interval {
        let out = now
        now = Interval()
        return out
    }
}

/// Once a second: harvest the loops, sample the server, print the progress line, keep the timeline.
final class RunRecorder {
    let fleet: ClientFleet
    var sampler: ProcessSampler?
    let clockLabel: (Double) -> String?
    private(set) var timeline: [TimelineRow] = []
    private(set) var server: [ServerSample] = []
    /// The harness itself, sampled alike: a saturated load generator makes the server look slow.
    private var selfSampler = ProcessSampler(pid: getpid())
    private(set) var harness: [ServerSample] = []
    private(set) var total = Interval()
    let started = Date()
    private var last = Date()

    init(fleet: ClientFleet, serverPid: Int32?, clockLabel: @escaping (Double) -> String? = { _ in nil }) {
        self.fleet = fleet
        sampler = serverPid.map(ProcessSampler.init(pid:))
        self.clockLabel = clockLabel
        if let me = selfSampler.sample(at: 0) { harness.append(me) }
        if var s = sampler, let first = s.sample(at: 0) {
            server.append(first)
            sampler = s
        }
    }

    var elapsed: Double { Date().timeIntervalSince(started) }

    /// Collects one interval (call about once a second).
    func record(extraStatus: String = "") async {
        let part = await fleet.harvest()
        let now = Date()
        let seconds = now.timeIntervalSince(last)
        last = now
        let t = now.timeIntervalSince(started)
        total.merge(part)
        let row = TimelineRow(t: t, clock: clockLabel(t), connections: fleet.open.load(ordering: .relaxed), seconds: seconds, interval: part)
        timeline.append(row)
        if var s = sampler, let sample = s.sample(at: t) {
            server.append(sample)
            sampler = s
        }
        if let me = selfSampler.sample(at: t) { harness.append(me) }
        let cpu = (server.last.map { " server \(Int($0.cpuPercent))% \($0.rssKB / 1024) MB" } ?? "") + (harness.last.map { " harness \(Int($0.cpuPercent))%" } ?? "")
        let line = String(format: "\r%@ t=%.0fs conns %d recv/s %.0f acked/s %.0f p99 %.1f ms errors %d violations %d%@%@   ",
                          row.clock ?? "", t, row.connections, row.receivedPerSecond, row.ackedPerSecond, row.p99Ms,
                          total.errors.values.reduce(0, +) + total.closes.values.reduce(0, +), total.violations.total, cpu, extraStatus)
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finishLine() { FileHandle.standardError.write(Data("\n".utf8)) }
}
