import DomainSeam
import Foundation
import Logging
import Realtime
import ServiceLifecycle
import Storage
import Synchronization

/// `ClusterEvents` over PostgreSQL: a published event is sent with `pg_notify` on `channel` (in
/// a write of its own, in publishing order: one writer task drains a queue), and heard by every
/// node listening there (`run`, a service with its own connection); a node skips its own.
public final class ClusterEventBus: ClusterEvents, Service {
    public static let channel = "hubbub_events"
    /// Most bytes of an event's text (PostgreSQL refuses 8,000 and more).
    static let maxBytes = 7_600

    let nodeID: String
    let store: Store
    let logger: Logger
    let health: ClusterHealth?
    private let handlers = Mutex<[String: [@Sendable (JSON) -> Void]]>([:])
    private let resyncs = Mutex<[@Sendable () -> Void]>([])
    private let outbox: AsyncStream<String>.Continuation
    private let queued: AsyncStream<String>

    /// `health` learns whether events are heard (`/healthz`).
    public init(nodeID: String, store: Store, health: ClusterHealth? = nil, logger: Logger) {
        self.nodeID = nodeID
        self.store = store
        self.health = health
        self.logger = logger
        (queued, outbox) = AsyncStream<String>.makeStream()
    }

    public func publish<E: ClusterEvent>(_ event: E) {
        let data: Data
        do { data = try JSONEncoder().encode(event) } catch {
            return logger.error("cluster: an event that cannot be encoded", metadata: ["topic": "\(E.topic)", "error": "\(error)"])
        }
        let text = JSON.object([("node", .string(nodeID)), ("topic", .string(E.topic)), ("data", .raw(String(decoding: data, as: UTF8.self)))]).encoded
        guard text.utf8.count <= Self.maxBytes else {
            return logger.error("cluster: an event too large to send", metadata: ["topic": "\(E.topic)", "bytes": "\(text.utf8.count)"])
        }
        outbox.yield(text)
    }

    public func subscribe<E: ClusterEvent>(_ type: E.Type, _ handler: @escaping @Sendable (E) -> Void) {
        let logger = self.logger
        handlers.withLock {
            $0[E.topic, default: []].append { data in
                do {
                    handler(try JSONDecoder().decode(E.self, from: Data(data.encoded.utf8)))
                } catch {
                    // A node of another version may send fields this one does not know how to read.
                    logger.warning("cluster: an event that does not read as \(E.self)", metadata: ["topic": "\(E.topic)", "error": "\(error)"])
                }
            }
        }
    }

    public func onResync(_ handler: @escaping @Sendable () -> Void) {
        resyncs.withLock { $0.append(handler) }
    }

    /// Sends what is published, in order, and hears the others, until the graceful shutdown.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.send() }
            group.addTask { await cancelWhenGracefulShutdown { await self.listen() } }
            group.addTask {
                try? await gracefulShutdown()
                self.outbox.finish()
            }
        }
    }

    private func send() async {
        var batch: [String] = []
        var iterator = queued.makeAsyncIterator()
        while let first = await iterator.next() {
            batch = [first]
            var delay = 0.1
            while true {
                do {
                    let texts = batch
                    try await store.write { db in
                        for t in texts { try db.execute(sql: "SELECT pg_notify(?, ?)", arguments: [Self.channel, t]) }
                    }
                    break
                } catch {
                    // Kept and sent again once the database answers (events are few and small).
                    logger.warning("cluster: could not send events; retrying", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: .seconds(delay))
                    delay = min(delay * 2, 5)
                }
            }
        }
    }

    private func listen() async {
        var delay = 0.1
        while !Task.isCancelled {
            do {
                try await store.listen(Self.channel, listening: {
                    for r in self.resyncs.withLock({ $0 }) { r() }
                    self.health?.setHearingEvents(true)
                }, received: { text in self.hear(text) })
            } catch {
                if Task.isCancelled { break }
            }
            health?.setHearingEvents(false)
            try? await Task.sleep(for: .seconds(delay))
            delay = min(delay * 2, 5)
        }
    }

    private func hear(_ text: String) {
        guard let event = try? JSONParser.parse(Array(text.utf8), limits: .trusted), case .string(let node)? = event["node"],
              case .string(let topic)? = event["topic"], let data = event["data"] else {
            return logger.warning("cluster: an event that is not one", metadata: ["text": "\(text.prefix(80))"])
        }
        guard node != nodeID else { return }
        for h in handlers.withLock({ $0[topic] ?? [] }) { h(data) }
    }
}
