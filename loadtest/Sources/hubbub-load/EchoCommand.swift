import ArgumentParser
import Foundation
import Histogram
import HubbubClient
import Transport
import WebSocket

/// `echo`: C connections each keep one message of S bytes in flight against an echo endpoint
/// for D seconds; reports messages/s and round-trip latency percentiles.
struct EchoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "echo", abstract: "Echo throughput and round-trip latency.")

    @Option(help: "Echo endpoint (ws:// or wss://).") var url = "ws://127.0.0.1:8080/echo"
    @Option(name: .shortAndLong, help: "Connections.") var connections = 100
    @Option(name: .shortAndLong, help: "Message size in bytes (at least 8).") var size = 32
    @Option(name: .shortAndLong, help: "Measured seconds.") var duration = 10.0
    @Option(help: "Warm-up seconds before measuring.") var warmup = 1.0
    @Option(help: "Messages in flight per connection.") var inflight = 1
    @Option(help: "Client event loops (threads).") var loops = 1
    @Flag(help: "Send text frames instead of binary.") var text = false
    @Flag(help: "Offer permessage-deflate.") var compression = false
    @Option(help: "CA file to verify a wss:// server (default: accept any certificate).") var caFile: String?
    @Option(help: "Write the JSON result here too.") var json: String?
    @Option(help: "Connections opened at once while connecting.") var connectConcurrency = 200
    @Option(help: "Microseconds each client loop polls before sleeping (latency on VMs).") var spin = 100
    @Option(help: "Paced instead of closed-loop: each connection sends this many messages per second, whatever the echoes (latency under another load, e.g. a feed ingest).")
    var rate: Double?

    func validate() throws {
        guard size >= 8 else { throw ValidationError("--size must be at least 8 (a timestamp rides in each message)") }
        guard connections >= 1, duration > 0, inflight >= 1, loops >= 1 else { throw ValidationError("counts must be positive") }
    }

    func run() async throws {
        _ = raiseFileLimit(for: connections)
        let target = try ClientURL(url)
        var tls: TLSContext?
        if target.secure { tls = try TLSContext.client(verify: caFile != nil, caFile: caFile) }
        var config = TransportConfiguration()
        config.maxOutboundBytes = 1 << 30
        config.spinMicros = spin
        let eventLoops = try (0..<loops).map { try EventLoop.makeClientLoop(index: $0, configuration: config) }
        let states = eventLoops.map { _ in EchoLoopState() }
        let options = ClientOptions(host: target.host, port: target.port, path: target.path, tls: tls, offerDeflate: compression,
                                    minimumCompressed: 0)
        let payload = (0..<size).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        let kind: MessageKind = text ? .text : .binary
        let inflight = self.inflight

        let (opened, failures) = await openConnections(
            count: connections, loops: eventLoops, concurrency: connectConcurrency,
            options: { _ in options },
            makeHandler: { i in EchoDriver(state: states[i % states.count], payload: payload, kind: kind, paced: rate != nil) },
            onOpen: { i, c in
                states[i % states.count].connections.append(c)
                if rate == nil { for _ in 0..<inflight { EchoDriver.sendOne(c, payload: payload, kind: kind) } }
            })
        guard opened > 0 else {
            throw ValidationError("no connection could be opened: \(failures)")
        }

        let pacer = rate.map { rate in
            Task {
                while !Task.isCancelled {
                    for (loop, state) in zip(eventLoops, states) {
                        loop.execute { _ in for c in state.connections { EchoDriver.sendOne(c, payload: payload, kind: kind) } }
                    }
                    try? await Task.sleep(nanoseconds: UInt64(1e9 / rate))
                }
            }
        }
        defer { pacer?.cancel() }
        try await Task.sleep(nanoseconds: UInt64(warmup * 1e9))
        for (loop, state) in zip(eventLoops, states) { loop.execute { _ in state.beginMeasuring() } }
        let started = Date()
        let ticker = Progress(total: Int(duration), label: "measuring")
        var elapsed = 0.0
        while elapsed < duration {
            let step = min(1.0, duration - elapsed)
            try await Task.sleep(nanoseconds: UInt64(step * 1e9))
            elapsed += step
            ticker.tick()
        }
        ticker.done()
        let measured = Date().timeIntervalSince(started)
        var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        var messages = 0
        var closes: [String: Int] = [:]
        for (loop, state) in zip(eventLoops, states) {
            let snap = await withCheckedContinuation { (done: CheckedContinuation<EchoLoopState.Snapshot, Never>) in
                loop.execute { _ in done.resume(returning: state.finish()) }
            }
            histogram.add(snap.histogram)
            messages += snap.messages
            for (k, v) in snap.closes { closes[k, default: 0] += v }
        }
        for loop in eventLoops { loop.shutdownClientLoop() }

        let result = BenchmarkResult(mode: "echo", url: url, connections: opened, failedConnections: failures.values.reduce(0, +),
                                     messageSize: size, seconds: measured, messages: messages, histogram: histogram,
                                     errors: failures.merging(closes) { $0 + $1 })
        result.printTable()
        let line = try result.jsonLine()
        print(line)
        if let json { try (line + "\n").write(toFile: json, atomically: true, encoding: .utf8) }
    }
}

