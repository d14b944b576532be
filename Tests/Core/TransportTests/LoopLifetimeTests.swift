import HubbubTestSupport
import Logging
import Transport
import WebSocket
import CLinux
import Synchronization
import XCTest

/// A connection holds its loop strongly (so a push needs no reference counting for it), and the
/// loop holds its open connections. However a loop stops, it closes what is still open and is
/// freed with it: no loop, buffers or descriptors outlive a stopped server or client loop.
final class LoopLifetimeTests: XCTestCase {
    final class Echo: ServerApplication {
        func route(_ head: HTTPHead, secure: Bool) -> Route {
            .webSocket(WebSocketEndpoint(policy: .init()) { _ in Handler() })
        }
    }

    final class Handler: WebSocketHandler {
        func onMessage(_ message: Message, connection: WebSocketConnection) { connection.send(message) }
    }

    final class Closed: WebSocketHandler, @unchecked Sendable {
        let onClose: XCTestExpectation
        init(_ e: XCTestExpectation) { onClose = e }
        func onMessage(_ message: Message, connection: WebSocketConnection) {}
        func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) { onClose.fulfill() }
    }

    func testLoopsStoppedWithConnectionsOpenAreFreed() async throws {
        weak var serverLoop: EventLoop?
        weak var clientLoop: EventLoop?
        let clientClosed = expectation(description: "the client connection is closed when its loop stops")
        do {
            var config = TransportConfiguration()
            config.host = "127.0.0.1"
            config.port = 0
            config.eventLoops = 1
            let server = try Server(configuration: config, application: Echo(), logger: Logger(label: "test"))
            server.start()
            let client = try EventLoop.makeClientLoop()
            serverLoop = server.eventLoops[0]
            clientLoop = client
            let handler = Closed(clientClosed)
            let opened: Bool = try await withCheckedThrowingContinuation { done in
                client.connect(ClientOptions(host: "127.0.0.1", port: server.port), makeHandler: { _ in handler }) { result in
                    switch result {
                    case .success: done.resume(returning: true)
                    case .failure(let e): done.resume(throwing: e)
                    }
                }
            }
            XCTAssertTrue(opened)
            // The client loop stops with its connection open; the server then shuts down.
            client.shutdownClientLoop()
            await fulfillment(of: [clientClosed], timeout: 5)
            server.shutdown()
        }
        await eventually(timeout: 6, every: .milliseconds(20)) { serverLoop == nil && clientLoop == nil }
        XCTAssertNil(clientLoop, "the client loop outlived its stop")
        XCTAssertNil(serverLoop, "the server loop outlived its shutdown")
    }

    /// Records the heap block of each server-side connection its endpoint upgrades.
    final class Measuring: ServerApplication, @unchecked Sendable {
        let sizes = Mutex<[Int]>([])
        func route(_ head: HTTPHead, secure: Bool) -> Route {
            .webSocket(WebSocketEndpoint(policy: .init()) { connection in
                self.sizes.withLock { $0.append(clinux_malloc_usable_size(Unmanaged.passUnretained(connection).toOpaque())) }
                return Handler()
            })
        }
    }

    /// An idle WebSocket's own object is most of what an idle connection costs (docs/architecture.md,
    /// "Transport"): it may not grow past its block without someone deciding so.
    func testAnUpgradedConnectionFitsItsMemoryBudget() async throws {
        var config = TransportConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.eventLoops = 1
        let app = Measuring()
        let server = try Server(configuration: config, application: app, logger: Logger(label: "test"))
        server.start()
        defer { server.shutdown() }
        let client = try EventLoop.makeClientLoop()
        defer { client.shutdownClientLoop() }
        let clientSize: Int = try await withCheckedThrowingContinuation { done in
            client.connect(ClientOptions(host: "127.0.0.1", port: server.port), makeHandler: { _ in Handler() }) { result in
                switch result {
                case .success(let c): done.resume(returning: clinux_malloc_usable_size(Unmanaged.passUnretained(c).toOpaque()))
                case .failure(let e): done.resume(throwing: e)
                }
            }
        }
        await eventually(timeout: 5, every: .milliseconds(10)) { !app.sizes.withLock { $0.isEmpty } }
        let serverSize = try XCTUnwrap(app.sizes.withLock { $0.first })
        XCTAssertLessThanOrEqual(serverSize, Self.connectionBudget, "a server-side WebSocketConnection's heap block")
        XCTAssertLessThanOrEqual(clientSize, Self.connectionBudget, "a client-side WebSocketConnection's heap block")
    }

    /// The usable size of an idle connection's heap block, in bytes (malloc_usable_size): a 240-byte
    /// chunk, which with its slot in the loop keeps an idle connection within 0.25 KB.
    static let connectionBudget = 232
}
