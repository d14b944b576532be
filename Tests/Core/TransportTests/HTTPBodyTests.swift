import Foundation
import HubbubTestSupport
import Logging
import Synchronization
import Transport
import WebSocket
import XCTest

/// Request bodies through the transport: streamed to a handler, answered later, keep-alive and
/// pipelining, `Expect: 100-continue`, 413, 408 for slow senders, 400/501 for bad framing,
/// back-pressure, and aborts.
final class HTTPBodyTests: XCTestCase {
    /// What handlers saw, for the tests to look at.
    final class Record: Sendable {
        let aborts = Mutex<[String]>([])
        let parts = Mutex<Int>(0)
    }

    /// Counts a body's bytes and sums them; answers `count sum trailers` when it ends.
    final class Summer: HTTPBodyHandler {
        let exchange: HTTPExchange
        let record: Record
        let answerLater: Bool
        let pauseFirst: Bool
        var count = 0, sum = 0

        init(_ exchange: HTTPExchange, _ record: Record, answerLater: Bool = false, pauseFirst: Bool = false) {
            self.exchange = exchange
            self.record = record
            self.answerLater = answerLater
            self.pauseFirst = pauseFirst
        }

        func onBodyPart(_ bytes: UnsafeRawBufferPointer) {
            record.parts.withLock { $0 += 1 }
            count += bytes.count
            for b in bytes { sum &+= Int(b) }
            if pauseFirst && count == bytes.count {
                // Back-pressure: hold the body a moment, as a slow consumer of it would.
                exchange.pauseReading()
                let exchange = self.exchange
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { exchange.resumeReading() }
            }
        }

        func onBodyEnd(trailers: [HTTPBodyParser.HTTPField]) {
            let text = "\(count) \(sum) " + trailers.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
            let exchange = self.exchange
            if answerLater {
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { exchange.respond(status: 200, body: Array(text.utf8)) }
            } else {
                exchange.respond(status: 200, body: Array(text.utf8))
            }
        }

        func onAbort(reason: String) { record.aborts.withLock { $0.append(reason) } }
    }

    final class App: ServerApplication {
        let record = Record()
        func route(_ head: HTTPHead, secure: Bool) -> Route {
            let record = self.record
            switch head.path {
            case "/sum": return .body(HTTPBodyEndpoint(maxBytes: 1 << 30) { _, e in Summer(e, record) })
            case "/later": return .body(HTTPBodyEndpoint(maxBytes: 1 << 30) { _, e in Summer(e, record, answerLater: true) })
            case "/held": return .body(HTTPBodyEndpoint(maxBytes: 1 << 30) { _, e in Summer(e, record, pauseFirst: true) })
            case "/small": return .body(HTTPBodyEndpoint(maxBytes: 1000) { _, e in Summer(e, record) })
            default: return .text(404, "no\n")
            }
        }
    }

    var server: Server!
    var app: App!

    override func setUp() async throws {
        var config = TransportConfiguration()
        config.host = "127.0.0.1"
        config.port = 0
        config.eventLoops = 1
        config.bodyIdleTimeoutNanos = 300_000_000
        app = App()
        server = try Server(configuration: config, application: app, logger: Logger(label: "test"))
        server.start()
    }

    override func tearDown() async throws { server.shutdown() }

    private func post(_ path: String, _ headers: [String], _ body: String) -> String {
        "POST \(path) HTTP/1.1\r\nHost: x\r\n" + headers.map { $0 + "\r\n" }.joined() + "\r\n" + body
    }

    private func sum(_ s: String) -> Int { s.utf8.reduce(0) { $0 + Int($1) } }

    func testContentLengthBodiesPipelinedOnOneKeptAliveConnection() throws {
        let s = try RawSocket(port: server.port)
        // Two requests in one write: the second waits for the first's answer.
        s.send(post("/later", ["Content-Length: 5"], "hello") + post("/sum", ["Content-Length: 6"], "world!"))
        let first = s.readHTTPResponse()
        XCTAssertEqual(first?.status, 200)
        XCTAssertEqual(first.map { String(decoding: $0.body, as: UTF8.self) }, "5 \(sum("hello")) ")
        XCTAssertTrue(first?.head.contains("Connection: keep-alive") ?? false)
        let second = s.readHTTPResponse()
        XCTAssertEqual(second.map { String(decoding: $0.body, as: UTF8.self) }, "6 \(sum("world!")) ")
        // And a third, later, on the same connection.
        s.send(post("/sum", ["Content-Length: 3", "Connection: close"], "abc"))
        let third = s.readHTTPResponse()
        XCTAssertEqual(third.map { String(decoding: $0.body, as: UTF8.self) }, "3 \(sum("abc")) ")
        XCTAssertTrue(third?.head.contains("Connection: close") ?? false)
        XCTAssertTrue(s.readsEOF(), "Connection: close ends the connection after the answer")
    }

