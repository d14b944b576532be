import CoreMetrics
import Metrics
import Synchronization
import WebSocket

/// Counters kept per loop without locks and published to swift-metrics on each tick, so the
/// hot path never touches shared memory.
struct LoopStats {
    var framesIn = 0
    var framesOut = 0
    var bytesIn = 0
    var bytesOut = 0
    var messagesIn = 0
    var messagesOut = 0
}

/// The transport's metrics (names are part of the /metrics contract; see README).
public final class TransportMetrics: Sendable {
    let connections: Gauge
    let framesIn: Counter
    let framesOut: Counter
    let bytesIn: Counter
    let bytesOut: Counter
    let messagesIn: Counter
    let messagesOut: Counter
    let handshakes: Counter
    let httpRequests: Counter
    let slowConsumers: Counter
    private let factory: any MetricsFactory
    private let open = Atomic<Int>(0)

    /// Metrics reported to `factory` (the process's bootstrapped one by default).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        connections = Gauge(label: "hubbub_connections", factory: factory)
        framesIn = Counter(label: "hubbub_frames_in_total", factory: factory)
        framesOut = Counter(label: "hubbub_frames_out_total", factory: factory)
        bytesIn = Counter(label: "hubbub_bytes_in_total", factory: factory)
        bytesOut = Counter(label: "hubbub_bytes_out_total", factory: factory)
        messagesIn = Counter(label: "hubbub_messages_in_total", factory: factory)
        messagesOut = Counter(label: "hubbub_messages_out_total", factory: factory)
        handshakes = Counter(label: "hubbub_handshakes_total", factory: factory)
        httpRequests = Counter(label: "hubbub_http_requests_total", factory: factory)
        slowConsumers = Counter(label: "hubbub_slow_consumer_closes_total", factory: factory)
    }

    /// Metrics that go nowhere (client loops: a process's /metrics describes its server side).
    public static func discarding() -> TransportMetrics { TransportMetrics(factory: NOOPMetricsHandler.instance) }

    func publish(_ s: LoopStats) {
        if s.framesIn > 0 { framesIn.increment(by: s.framesIn) }
        if s.framesOut > 0 { framesOut.increment(by: s.framesOut) }
        if s.bytesIn > 0 { bytesIn.increment(by: s.bytesIn) }
        if s.bytesOut > 0 { bytesOut.increment(by: s.bytesOut) }
        if s.messagesIn > 0 { messagesIn.increment(by: s.messagesIn) }
        if s.messagesOut > 0 { messagesOut.increment(by: s.messagesOut) }
    }

    func opened() { connections.record(open.add(1, ordering: .relaxed).newValue) }
    func closedWebSocket() { connections.record(open.subtract(1, ordering: .relaxed).newValue) }

    /// Open WebSocket connections right now.
    public var openWebSockets: Int { open.load(ordering: .relaxed) }

    func handshakeFailed(_ reason: String) { counter("hubbub_handshake_failures_total", "reason", reason).increment() }
    func closed(_ code: CloseCode) { counter("hubbub_closes_total", "code", code.label).increment() }
    func tlsHandshake(_ result: String) { counter("hubbub_tls_handshakes_total", "result", result).increment() }

    /// Labelled counters, made once per label value (labels come from small fixed sets).
    private let labelled = Mutex<[String: Counter]>([:])
    private func counter(_ name: String, _ key: String, _ value: String) -> Counter {
        let id = name + "\u{0}" + value
        return labelled.withLock { map in
            if let c = map[id] { return c }
            let c = Counter(label: name, dimensions: [(key, value)], factory: factory)
            map[id] = c
            return c
        }
    }
}

/// Connection counting shared by all loops: a global cap and a cap per IP address.
final class ConnectionLimiter: Sendable {
    private let total = Atomic<Int>(0)
    private let perIP = Mutex<[String: Int]>([:])
    let maxTotal: Int
    let maxPerIP: Int

    init(maxTotal: Int, maxPerIP: Int) {
        self.maxTotal = maxTotal
        self.maxPerIP = maxPerIP
    }

    /// Takes a slot for `ip`; nil when allowed, else the reason it is refused.
    func admit(_ ip: String) -> String? {
        if total.add(1, ordering: .relaxed).newValue > maxTotal {
            total.subtract(1, ordering: .relaxed)
            return "max_connections"
        }
        let ok = perIP.withLock { map -> Bool in
            let n = map[ip, default: 0]
            if n >= maxPerIP { return false }
            map[ip] = n + 1
            return true
        }
        if !ok {
            total.subtract(1, ordering: .relaxed)
            return "max_per_ip"
        }
        return nil
    }

    func release(_ ip: String) {
        total.subtract(1, ordering: .relaxed)
        perIP.withLock { map in
            let n = map[ip, default: 1] - 1
            if n <= 0 { map[ip] = nil } else { map[ip] = n }
        }
    }

    var count: Int { total.load(ordering: .relaxed) }
}
