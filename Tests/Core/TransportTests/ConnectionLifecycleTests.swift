import HubbubClient
import HubbubTestSupport
import Transport
import WebSocket
import XCTest

/// Transport behaviour seen from clients: TLS, compression, slow consumers, shutdown.
final class ConnectionLifecycleTests: XCTestCase {
    func testEchoOverTLSWithAndWithoutCompression() async throws {
        let server = try TestServer(tls: true)
        defer { server.stop() }
        let cert = try DevCertificate.shared()
        for compression in [false, true] {
            var options = WebSocketClient.Options()
            options.compression = compression
            options.caFile = cert.cert
            let ws = try await WebSocketClient.connect(to: server.tlsURL! + "/echo", options: options)
            XCTAssertEqual(ws.compression != nil, compression)
            let big = String(repeating: "abcdefgh", count: 200_000)
            ws.send(text: big)
            ws.send(binary: [0, 1, 2, 255])
            let first = try await ws.receive()
            let second = try await ws.receive()
            XCTAssertEqual(first.text, big)
            XCTAssertEqual(second, .binary([0, 1, 2, 255]))
            ws.close()
            let (code, _) = await ws.waitForClose()
            XCTAssertEqual(code, .normal)
        }
    }

    func testTLSGarbageIsDroppedAndTLSKeepsServing() async throws {
        let server = try TestServer(tls: true)
        defer { server.stop() }
        let garbage = try RawSocket(port: server.tlsPort!)
        garbage.send("this is not a TLS ClientHello\r\n\r\n")
        XCTAssertTrue(garbage.readsEOF())
        var options = WebSocketClient.Options()
        options.caFile = try DevCertificate.shared().cert
        let ws = try await WebSocketClient.connect(to: server.tlsURL! + "/echo", options: options)
        ws.send(text: "after garbage")
        let reply = try await ws.receive()
        XCTAssertEqual(reply.text, "after garbage")
        ws.close()
    }

    func testCompressedEchoSharesNoContextAndRoundTrips() async throws {
        let server = try TestServer()
        defer { server.stop() }
        var options = WebSocketClient.Options()
        options.compression = true
        let ws = try await WebSocketClient.connect(to: server.url + "/echo", options: options)
        XCTAssertEqual(ws.compression?.serverNoContextTakeover, true)
        XCTAssertEqual(ws.compression?.clientNoContextTakeover, true)
        for i in 0..<50 {
            let text = String(repeating: "message \(i) ", count: 100)
            ws.send(text: text)
            let reply = try await ws.receive()
            XCTAssertEqual(reply.text, text)
        }
        ws.close()
    }

    func testSlowConsumerIsClosedWith4001() async throws {
        let server = try TestServer { c in
            c.limits.maxOutboundBytes = 64 * 1024
            c.limits.maxMessageBytes = 1 << 20
            c.timeouts.closeMs = 60_000 // give this test's reader time to reach the close frame
        }
        defer { server.stop() }
        let s = try RawSocket(port: server.port, timeout: 10)
        try s.upgrade()
        // Ask for ~32 MiB of echoes (more than loopback socket buffers hold) and read nothing
        // until the server gives up on us.
        let frame = RawSocket.frame(opcode: 0x2, payload: [UInt8](repeating: 0x5A, count: 512 * 1024))
        for _ in 0..<64 { if !s.send(frame) { break } }
        XCTAssertEqual(s.readCloseCode(), 4001)
    }

    func testPingFloodFromANonReaderIsASlowConsumer() async throws {
        let server = try TestServer { c in c.limits.maxOutboundBytes = 64 * 1024 }
        defer { server.stop() }
        let s = try RawSocket(port: server.port, timeout: 10)
        try s.upgrade()
        // ~16 MiB of pings, no reading: the pongs pile up like any other unread output.
        let ping = RawSocket.frame(opcode: 0x9, payload: [UInt8](repeating: 0x41, count: 125))
        let batch = Array([[UInt8]](repeating: ping, count: 1000).joined())
        for _ in 0..<128 { if !s.send(batch) { break } }
        XCTAssertEqual(s.readCloseCode(), 4001)
    }

    func testHalfClosedHTTPClientStillGetsTheWholeAnswer() throws {
        let server = try TestServer()
        defer { server.stop() }
        let s = try RawSocket(port: server.port)
        s.send("GET /metrics HTTP/1.1\r\nHost: x\r\n" + TestServer.operatorHeader + "\r\n")
        s.shutdownWrite()
        let text = String(decoding: s.readToEnd(), as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200"))
        guard let range = text.range(of: "\r\n\r\n"),
              let length = text.split(separator: "\r\n").first(where: { $0.hasPrefix("Content-Length: ") })
                .flatMap({ Int($0.dropFirst("Content-Length: ".count)) }) else { return XCTFail("no head or length") }
        XCTAssertEqual(text[range.upperBound...].utf8.count, length)
    }

    func testGracefulShutdownSends1001Restart() async throws {
        let server = try TestServer()
        let a = try await WebSocketClient.connect(to: server.url + "/echo")
        let b = try await WebSocketClient.connect(to: server.url + "/echo")
        a.send(text: "x")
        _ = try await a.receive()
        let stopped = Task.detached { server.stop() }
        let (codeA, reasonA) = await a.waitForClose()
        let (codeB, reasonB) = await b.waitForClose()
        await stopped.value
        XCTAssertEqual(codeA, .goingAway)
        XCTAssertEqual(reasonA, "restart")
        XCTAssertEqual(codeB, .goingAway)
        XCTAssertEqual(reasonB, "restart")
        // Nothing listens any more.
        XCTAssertThrowsError(try RawSocket(port: server.port))
    }

    func testPlainHTTPEndpoints() throws {
        let server = try TestServer()
        defer { server.stop() }
        let s = try RawSocket(port: server.port)
        s.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(s.readHTTPHead()?.status, 200)
        let m = try RawSocket(port: server.port)
        m.send("GET /metrics HTTP/1.1\r\nHost: x\r\n" + TestServer.operatorHeader + "\r\n")
        XCTAssertEqual(m.readHTTPHead()?.status, 200)
        let n = try RawSocket(port: server.port)
        n.send("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(n.readHTTPHead()?.status, 404)
    }
}
