import WebSocket
import XCTest

/// Request bodies: framing from the head, Content-Length and chunked bodies at every byte split,
/// extensions, trailers, limits and malformed framing.
final class HTTPBodyParserTests: XCTestCase {
    private func head(_ headers: [(String, String)]) -> HTTPHead {
        HTTPHead(startLine: ("POST", "/api/x", "HTTP/1.1"), headers: headers.map { (name: $0.0, value: $0.1) })
    }

    /// Feeds `input` cut at `cuts`; returns the body data, the final progress and the bytes fed up
    /// to the end of the body (the offset in the whole input where the next request starts).
    private func run(_ framing: HTTPBodyFraming, _ input: [UInt8], cuts: [Int] = [], maxBytes: Int = 1 << 20,
                     maxLineBytes: Int = 4096) -> (data: [UInt8], progress: HTTPBodyParser.Progress, end: Int?) {
        var parser = HTTPBodyParser(framing: framing, limits: .init(maxBytes: maxBytes, maxLineBytes: maxLineBytes))
        var body: [UInt8] = []
        var start = 0
        var last = HTTPBodyParser.Progress.needMore
        for end in cuts + [input.count] {
            let piece = Array(input[start..<end])
            var ranges: [Range<Int>] = []
            last = piece.withUnsafeBytes { parser.feed($0, data: &ranges) }
            for r in ranges { body += piece[r] }
            switch last {
            case .complete(let consumed, _): return (body, last, start + consumed)
            case .error: return (body, last, nil)
            case .needMore: start = end
            }
        }
        return (body, last, nil)
    }

    private func every2Split(_ input: [UInt8]) -> [[Int]] { (1..<input.count).map { [$0] } }
    private func byteByByte(_ input: [UInt8]) -> [Int] { Array(1..<input.count) }

    // MARK: Framing

