import HubbubClient
import HubbubTestSupport
import Logging
import Transport
import WebSocket
import XCTest

/// A connection's own frames are written into its loop's cork, not a heap block each. Whatever
/// mixes with them (a shared push, a frame too big for the cork, another connection wanting the
/// cork) must leave the order on the wire the order of the calls.
final class CorkTests: XCTestCase {
    /// One loop, so every handler runs on the same thread and may send to the others directly.
    final class Mixer: ServerApplication, @unchecked Sendable {
        var open: [WebSocketConnection] = []
        func route(_ head: HTTPHead, secure: Bool) -> Route {
            .webSocket(WebSocketEndpoint(policy: .init()) { [unowned self] connection in
                open.append(connection)
                return Handler(app: self)
            })
        }
    }

    final class Handler: WebSocketHandler {
        unowned let app: Mixer
        init(app: Mixer) { self.app = app }
        func onMessage(_ message: Message, connection: WebSocketConnection) {
            switch message.text {
            case "mix":
                connection.send(text: "1")                                        // corked
                connection.send(OutboundMessage(kind: .text, payload: Array("2".utf8))) // queued: takes the cork's bytes first
                connection.send(text: "3")                                        // behind the queue
            case "many":
                // 2,000 frames, 78 KB: more than the cork holds, so it spills mid-way.
                for i in 0..<2_000 { connection.send(text: "frame \(i) " + String(repeating: "x", count: 24)) }
                connection.send(text: "end")
            case "big":
                connection.send(text: "small")
                connection.send(text: String(repeating: "b", count: 40_000)) // does not fit: queued after "small"
                connection.send(text: "after")
            case "relay":
                connection.send(text: "mine 1") // this connection holds the cork
                for other in app.open where other !== connection { other.send(text: "relayed") }
                connection.send(text: "mine 2")
            default:
                connection.send(message)
            }
        }
    }

    private func start() throws -> (Server, Mixer) {
        var config = TransportConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.eventLoops = 1
        let app = Mixer()
        let server = try Server(configuration: config, application: app, logger: Logger(label: "test"))
        server.start()
        return (server, app)
    }

    private func texts(_ ws: WebSocketClient, _ count: Int) async throws -> [String] {
        var out: [String] = []
        for _ in 0..<count { out.append(try await ws.receive().text) }
        return out
    }

    func testCorkedFramesAndQueuedPushesKeepTheirOrder() async throws {
        let (server, _) = try start()
        defer { server.shutdown() }
        let ws = try await WebSocketClient.connect(to: "ws://127.0.0.1:\(server.port)/")
        ws.send(text: "mix")
        let mixed = try await texts(ws, 3)
        XCTAssertEqual(mixed, ["1", "2", "3"])
        ws.send(text: "big")
        let big = try await texts(ws, 3)
        XCTAssertEqual(big.map(\.count), [5, 40_000, 5])
        XCTAssertEqual(big.last, "after")
        ws.send(text: "many")
        let many = try await texts(ws, 2_001)
        XCTAssertEqual(many.prefix(2_000).map { $0.split(separator: " ")[1] }, (0..<2_000).map { Substring("\($0)") })
        XCTAssertEqual(many.last, "end")
        ws.send(text: "echo after all that")
        let echo = try await ws.receive().text
        XCTAssertEqual(echo, "echo after all that")
        ws.close()
    }

    func testASendToAnotherConnectionWhileTheCorkIsHeldReachesIt() async throws {
        let (server, _) = try start()
        defer { server.shutdown() }
        let a = try await WebSocketClient.connect(to: "ws://127.0.0.1:\(server.port)/")
        let b = try await WebSocketClient.connect(to: "ws://127.0.0.1:\(server.port)/")
        b.send(text: "ready") // b's upgrade is done once its echo is back
        let ready = try await b.receive().text
        XCTAssertEqual(ready, "ready")
        a.send(text: "relay")
        let mine = try await texts(a, 2)
        XCTAssertEqual(mine, ["mine 1", "mine 2"])
        let relayed = try await b.receive().text
        XCTAssertEqual(relayed, "relayed")
        a.close()
        b.close()
    }
}
