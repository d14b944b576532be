import HubbubClient
import HubbubServer
import HubbubTestSupport
import WebSocket
import XCTest

/// Each bad input gets its exact close code or HTTP status, and the server keeps serving a
/// bystander connection that was open throughout.
final class BadInputTests: XCTestCase {
    var server: TestServer!
    var bystander: WebSocketClient!

    override func setUp() async throws {
        server = try TestServer { c in
            c.limits.maxMessageBytes = 64 * 1024
            c.limits.maxFrameBytes = 64 * 1024
            c.limits.echoMaxMessageBytes = 64 * 1024
            c.limits.maxHeaders = 20
            c.limits.maxRequestBytes = 4096
            c.limits.maxConnectionsPerIp = 50
            c.timeouts.handshakeMs = 500
            c.timeouts.tickMs = 50
        }
        bystander = try await WebSocketClient.connect(to: server.url + "/echo")
    }

    override func tearDown() async throws {
        // The bystander still gets its echo: the bad client hurt no one else.
        bystander.send(text: "still here")
        let reply = try await bystander.receive()
        XCTAssertEqual(reply.text, "still here")
        bystander.close()
        server.stop()
    }

    private func upgraded() throws -> RawSocket {
        let s = try RawSocket(port: server.port)
        try s.upgrade()
        return s
    }

    private func assertClose(_ bytes: [UInt8], _ expected: UInt16, file: StaticString = #filePath, line: UInt = #line) throws {
        let s = try upgraded()
        s.send(bytes)
        XCTAssertEqual(s.readCloseCode(), expected, file: file, line: line)
        XCTAssertTrue(s.readsEOF(), "server should close the TCP connection", file: file, line: line)
    }

    func testUnmaskedClientFrameIs1002() throws {
        try assertClose(RawSocket.frame(opcode: 0x1, payload: Array("hi".utf8), masked: false), 1002)
    }

    func testReservedOpcodeIs1002() throws {
        try assertClose(RawSocket.frame(opcode: 0x3, payload: []), 1002)
        try assertClose(RawSocket.frame(opcode: 0xB, payload: []), 1002)
    }

    func testRSVBitWithoutExtensionIs1002() throws {
        try assertClose(RawSocket.frame(opcode: 0x1, payload: Array("x".utf8), rsv: 0x20), 1002)
        // RSV1 means "compressed" only when permessage-deflate was negotiated (it was not here).
        try assertClose(RawSocket.frame(opcode: 0x1, payload: Array("x".utf8), rsv: 0x40), 1002)
    }

    func testFragmentedControlFrameIs1002() throws {
        try assertClose(RawSocket.frame(opcode: 0x9, payload: [1, 2], fin: false), 1002)
    }

    func testOversizedControlFrameIs1002() throws {
        try assertClose(RawSocket.frame(opcode: 0x9, payload: [UInt8](repeating: 1, count: 126)), 1002)
    }

    func testInvalidUTF8TextIs1007() throws {
        try assertClose(RawSocket.frame(opcode: 0x1, payload: [0x68, 0xC0, 0xAF]), 1007)
    }

    func testInvalidUTF8InFragmentFailsBeforeTheLastFragment() throws {
        let s = try upgraded()
        s.send(RawSocket.frame(opcode: 0x1, payload: Array("ok".utf8), fin: false))
        s.send(RawSocket.frame(opcode: 0x0, payload: [0xED, 0xA0, 0x80], fin: false)) // a surrogate
        // No final fragment is sent: the server must fail fast.
        XCTAssertEqual(s.readCloseCode(), 1007)
    }

    func testInvalidUTF8InCloseReasonIs1007() throws {
        try assertClose(RawSocket.frame(opcode: 0x8, payload: [0x03, 0xE8, 0xFF, 0xFE]), 1007)
    }

    func testInvalidCloseCodeIs1002() throws {
        try assertClose(RawSocket.frame(opcode: 0x8, payload: [0x03, 0xED]), 1002) // 1005 may not be sent
        try assertClose(RawSocket.frame(opcode: 0x8, payload: [0x00, 0x00]), 1002)
    }

    func testMessageOverTheLimitIs1009() throws {
        try assertClose(RawSocket.frame(opcode: 0x2, payload: [UInt8](repeating: 7, count: 70 * 1024)), 1009)
    }

    func testFragmentedMessageOverTheLimitIs1009() throws {
        let s = try upgraded()
        s.send(RawSocket.frame(opcode: 0x2, payload: [UInt8](repeating: 1, count: 30 * 1024), fin: false))
        s.send(RawSocket.frame(opcode: 0x0, payload: [UInt8](repeating: 1, count: 30 * 1024), fin: false))
        s.send(RawSocket.frame(opcode: 0x0, payload: [UInt8](repeating: 1, count: 30 * 1024), fin: true))
        XCTAssertEqual(s.readCloseCode(), 1009)
    }

    func testDeflateBombIs1009() throws {
        let s = try RawSocket(port: server.port)
        try s.upgrade(extraHeaders: ["Sec-WebSocket-Extensions: permessage-deflate"])
        // 8 MiB of zeros deflate to a few KiB; inflated it is far over the 64 KiB limit.
        let bomb = Deflater(noContextTakeover: true).compress([UInt8](repeating: 0, count: 8 << 20))
        XCTAssertLessThan(bomb.count, 64 * 1024)
        s.send(RawSocket.frame(opcode: 0x2, payload: bomb, rsv: 0x40))
        XCTAssertEqual(s.readCloseCode(), 1009)
    }

    func testSlowlorisHandshakeIsCutOff() throws {
        let s = try RawSocket(port: server.port)
        s.send("GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n") // and never the rest
        let start = Date()
        XCTAssertTrue(s.readsEOF())
        XCTAssertLessThan(Date().timeIntervalSince(start), 3.0, "handshake timeout is 500 ms")
    }

    func testHeaderFloodIs431() throws {
        let s = try RawSocket(port: server.port)
        var req = "GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for i in 0..<30 { req += "X-Flood-\(i): y\r\n" }
        s.send(req + "\r\n")
        XCTAssertEqual(s.readHTTPHead()?.status, 431)
    }

    func testOversizedRequestIs431() throws {
        let s = try RawSocket(port: server.port)
        s.send("GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + String(repeating: "a", count: 8000) + "\r\n\r\n")
        XCTAssertEqual(s.readHTTPHead()?.status, 431)
    }

    func testWrongVersionIs426WithVersionHeader() throws {
        let s = try RawSocket(port: server.port)
        s.send("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n")
        let head = s.readHTTPHead()
        XCTAssertEqual(head?.status, 426)
        XCTAssertTrue(head?.head.contains("Sec-WebSocket-Version: 13") ?? false)
    }

    func testMissingKeyIs400() throws {
        let s = try RawSocket(port: server.port)
        s.send("GET /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n")
        XCTAssertEqual(s.readHTTPHead()?.status, 400)
    }

    func testNonGetUpgradeIs405() throws {
        let s = try RawSocket(port: server.port)
        s.send("POST /echo HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        XCTAssertEqual(s.readHTTPHead()?.status, 405)
    }

    func testTooManyConnectionsFromOneIPAre503() throws {
        // The bystander holds one; fill up to the limit of 50.
        var held: [RawSocket] = []
        for _ in 0..<49 { held.append(try upgraded()) }
        let extra = try RawSocket(port: server.port)
        extra.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(extra.readHTTPHead()?.status, 503)
        held.removeLast() // one leaves: a newcomer fits again
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertNoThrow(try upgraded())
    }
}
