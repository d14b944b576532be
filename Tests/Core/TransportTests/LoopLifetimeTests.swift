import HubbubTestSupport
import Logging
import Transport
import WebSocket
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

    /// The bytes Swift's runtime asks malloc for per instance of `type`: its metadata's
    /// InstanceSize (without Objective-C interop: kind, superclass, flags and the instance address
    /// point come first, 24 bytes in). Read from the metadata, not from malloc: the usable size of
    /// a block depends on what the allocator had free (a 232-byte request may get a 248-byte block).
    static func instanceSize(of type: AnyClass) -> Int {
        Int(unsafeBitCast(type, to: UnsafeRawPointer.self).load(fromByteOffset: 24, as: UInt32.self))
    }

    final class Probe {
        var a = 0
        var b: UInt8 = 0
    }

    /// An idle WebSocket's own object is most of what an idle connection costs (docs/architecture.md,
    /// "Transport"): it may not grow past its block without someone deciding so. malloc serves a
    /// request of n bytes from a chunk of n + 8 rounded up to 16: up to 232 bytes, a 240-byte chunk,
    /// which with the connection's 8-byte slot in its loop keeps it within 0.25 KB.
    func testAWebSocketConnectionFitsItsMemoryBudget() {
        XCTAssertEqual(Self.instanceSize(of: Probe.self), 25, "the metadata layout read here (header 16, an Int, a byte)")
        XCTAssertLessThanOrEqual(Self.instanceSize(of: WebSocketConnection.self), 232)
    }
}