    func testFramingFromTheHead() {
        XCTAssertEqual(try HTTPBodyFraming.of(head([])).get(), .none)
        XCTAssertEqual(try HTTPBodyFraming.of(head([("Content-Length", "12")])).get(), .length(12))
        XCTAssertEqual(try HTTPBodyFraming.of(head([("Content-Length", "0")])).get(), .none)
        XCTAssertEqual(try HTTPBodyFraming.of(head([("Content-Length", "7"), ("content-length", "7")])).get(), .length(7))
        XCTAssertEqual(try HTTPBodyFraming.of(head([("Content-Length", "7, 7")])).get(), .length(7))
        XCTAssertEqual(try HTTPBodyFraming.of(head([("Transfer-Encoding", "Chunked")])).get(), .chunked)
        func refusal(_ headers: [(String, String)]) -> HTTPError? {
            if case .failure(let e) = HTTPBodyFraming.of(head(headers)) { return e }
            return nil
        }
        XCTAssertEqual(refusal([("Content-Length", "7"), ("Content-Length", "8")])?.status, 400)
        XCTAssertEqual(refusal([("Content-Length", "+7")])?.status, 400)
        XCTAssertEqual(refusal([("Content-Length", "0x7")])?.status, 400)
        XCTAssertEqual(refusal([("Content-Length", "")])?.status, 400)
        XCTAssertEqual(refusal([("Content-Length", "99999999999999999999")])?.status, 400)
        XCTAssertEqual(refusal([("Transfer-Encoding", "chunked"), ("Content-Length", "5")])?.message,
                       "both Transfer-Encoding and Content-Length")
        XCTAssertEqual(refusal([("Transfer-Encoding", "gzip, chunked")])?.status, 501)
        XCTAssertEqual(refusal([("Transfer-Encoding", "chunked, gzip")])?.status, 400)
        XCTAssertEqual(refusal([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")])?.status, 400)
    }

    // MARK: Bodies at every split

    func testContentLengthBodyAtEverySplitLeavesTheNextRequest() {
        let input = Array("hello, world!GET / HTTP/1.1\r\n".utf8)
        for cuts in [[]] + every2Split(input) + [byteByByte(input)] {
            let r = run(.length(13), input, cuts: cuts)
            XCTAssertEqual(String(decoding: r.data, as: UTF8.self), "hello, world!", "cuts \(cuts)")
            XCTAssertEqual(r.end, 13, "cuts \(cuts)")
        }
    }

    func testChunkedBodyWithExtensionsAndTrailersAtEverySplit() {
        let input = Array("4;name=value\r\nWiki\r\n5\r\npedia\r\nE ; a=\"q s\"\t; b\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\nX-Sum:  3 \r\n\r\nNEXT".utf8)
        for cuts in [[]] + every2Split(input) + [byteByByte(input)] {
            let r = run(.chunked, input, cuts: cuts)
            XCTAssertEqual(String(decoding: r.data, as: UTF8.self), "Wikipedia in\r\n\r\nchunks.", "cuts \(cuts)")
            XCTAssertEqual(r.end, input.count - 4, "cuts \(cuts)")
            guard case .complete(_, let trailers) = r.progress else { return XCTFail("not complete at \(cuts)") }
            XCTAssertEqual(trailers, [.init(name: "Expires", value: "never"), .init(name: "X-Sum", value: "3")])
        }
    }

    func testHexSizesInEitherCaseAndLeadingZeros() {
        let data = String(repeating: "x", count: 0x1A)
        for size in ["1a", "1A", "001a"] {
            let r = run(.chunked, Array("\(size)\r\n\(data)\r\n0\r\n\r\n".utf8))
            XCTAssertEqual(r.data.count, 0x1A, size)
        }
    }

    // MARK: Limits

    func testBodiesOverTheLimitAre413() {
        let big = run(.length(11), Array("hello world".utf8), maxBytes: 10)
        XCTAssertEqual(big.progress, .error(HTTPError(413, "request body larger than 10 bytes")))
        // A chunk announcing more than the limit is refused before any of it is read.
        let announced = run(.chunked, Array("b\r\n".utf8), maxBytes: 10)
        XCTAssertEqual(announced.progress, .error(HTTPError(413, "request body larger than 10 bytes")))
        XCTAssertEqual(announced.data, [])
        // So is the chunk that takes the total over it.
        let total = run(.chunked, Array("6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n".utf8), maxBytes: 10)
        XCTAssertEqual(total.progress, .error(HTTPError(413, "request body larger than 10 bytes")))
        XCTAssertEqual(total.data, Array("abcdef".utf8))
        let exactly = run(.chunked, Array("5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\n".utf8), maxBytes: 10)
        XCTAssertEqual(exactly.data.count, 10)
        XCTAssertEqual(exactly.end, 25)
    }

    func testLongChunkLinesAndTrailersAreRefused() {
        let long = run(.chunked, Array(("5;" + String(repeating: "e", count: 100) + "\r\n").utf8), maxLineBytes: 50)
        XCTAssertEqual(long.progress, .error(HTTPError(400, "chunk line longer than 50 bytes")))
        var parser = HTTPBodyParser(framing: .chunked, limits: .init(maxBytes: 100, maxTrailerBytes: 20))
        var ranges: [Range<Int>] = []
        let trailers = Array("0\r\nX-Long: 0123456789012345\r\n\r\n".utf8)
        XCTAssertEqual(trailers.withUnsafeBytes { parser.feed($0, data: &ranges) }, .error(HTTPError(431, "trailers larger than 20 bytes")))
    }

    // MARK: Malformed framing

    func testMalformedChunkedFramingIs400() {
        let cases: [(String, String)] = [
            ("5\nhello\r\n0\r\n\r\n", "chunk line must end with CRLF"),
            ("5\r\nhello\n0\r\n\r\n", "chunk data must end with CRLF"),
            ("5\r\nhelloX\r\n0\r\n\r\n", "chunk data must end with CRLF"),
            ("\r\nhello\r\n", "chunk size expected"),
            ("-5\r\nhello\r\n", "chunk size expected"),
            ("5 x\r\nhello\r\n", "invalid byte in a chunk line"),
            ("0x5\r\nhello\r\n", "invalid byte in a chunk line"),
            ("5;a\u{01}\r\nhello\r\n", "invalid byte in a chunk line"),
            ("10000000000000000\r\n", "chunk size too large"),
            ("0\r\nno colon here\r\n\r\n", "malformed trailer field"),
            ("0\r\nX: y\n\r\n", "trailer lines must end with CRLF"),
            ("0\r\nX: y\rz\r\n\r\n", "trailer lines must end with CRLF"),
        ]
        for (input, message) in cases {
            let bytes = Array(input.utf8)
            for cuts in [[]] + [byteByByte(bytes)] {
                let r = run(.chunked, bytes, cuts: cuts, maxBytes: .max)
                guard case .error(let e) = r.progress else { XCTFail("\(input.debugDescription) accepted"); continue }
                XCTAssertEqual(e.status, 400, input.debugDescription)
                XCTAssertEqual(e.message, message, input.debugDescription)
            }
        }
    }

    func testAFailedParserStaysFailed() {
        var parser = HTTPBodyParser(framing: .chunked, limits: .init(maxBytes: 100))
        var ranges: [Range<Int>] = []
        _ = Array("z".utf8).withUnsafeBytes { parser.feed($0, data: &ranges) }
        XCTAssertEqual(parser.state, .failed)
        guard case .error = Array("5\r\nhello\r\n".utf8).withUnsafeBytes({ parser.feed($0, data: &ranges) }) else { return XCTFail() }
        XCTAssertEqual(ranges, [])
    }
}
