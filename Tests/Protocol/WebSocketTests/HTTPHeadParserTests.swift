import XCTest
import WebSocket

/// The incremental HTTP/1.1 head parser and response builder.
final class HTTPHeadParserTests: XCTestCase {
    let request = "GET /ws?token=abc HTTP/1.1\r\nHost: example.com:8080\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n"
        + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-Empty:\r\nX-Pad:   padded value \t\r\n\r\n"

    func feed(_ parser: inout HTTPHeadParser, _ bytes: [UInt8]) -> HTTPHeadParser.Result {
        bytes.withUnsafeBytes { parser.feed($0) }
    }

    func head(_ result: HTTPHeadParser.Result, file: StaticString = #filePath, line: UInt = #line) -> (HTTPHead, [UInt8])? {
        guard case .head(let h, let rest) = result else {
            XCTFail("expected a head, got \(result)", file: file, line: line)
            return nil
        }
        return (h, rest)
    }

    func status(_ result: HTTPHeadParser.Result) -> Int? {
        if case .error(let e) = result { return e.status }
        return nil
    }

    func checkParsed(_ h: HTTPHead, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(h.method, "GET", file: file, line: line)
        XCTAssertEqual(h.target, "/ws?token=abc", file: file, line: line)
        XCTAssertEqual(h.path, "/ws", file: file, line: line)
        XCTAssertEqual(h.startLine.2, "HTTP/1.1", file: file, line: line)
        XCTAssertEqual(h.headers.count, 7, file: file, line: line)
        XCTAssertEqual(h.value("host"), "example.com:8080", file: file, line: line)
        XCTAssertEqual(h.value("X-EMPTY"), "", file: file, line: line)
        XCTAssertEqual(h.value("x-pad"), "padded value", file: file, line: line)
        XCTAssertNil(h.value("Origin"), file: file, line: line)
        XCTAssertTrue(h.hasToken("connection", "upgrade"), file: file, line: line)
        XCTAssertFalse(h.hasToken("connection", "close"), file: file, line: line)
    }

    func testRequestFedByteByByte() {
        var p = HTTPHeadParser(kind: .request)
        let bytes = Array(request.utf8)
        for b in bytes.dropLast() {
            XCTAssertEqual(feed(&p, [b]), .needMore)
        }
        guard let (h, rest) = head(feed(&p, [bytes.last!])) else { return }
        checkParsed(h)
        XCTAssertEqual(rest, [])
        XCTAssertEqual(p.state, .done)
    }

    func testRequestWholeAndEverySplit() {
        let bytes = Array(request.utf8)
        for cut in 1..<bytes.count {
            var p = HTTPHeadParser(kind: .request)
            XCTAssertEqual(feed(&p, Array(bytes[..<cut])), .needMore, "cut \(cut)")
            guard let (h, rest) = head(feed(&p, Array(bytes[cut...]))) else { return }
            checkParsed(h)
            XCTAssertEqual(rest, [])
        }
    }

    func testBareLF() {
        var p = HTTPHeadParser(kind: .request)
        let text = "GET / HTTP/1.1\nHost: a\nUpgrade: websocket\n\n"
        guard let (h, rest) = head(feed(&p, Array(text.utf8))) else { return }
        XCTAssertEqual(h.target, "/")
        XCTAssertEqual(h.values("Host"), ["a"])
        XCTAssertEqual(h.value("Upgrade"), "websocket")
        XCTAssertEqual(rest, [])
        // Mixed endings, byte by byte.
        var q = HTTPHeadParser(kind: .request)
        let mixed = Array("GET / HTTP/1.1\r\nHost: a\n\r\n".utf8)
        var result = HTTPHeadParser.Result.needMore
        for b in mixed { result = feed(&q, [b]) }
        XCTAssertEqual(head(result)?.0.value("host"), "a")
    }

    func testRemainderAfterHeadIsReturned() {
        let frame = hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")
        var p = HTTPHeadParser(kind: .request)
        guard let (h, rest) = head(feed(&p, Array(request.utf8) + frame)) else { return }
        checkParsed(h)
        XCTAssertEqual(rest, frame)
        // Also when the head ends in an earlier read.
        var q = HTTPHeadParser(kind: .request)
        let bytes = Array(request.utf8)
        XCTAssertEqual(feed(&q, Array(bytes.dropLast(1))), .needMore)
        XCTAssertEqual(head(feed(&q, [bytes.last!] + frame))?.1, frame)
    }

    func testFeedingAfterDoneIsAnError() {
        var p = HTTPHeadParser(kind: .request)
        _ = feed(&p, Array(request.utf8))
        XCTAssertNotNil(status(feed(&p, [0x41])))
    }