/// Per-loop measurement state; touched only on its loop's thread.
final class EchoLoopState: @unchecked Sendable {
    var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    var messages = 0
    var measuring = false
    var running = true
    var connections: [WebSocketConnection] = []
    var closes: [String: Int] = [:]

    struct Snapshot: @unchecked Sendable {
        var histogram: Histogram<UInt64>
        var messages: Int
        var closes: [String: Int]
    }

    func beginMeasuring() {
        histogram.reset()
        messages = 0
        measuring = true
    }

    func finish() -> Snapshot {
        measuring = false
        running = false
        return Snapshot(histogram: histogram, messages: messages, closes: closes)
    }
}

/// Echo client logic: measure the round trip of each echo, then send the next message.
final class EchoDriver: WebSocketHandler {
    let state: EchoLoopState
    let payload: [UInt8]
    let kind: MessageKind
    /// Sends on a pace of its own rather than on each echo.
    let paced: Bool

    init(state: EchoLoopState, payload: [UInt8], kind: MessageKind, paced: Bool = false) {
        self.state = state
        self.payload = payload
        self.kind = kind
        self.paced = paced
    }

    static func sendOne(_ c: WebSocketConnection, payload: [UInt8], kind: MessageKind) {
        var p = payload
        let now = Clock.nanos()
        // A timestamp in the first 8 bytes as hex-free ASCII-safe digits would cost more; binary is fine
        // for binary frames, and text frames carry it in base-32 letters.
        if kind == .binary {
            withUnsafeBytes(of: now) { for i in 0..<8 { p[i] = $0[i] } }
        } else {
            var v = now
            for i in 0..<8 { p[i] = UInt8(ascii: "a") + UInt8(v & 15); v >>= 4 }
            // 8 nibbles are not enough for a full timestamp: keep the low 32 bits, enough for RTTs under 4 s.
        }
        p.withUnsafeBytes { c.sendFrame(kind, payload: $0) }
    }

    /// When an echoed message was sent (by `sendOne`), read from its first 8 bytes.
    static func sentAt(_ message: Message, now: UInt64) -> UInt64 {
        var sent: UInt64 = 0
        if message.kind == .binary {
            message.data.withUnsafeBytes { sent = $0.loadUnaligned(as: UInt64.self) }
        } else {
            for i in (0..<8).reversed() { sent = sent << 4 | UInt64(message.data[i] &- UInt8(ascii: "a")) & 15 }
            sent |= now & ~0xFFFF_FFFF
            if sent > now { sent &-= 1 << 32 }
        }
        return sent
    }

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        guard message.data.count >= 8 else { return }
        let now = Clock.nanos()
        let sent = EchoDriver.sentAt(message, now: now)
        if state.measuring {
            _ = state.histogram.record((now &- sent) / 1000)
            state.messages += 1
        }
        if state.running, !paced { EchoDriver.sendOne(connection, payload: payload, kind: kind) }
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
        if state.running { state.closes["close_\(code.rawValue)", default: 0] += 1 }
    }
}