    /// A page's files: plain answers to bodiless requests keep the connection, one request after
    /// another; `Connection: close`, HTTP/1.0, a body, or pipelined requests end it after the answer.
    func testPlainAnswersKeepTheConnectionForTheNextRequest() throws {
        let s = try RawSocket(port: server.port)
        for _ in 0..<3 {
            s.send("GET /page HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = s.readHTTPResponse()
            XCTAssertEqual(r?.status, 404)
            XCTAssertEqual(r.map { String(decoding: $0.body, as: UTF8.self) }, "no\n")
            XCTAssertTrue(r?.head.contains("Connection: keep-alive") ?? false)
        }
        s.send("GET /page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(s.readHTTPResponse()?.head.contains("Connection: close") ?? false)
        XCTAssertTrue(s.readsEOF())

        for request in ["GET /page HTTP/1.0\r\nHost: x\r\n\r\n", "GET /page HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab",
                        "GET /page HTTP/1.1\r\nHost: x\r\n\r\nGET /page HTTP/1.1\r\nHost: x\r\n\r\n"] {
            let c = try RawSocket(port: server.port)
            c.send(request)
            XCTAssertTrue(c.readHTTPResponse()?.head.contains("Connection: close") ?? false, request)
            XCTAssertTrue(c.readsEOF(), request)
        }
    }

    func testChunkedBodyInSmallPiecesWithExtensionsAndTrailers() throws {
        let s = try RawSocket(port: server.port)
        let body = "4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nChecksum: abc\r\n\r\n"
        let bytes = Array(post("/sum", ["Transfer-Encoding: chunked"], body).utf8)
        for start in stride(from: 0, to: bytes.count, by: 7) {
            _ = s.send(Array(bytes[start..<min(bytes.count, start + 7)]))
            usleep(2000)
        }
        let r = s.readHTTPResponse()
        XCTAssertEqual(r?.status, 200)
        XCTAssertEqual(r.map { String(decoding: $0.body, as: UTF8.self) }, "9 \(sum("Wikipedia")) Checksum=abc")
    }

    func testExpect100ContinueIsAnsweredBeforeTheBody() throws {
        let s = try RawSocket(port: server.port)
        s.send(post("/sum", ["Content-Length: 4", "Expect: 100-continue"], ""))
        XCTAssertEqual(s.readHTTPHead()?.status, 100)
        s.send("data")
        XCTAssertEqual(s.readHTTPResponse()?.status, 200)
        // Too large by its Content-Length: refused at once, with no 100 first.
        let big = try RawSocket(port: server.port)
        big.send(post("/small", ["Content-Length: 5000", "Expect: 100-continue"], ""))
        XCTAssertEqual(big.readHTTPHead()?.status, 413)
    }

    func testBodiesOverTheEndpointLimitAre413() throws {
        let s = try RawSocket(port: server.port)
        s.send(post("/small", ["Transfer-Encoding: chunked"], "3e8\r\n" + String(repeating: "a", count: 1000) + "\r\n1\r\nb\r\n0\r\n\r\n"))
        XCTAssertEqual(s.readHTTPHead()?.status, 413)
        XCTAssertTrue(s.readsEOF())
        XCTAssertEqual(app.record.aborts.withLock { $0 }, ["request body larger than 1000 bytes"], "the handler drops what it gathered")
    }

    func testASenderThatStallsGets408() throws {
        let s = try RawSocket(port: server.port)
        s.send(post("/sum", ["Content-Length: 100"], "only some"))
        let start = Date()
        XCTAssertEqual(s.readHTTPHead()?.status, 408)
        XCTAssertLessThan(Date().timeIntervalSince(start), 3, "well within the idle timeout and a tick")
        XCTAssertEqual(app.record.aborts.withLock { $0 }, ["request body timed out"])
    }

    func testBadFramingIsRefused() throws {
        for (headers, status) in [(["Transfer-Encoding: chunked", "Content-Length: 5"], 400), (["Transfer-Encoding: gzip, chunked"], 501),
                                  (["Content-Length: 5", "Content-Length: 6"], 400), (["Expect: 200-ok", "Content-Length: 1"], 417)] {
            let s = try RawSocket(port: server.port)
            s.send(post("/sum", headers, "hello"))
            XCTAssertEqual(s.readHTTPHead()?.status, status, "\(headers)")
        }
        let s = try RawSocket(port: server.port)
        s.send(post("/sum", ["Transfer-Encoding: chunked"], "5\nhello\r\n"))
        let r = s.readHTTPResponse()
        XCTAssertEqual(r?.status, 400)
        XCTAssertEqual(r.map { String(decoding: $0.body, as: UTF8.self) }, "chunk line must end with CRLF\n")
    }

    func testAPausedBodyStillArrivesWhole() throws {
        let s = try RawSocket(port: server.port)
        let body = [UInt8](repeating: 7, count: 4 << 20)
        s.send(post("/held", ["Content-Length: \(body.count)"], ""))
        let fd = s.fd // written from another thread while this one reads
        DispatchQueue.global().async {
            var sent = 0
            while sent < body.count {
                let n = body[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        }
        let r = s.readHTTPResponse()
        XCTAssertEqual(r.map { String(decoding: $0.body, as: UTF8.self) }, "\(body.count) \(body.count * 7) ")
    }

    func testAClientThatLeavesMidBodyAbortsTheHandler() throws {
        let s = try RawSocket(port: server.port)
        s.send(post("/sum", ["Content-Length: 100"], "partial"))
        usleep(50_000)
        s.close()
        for _ in 0..<100 where app.record.aborts.withLock({ $0.isEmpty }) { usleep(10_000) }
        XCTAssertEqual(app.record.aborts.withLock { $0.count }, 1)
        XCTAssertTrue(app.record.aborts.withLock { $0.first?.hasPrefix("connection closed") ?? false })
    }
}