    func testOverMaxBytes431() {
        let limits = HTTPHeadParser.Limits(maxBytes: 100, maxHeaders: 64)
        // Never terminated: refused once past the limit, fed byte by byte.
        var p = HTTPHeadParser(kind: .request, limits: limits)
        let long = Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 200)).utf8)
        var result = HTTPHeadParser.Result.needMore
        var fedBytes = 0
        for b in long {
            result = feed(&p, [b])
            fedBytes += 1
            if result != .needMore { break }
        }
        XCTAssertEqual(status(result), 431)
        XCTAssertEqual(fedBytes, 101, "refused at the first byte over the limit")
        XCTAssertEqual(p.state, .failed)
        // A complete head over the limit in one read.
        var q = HTTPHeadParser(kind: .request, limits: limits)
        XCTAssertEqual(status(feed(&q, Array(("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 100) + "\r\n\r\n").utf8))), 431)
    }

    func testExactlyMaxBytesIsAccepted() {
        let base = "GET / HTTP/1.1\r\nX: "
        let fill = 100 - base.utf8.count - 4
        let text = base + String(repeating: "a", count: fill) + "\r\n\r\n"
        XCTAssertEqual(text.utf8.count, 100)
        var p = HTTPHeadParser(kind: .request, limits: .init(maxBytes: 100, maxHeaders: 64))
        XCTAssertNotNil(head(feed(&p, Array(text.utf8))))
        var q = HTTPHeadParser(kind: .request, limits: .init(maxBytes: 99, maxHeaders: 64))
        XCTAssertEqual(status(feed(&q, Array(text.utf8))), 431)
    }

    func testOverMaxHeaders431() {
        func request(_ n: Int) -> [UInt8] {
            Array(("GET / HTTP/1.1\r\n" + (0..<n).map { "H\($0): v\r\n" }.joined() + "\r\n").utf8)
        }
        var ok = HTTPHeadParser(kind: .request, limits: .init(maxBytes: 8192, maxHeaders: 3))
        XCTAssertEqual(head(feed(&ok, request(3)))?.0.headers.count, 3)
        var p = HTTPHeadParser(kind: .request, limits: .init(maxBytes: 8192, maxHeaders: 3))
        XCTAssertEqual(status(feed(&p, request(4))), 431)
    }

    func testMalformed400() {
        let bad = [
            "GET /\r\n\r\n",                       // two parts
            "GET / HTTP/1.1 extra\r\n\r\n",         // version field too long
            "GET  / HTTP/1.1\r\n\r\n",              // empty target
            "G@T / HTTP/1.1\r\n\r\n",               // method not a token
            "GET / FTP/1.1\r\n\r\n",                // not HTTP
            "\r\n\r\n",                             // no request line
            "GET / HTTP/1.1\r\nNoColon\r\n\r\n",    // header without colon
            "GET / HTTP/1.1\r\n: empty name\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n  folded\r\n\r\n",  // obs-fold, space
            "GET / HTTP/1.1\r\nHost: a\r\n\tfolded\r\n\r\n",  // obs-fold, tab
            "GET / HTTP/1.1\r\nX: a\u{1}b\r\n\r\n",          // control character in value
        ]
        for text in bad {
            var p = HTTPHeadParser(kind: .request)
            XCTAssertEqual(status(feed(&p, Array(text.utf8))), 400, text.debugDescription)
            XCTAssertEqual(p.state, .failed)
        }
        // A control character (DEL) in the target too.
        var p = HTTPHeadParser(kind: .request)
        XCTAssertEqual(status(feed(&p, Array("GET /\u{7f} HTTP/1.1\r\n\r\n".utf8))), 400)
    }

    func testResponseHead() {
        var p = HTTPHeadParser(kind: .response)
        let text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"
        guard let (h, _) = head(feed(&p, Array(text.utf8))) else { return }
        XCTAssertEqual(h.startLine.0, "HTTP/1.1")
        XCTAssertEqual(h.startLine.1, "101")
        XCTAssertEqual(h.startLine.2, "Switching Protocols")
        var q = HTTPHeadParser(kind: .response)
        XCTAssertEqual(status(feed(&q, Array("HTTP/1.1 1x1 Nope\r\n\r\n".utf8))), 400)
    }

    func testRepeatedHeadersJoin() {
        var p = HTTPHeadParser(kind: .request)
        let text = "GET / HTTP/1.1\r\nA: 1\r\na: 2\r\n\r\n"
        guard let (h, _) = head(feed(&p, Array(text.utf8))) else { return }
        XCTAssertEqual(h.values("A"), ["1", "2"])
        XCTAssertEqual(h.value("a"), "1, 2")
    }

    func testHTTPResponseBuilder() {
        let bytes = HTTPResponse.make(status: 200, body: Array("ok".utf8))
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        let error = HTTPResponse.error(HTTPError(426, "version", headers: ["Sec-WebSocket-Version": "13"]))
        var p = HTTPHeadParser(kind: .response)
        guard let (h, rest) = head(feed(&p, error)) else { return }
        XCTAssertEqual(h.startLine.1, "426")
        XCTAssertEqual(h.value("Sec-WebSocket-Version"), "13")
        XCTAssertEqual(h.value("Content-Length"), String(rest.count))
        XCTAssertEqual(rest, Array("version\n".utf8))
    }
}
