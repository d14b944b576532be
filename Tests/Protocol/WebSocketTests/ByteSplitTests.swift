import XCTest
import WebSocket

/// Feeding a stream in any split must give exactly the actions of feeding it whole.
final class ByteSplitTests: XCTestCase {
    /// A client→server stream: masked, mixed text/binary/ping/fragments/compression, then close.
    func mixedClientStream() -> (bytes: [UInt8], machine: () -> WebSocketStateMachine) {
        let deflater = Deflater(noContextTakeover: false)
        var s: [UInt8] = []
        s += clientFrame(.text, Array("Hello".utf8), key: maskKey(1, 2, 3, 4))
        s += clientFrame(.binary, pseudoRandomBytes(300), key: maskKey(0xde, 0xad, 0xbe, 0xef))
        s += clientFrame(.ping, Array("ping!".utf8), key: maskKey(9, 8, 7, 6))
        // A fragmented text message whose fragments cut multi-byte characters, with a ping inside.
        let t = Array("héllo wörld €uro 😀 end".utf8)
        s += clientFrame(.text, Array(t[0..<2]), fin: false)
        s += clientFrame(.continuation, Array(t[2..<14]), fin: false, key: maskKey(0x11, 0x22, 0x33, 0x44))
        s += clientFrame(.ping, [], key: maskKey(0, 0, 0, 0))
        s += clientFrame(.continuation, Array(t[14..<21]), fin: false)
        s += clientFrame(.continuation, Array(t[21...]), fin: true)
        // Compressed, single frame and fragmented, sharing the window.
        s += clientFrame(.text, deflater.compress(Array("compressed hello hello hello".utf8)), rsv1: true)
        let c = deflater.compress(Array(String(repeating: "abcdefgh", count: 40).utf8))
        s += clientFrame(.binary, Array(c.prefix(3)), fin: false, rsv1: true)
        s += clientFrame(.continuation, Array(c.dropFirst(3)), fin: true)
        s += clientFrame(.pong, Array("pong".utf8))
        s += clientFrame(.binary, [], fin: true)
        s += clientFrame(.text, pseudoRandomBytes(200).map { $0 & 0x7F }, fin: true) // 126-length form
        s += clientFrame(.close, FrameEncoder.closePayload(code: .normal, reason: "bye"))
        s += clientFrame(.text, "ignored after close")
        let params = PerMessageDeflate.Parameters(serverNoContextTakeover: false, clientNoContextTakeover: false)
        return (s, { WebSocketStateMachine(role: .server, configuration: SMConfig(), deflate: params,
                                           inflater: Inflater(noContextTakeover: false)) })
    }

    func feedWhole(_ bytes: [UInt8], _ make: () -> WebSocketStateMachine) -> [Action] {
        var m = make()
        return m.feed(bytes)
    }

    func feedPieces(_ bytes: [UInt8], cuts: [Int], _ make: () -> WebSocketStateMachine) -> [Action] {
        var m = make()
        var actions: [Action] = []
        var start = 0
        for cut in cuts + [bytes.count] {
            actions += m.feed(Array(bytes[start..<cut]))
            start = cut
        }
        return actions
    }

    func checkAllSplits(_ bytes: [UInt8], _ make: () -> WebSocketStateMachine, expectMessages: Int,
                        file: StaticString = #filePath, line: UInt = #line) {
        let whole = feedWhole(bytes, make)
        let delivered = whole.filter { if case .deliver = $0 { true } else { false } }.count
        XCTAssertEqual(delivered, expectMessages, describe(whole), file: file, line: line)
        for cut in 1..<bytes.count {
            let split = feedPieces(bytes, cuts: [cut], make)
            if split != whole {
                XCTFail("split at \(cut) of \(bytes.count) gives \(describe(split)), whole gives \(describe(whole))", file: file, line: line)
                return
            }
        }
        XCTAssertEqual(feedPieces(bytes, cuts: Array(1..<bytes.count), make), whole, "byte by byte", file: file, line: line)
        var rng = SeededRNG(seed: 42)
        for _ in 0..<200 {
            let cuts = Set((0..<Int.random(in: 1...20, using: &rng)).map { _ in Int.random(in: 1..<bytes.count, using: &rng) }).sorted()
            XCTAssertEqual(feedPieces(bytes, cuts: cuts, make), whole, "cuts \(cuts)", file: file, line: line)
        }
    }

