import Foundation
import LoadHarness
import Synchronization
import Transport
import WebSocket

/// The `echo` scenario: each connection keeps `inflight` messages going against any echo endpoint.
final class EchoRun: @unchecked Sendable {
    let scenario: Scenario
    let settings: Scenario.EchoSettings
    let fleet: ClientFleet
    let running = Atomic<Bool>(true)

    init(scenario: Scenario, fleet: ClientFleet) {
        self.scenario = scenario
        settings = scenario.echo!
        self.fleet = fleet
    }

    /// Opens the connections and starts the echoes; returns the count opened and the failures.
    func start() async -> (Int, [String: Int]) {
        let payload = (0..<settings.messageBytes).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        let inflight = settings.inflight
        return await openConnections(
            count: settings.connections, loops: fleet.loops, concurrency: fleet.settings.connectConcurrency,
            options: { self.fleet.options($0) },
            makeHandler: { i in EchoMeasurer(meter: self.fleet.meter(i), payload: payload, run: self) },
            onOpen: { _, c in
                self.fleet.open.add(1, ordering: .relaxed)
                for _ in 0..<inflight { EchoDriver.sendOne(c, payload: payload, kind: .binary) }
            })
    }

    func play(recorder: RunRecorder) async {
        try? await Task.sleep(nanoseconds: UInt64(settings.warmupSeconds * 1e9))
        _ = await fleet.harvest() // the warm-up is not measured
        let start = Date()
        while Date().timeIntervalSince(start) < scenario.durationSeconds {
            try? await Task.sleep(nanoseconds: UInt64(min(1, scenario.durationSeconds - Date().timeIntervalSince(start)) * 1e9))
            await recorder.record()
        }
        running.store(false, ordering: .relaxed)
    }
}

/// Times each echo and sends the next message.
final class EchoMeasurer: WebSocketHandler {
    let meter: LoopMeter
    let payload: [UInt8]
    let run: EchoRun

    init(meter: LoopMeter, payload: [UInt8], run: EchoRun) {
        self.meter = meter
        self.payload = payload
        self.run = run
    }

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        guard message.data.count >= 8 else { return }
        let now = Clock.nanos()
        meter.now.recordLatency(nanos: now &- EchoDriver.sentAt(message, now: now))
        meter.now.received += 1
        guard run.running.load(ordering: .relaxed) else { return }
        meter.now.sent += 1
        EchoDriver.sendOne(connection, payload: payload, kind: .binary)
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
        run.fleet.open.subtract(1, ordering: .relaxed)
        if run.running.load(ordering: .relaxed) { meter.now.closes["\(code.rawValue)", default: 0] += 1 }
    }
}

/// The `fanout` scenario: C subscribers and P publishers on one broadcast endpoint (every message
/// goes to every connection); publishers send R messages/s each, stamped with the send time,
/// the publisher and a sequence number, so every delivery is timed and checked for gaps.
final class FanoutRun: @unchecked Sendable {
    let scenario: Scenario
    let settings: Scenario.FanoutSettings
    let fleet: ClientFleet
    let running = Atomic<Bool>(true)
    private(set) var publishers: [ConnectionHandle?] = []
    /// Subscribers whose connection opened.
    private let subscribed = Atomic<Int>(0)
    private let publisherBox = Mutex<[Int: ConnectionHandle]>([:])
    /// Messages sent by all publishers (deliveries expected = this × subscribers).
    let published = Atomic<Int>(0)

    init(scenario: Scenario, fleet: ClientFleet) {
        self.scenario = scenario
        settings = scenario.fanout!
        self.fleet = fleet
    }

    func start() async -> (Int, [String: Int]) {
        let subs = settings.subscribers, pubs = settings.publishers
        let (opened, failures) = await openConnections(
            count: subs + pubs, loops: fleet.loops, concurrency: fleet.settings.connectConcurrency,
            options: { self.fleet.options($0) },
            makeHandler: { i in
                if i < subs {
                    return FanoutSubscriber(meter: self.fleet.meter(i), publishers: pubs, run: self)
                }
                return FanoutPublisherHandler(run: self, meter: self.fleet.meter(i))
            },
            onOpen: { i, c in
                self.fleet.open.add(1, ordering: .relaxed)
                if i >= subs {
                    let h = c.handle
                    self.publisherBox.withLock { $0[i - subs] = h }
                } else {
                    self.subscribed.add(1, ordering: .relaxed)
                }
            })
        let byIndex = publisherBox.withLock { $0 }
        publishers = (0..<pubs).map { byIndex[$0] }
        return (opened, failures)
    }

    func play(recorder: RunRecorder) async {
        _ = await fleet.harvest()
        var accumulators = Array(repeating: RateAccumulator(), count: publishers.count)
        var seqs = Array(repeating: 0, count: publishers.count)
        let size = settings.messageBytes
        let start = Date()
        var last = start
        var nextRecord = 1.0
        while true {
            let now = Date()
            let t = now.timeIntervalSince(start)
            if t >= scenario.durationSeconds { break }
            let dt = now.timeIntervalSince(last)
            last = now
            for (p, handle) in publishers.enumerated() {
                guard let handle else { continue }
                let n = accumulators[p].advance(perSecond: settings.messagesPerSecondPerPublisher, seconds: dt)
                guard n > 0 else { continue }
                let first = seqs[p] + 1
                seqs[p] += n
                let meter = fleet.meter(settings.subscribers + p)
                published.add(n, ordering: .relaxed)
                fleet.loop(settings.subscribers + p).execute { loop in
                    loop.withConnection(handle) { connection in
                    var message = [UInt8](repeating: UInt8(ascii: "x"), count: size)
                    for s in first..<(first + n) {
                        let stamp = Clock.nanos()
                        withUnsafeBytes(of: stamp) { b in for k in 0..<8 { message[k] = b[k] } }
                        withUnsafeBytes(of: UInt32(p)) { b in for k in 0..<4 { message[8 + k] = b[k] } }
                        withUnsafeBytes(of: UInt32(s)) { b in for k in 0..<4 { message[12 + k] = b[k] } }
                        message.withUnsafeBytes { connection.sendFrame(.binary, payload: $0) }
                        meter.now.sent += 1
                    }
                    }
                }
            }
            if t >= nextRecord {
                nextRecord += 1
                await recorder.record()
            }
            try? await Task.sleep(nanoseconds: 2_000_000)
        }
    }

    /// Deliveries that never came: every published message was due at every subscriber.
    func missingDeliveries(received: Int, duplicates: Int) -> Int {
        max(0, published.load(ordering: .relaxed) * subscribed.load(ordering: .relaxed) - (received - duplicates))
    }

    func stop() { running.store(false, ordering: .relaxed) }
}

/// A fan-out subscriber: times each delivery and checks each publisher's sequence.
final class FanoutSubscriber: WebSocketHandler, @unchecked Sendable {
    let meter: LoopMeter
    let run: FanoutRun
    private var streams: [PushValidator]

    init(meter: LoopMeter, publishers: Int, run: FanoutRun) {
        self.meter = meter
        self.run = run
        streams = (0..<publishers).map { _ in
            var v = PushValidator()
            v.reset(epoch: "", seq: 0, queue: nil, nowPlaying: nil)
            return v
        }
    }

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        guard message.data.count >= 16 else { return }
        let now = Clock.nanos()
        let (sent, publisher, seq) = message.data.withUnsafeBytes {
            ($0.loadUnaligned(as: UInt64.self), Int($0.loadUnaligned(fromByteOffset: 8, as: UInt32.self)),
             Int($0.loadUnaligned(fromByteOffset: 12, as: UInt32.self)))
        }
        guard publisher < streams.count else { return }
        meter.now.recordLatency(nanos: now &- sent)
        meter.now.received += 1
        var push = ScannedPush()
        push.seq = seq
        // Gaps show in the final count (a tail gap has no later message to reveal it); the
        // stream checks catch repeats and reordering.
        var found = streams[publisher].receive(push)
        found.missing = 0
        meter.now.violations += found
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
        run.fleet.open.subtract(1, ordering: .relaxed)
        if run.running.load(ordering: .relaxed) { meter.now.closes["\(code.rawValue)", default: 0] += 1 }
    }
}

/// Publishers ignore what the endpoint relays back to them.
final class FanoutPublisherHandler: WebSocketHandler {
    let run: FanoutRun
    let meter: LoopMeter
    init(run: FanoutRun, meter: LoopMeter) {
        self.run = run
        self.meter = meter
    }
    func onMessage(_ message: Message, connection: WebSocketConnection) {}
    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
        run.fleet.open.subtract(1, ordering: .relaxed)
        if run.running.load(ordering: .relaxed) { meter.now.closes["publisher \(code.rawValue)", default: 0] += 1 }
    }
}