    func testMixedStreamEveryTwoPartSplitAndByteByByte() {
        let (bytes, make) = mixedClientStream()
        let whole = feedWhole(bytes, make)
        // What the whole stream must do: 7 messages, 2 pongs, then the close echo and close.
        let expectedText = "héllo wörld €uro 😀 end"
        XCTAssertEqual(whole.count, 11, describe(whole))
        XCTAssertEqual(whole[0], .deliver(.text("Hello")))
        XCTAssertEqual(whole[1], .deliver(.binary(pseudoRandomBytes(300))))
        XCTAssertEqual(whole[2], .write(serverFrame(.pong, Array("ping!".utf8))))
        XCTAssertEqual(whole[3], .write(serverFrame(.pong, [])))
        XCTAssertEqual(whole[4], .deliver(.text(expectedText)))
        XCTAssertEqual(whole[5], .deliver(.text("compressed hello hello hello")))
        XCTAssertEqual(whole[6], .deliver(.binary(Array(String(repeating: "abcdefgh", count: 40).utf8))))
        XCTAssertEqual(whole[7], .deliver(.binary([])))
        XCTAssertEqual(whole[8], .deliver(Message(kind: .text, data: pseudoRandomBytes(200).map { $0 & 0x7F })))
        XCTAssertEqual(whole[9], .write(serverFrame(.close, [0x03, 0xE8])))
        XCTAssertEqual(whole[10], .closeConnection(.normal, "bye"))
        checkAllSplits(bytes, make, expectMessages: 7)
    }

    func testStreamEndingInProtocolErrorEverySplit() {
        var s: [UInt8] = []
        s += clientFrame(.text, "one")
        s += clientFrame(.text, Array("tw".utf8), fin: false)
        s += clientFrame(.ping, Array("p".utf8))
        s += clientFrame(.binary, [1, 2, 3]) // new message inside a fragmented one: 1002
        s += clientFrame(.text, "never")
        checkAllSplits(s, { makeMachine(.server) }, expectMessages: 1)
        var m = makeMachine(.server)
        let actions = m.feed(s)
        XCTAssertEqual(actions.first, .deliver(.text("one")))
        assertFails(Array(actions.suffix(2)), with: .protocolError)
    }

    func testStreamEndingInInvalidUTF8EverySplit() {
        var s: [UInt8] = []
        s += clientFrame(.binary, [0xFF])
        s += clientFrame(.text, [0x61, 0xE2, 0x82], fin: false)
        s += clientFrame(.continuation, [0xAC, 0x62, 0xED], fin: false)
        s += clientFrame(.continuation, [0xA0, 0x80], fin: true) // surrogate: 1007
        checkAllSplits(s, { makeMachine(.server) }, expectMessages: 1)
        var m = makeMachine(.server)
        assertFails(Array(m.feed(s).dropFirst()), with: .invalidPayload)
    }

    func testClientRoleStreamEverySplit() {
        var s: [UInt8] = []
        s += serverFrame(.text, Array("Hello".utf8))
        s += serverFrame(.binary, pseudoRandomBytes(70_000)) // 127-length form
        s += serverFrame(.ping, [1, 2, 3])
        s += serverFrame(.text, Array("frag".utf8), fin: false)
        s += serverFrame(.continuation, Array("ment".utf8))
        s += serverFrame(.close, [])
        // 70 KB × 70 K splits is too slow; check the header region and the tail exhaustively, the rest by sampling.
        let make = { makeMachine(.client) }
        let whole = feedWhole(s, make)
        XCTAssertEqual(whole.filter { if case .deliver = $0 { true } else { false } }.count, 3, describe(whole))
        XCTAssertEqual(whole.last, .closeConnection(.noStatus, ""))
        let cuts = Array(0..<40) + Array(stride(from: 40, to: s.count - 60, by: 997)) + Array((s.count - 60)..<s.count)
        for cut in cuts where cut > 0 {
            XCTAssertEqual(feedPieces(s, cuts: [cut], make), whole, "cut \(cut)")
        }
        // Control frames' masked replies differ only by key; the machine's keys are deterministic, so equality holds.
    }
}
