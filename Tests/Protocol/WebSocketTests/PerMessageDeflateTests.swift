import XCTest
import WebSocket

/// RFC 7692 §7.2.3 examples and compression through the state machine.
final class PerMessageDeflateTests: XCTestCase {
    let helloCompressed = hex("f2 48 cd c9 c9 07 00")

    // MARK: RFC 7692 §7.2.3.1: one compressed DEFLATE block

    func testSingleCompressedFrameAsClient() {
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(hex("c1 07 f2 48 cd c9 c9 07 00")), [.deliver(.text("Hello"))])
    }

    func testSingleCompressedFrameAsServer() {
        var m = deflateMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.text, helloCompressed, rsv1: true)), [.deliver(.text("Hello"))])
    }

    func testFragmentedCompressedMessage() {
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(hex("41 03 f2 48 cd")), [])
        XCTAssertEqual(m.feed(hex("80 04 c9 c9 07 00")), [.deliver(.text("Hello"))])
    }

    func testCompressedBinaryMessage() {
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(hex("c2 07 f2 48 cd c9 c9 07 00")), [.deliver(.binary(Array("Hello".utf8)))])
    }

    // MARK: RFC 7692 §7.2.3.2: sharing the LZ77 window

    func testTwoMessagesWithContextTakeover() {
        var m = deflateMachine(.client, contextTakeover: true)
        XCTAssertEqual(m.feed(hex("c1 07 f2 48 cd c9 c9 07 00")), [.deliver(.text("Hello"))])
        XCTAssertEqual(m.feed(hex("c1 05 f2 00 11 00 00")), [.deliver(.text("Hello"))])
    }

    func testSecondMessageNeedsTheWindow() {
        // Without context takeover the back-reference of the second message points at nothing: corrupt data.
        var m = deflateMachine(.client, contextTakeover: false)
        XCTAssertEqual(m.feed(hex("c1 07 f2 48 cd c9 c9 07 00")), [.deliver(.text("Hello"))])
        let actions = m.feed(hex("c1 05 f2 00 11 00 00"))
        XCTAssertFalse(actions.contains(.deliver(.text("Hello"))), "\(describe(actions))")
        XCTAssertEqual(m.state, .closed)
    }

    func testInflaterContextTakeoverDirectly() throws {
        let inflater = Inflater(noContextTakeover: false)
        XCTAssertEqual(try inflater.decompress(helloCompressed, limit: 100), Array("Hello".utf8))
        XCTAssertEqual(try inflater.decompress(hex("f2 00 11 00 00"), limit: 100), Array("Hello".utf8))
        XCTAssertEqual(try inflater.decompress(hex("f2 00 11 00 00"), limit: 100), Array("Hello".utf8))
    }

    // MARK: RFC 7692 §7.2.3.3: DEFLATE block with no compression

    func testStoredBlock() {
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(hex("c1 0b 00 05 00 fa ff 48 65 6c 6c 6f 00")), [.deliver(.text("Hello"))])
    }

    // MARK: RFC 7692 §7.2.3.4: DEFLATE block with BFINAL set

    func testFinalBlock() {
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(hex("c1 08 f3 48 cd c9 c9 07 00 00")), [.deliver(.text("Hello"))])
        // And the connection still decodes the next message.
        XCTAssertEqual(m.feed(hex("c1 07 f2 48 cd c9 c9 07 00")), [.deliver(.text("Hello"))])
    }

    // MARK: RFC 7692 §7.2.3.5: two DEFLATE blocks in one message

    func testTwoBlocks() {
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(hex("c1 0d f2 48 05 00 00 00 ff ff ca c9 c9 07 00")), [.deliver(.text("Hello"))])
    }

    // MARK: Deflater

    func testDeflaterFreshContextMatchesRFC() {
        let d = Deflater(noContextTakeover: true)
        XCTAssertEqual(d.compress(Array("Hello".utf8)), helloCompressed)
        XCTAssertEqual(d.compress(Array("Hello".utf8)), helloCompressed, "reset per message")
    }

    func testDeflaterWithContextTakeoverMatchesRFC() {
        let d = Deflater(noContextTakeover: false)
        XCTAssertEqual(d.compress(Array("Hello".utf8)), helloCompressed)
        XCTAssertEqual(d.compress(Array("Hello".utf8)), hex("f2 00 11 00 00"))
    }

    func testEmptyMessageRoundTrip() throws {
        let d = Deflater(noContextTakeover: true)
        let compressed = d.compress([])
        XCTAssertFalse(compressed.isEmpty)
        XCTAssertEqual(try Inflater(noContextTakeover: true).decompress(compressed, limit: 10), [])
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(serverFrame(.text, compressed, rsv1: true)), [.deliver(.text(""))])
    }

    func testDeflateInflateRoundTripManySizesAndWindows() throws {
        for windowBits in [9, 12, 15] {
            let d = Deflater(windowBits: windowBits, noContextTakeover: false)
            let i = Inflater(noContextTakeover: false)
            for size in [0, 1, 100, 1000, 70_000, 300_000] {
                let text = Array(String(repeating: "The quick brown fox jumps over the lazy dög. ", count: size / 46 + 1).utf8.prefix(size))
                let random = pseudoRandomBytes(size, seed: UInt64(size + windowBits))
                for input in [text, random] {
                    let c = d.compress(input)
                    XCTAssertEqual(try i.decompress(c, limit: 1 << 20), input, "size \(size) window \(windowBits)")
                }
            }
        }
    }

    func testCompressedMessagesThroughMachineWithContextTakeover() {
        let d = Deflater(noContextTakeover: false)
        var m = deflateMachine(.server, contextTakeover: true)
        for n in 0..<20 {
            let text = "message \(n): " + String(repeating: "hubbub ", count: n * 10)
            let body = d.compress(Array(text.utf8))
            // Split some of them across two frames.
            if body.count > 4 && n % 2 == 0 {
                let cut = body.count / 2
                XCTAssertEqual(m.feed(clientFrame(.text, Array(body[..<cut]), fin: false, rsv1: true)), [])
                XCTAssertEqual(m.feed(clientFrame(.continuation, Array(body[cut...]))), [.deliver(.text(text))])
            } else {
                XCTAssertEqual(m.feed(clientFrame(.text, body, rsv1: true)), [.deliver(.text(text))])
            }
        }
    }

    func testUncompressedMessagesStillAcceptedWithDeflateNegotiated() {
        var m = deflateMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.text, "plain")), [.deliver(.text("plain"))])
        XCTAssertEqual(m.feed(clientFrame(.text, Array("fra".utf8), fin: false) + clientFrame(.continuation, Array("gment".utf8))),
                       [.deliver(.text("fragment"))])
    }

    func testCompressedInvalidUTF8TextFails1007() {
        let body = Deflater(noContextTakeover: true).compress([0x61, 0xC0, 0x80])
        assertStreamFails(clientFrame(.text, body, rsv1: true), with: .invalidPayload, machine: deflateMachine(.server))
        // The same bytes as binary are fine.
        var m = deflateMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.binary, body, rsv1: true)), [.deliver(.binary([0x61, 0xC0, 0x80]))])
    }

    func testCorruptDeflateDataFailsTheConnection() {
        var m = deflateMachine(.server)
        // BTYPE 11 is reserved: invalid deflate data.
        let actions = m.feed(clientFrame(.binary, hex("07 ff ff"), rsv1: true))
        XCTAssertEqual(actions.count, 2, describe(actions))
        XCTAssertFalse(actions.contains { if case .deliver = $0 { true } else { false } })
        XCTAssertEqual(m.state, .closed)
    }

    func testDeflateBombFails1009() {
        let zeros = [UInt8](repeating: 0, count: 10 << 20)
        let bomb = Deflater(level: 9, noContextTakeover: true).compress(zeros)
        XCTAssertLessThan(bomb.count, 64 << 10, "10 MiB of zeros compress to a small frame")
        let config = SMConfig(maxFrameSize: 1 << 20, maxMessageSize: 1 << 20)
        assertStreamFails(clientFrame(.binary, bomb, rsv1: true), with: .messageTooBig, machine: deflateMachine(.server, config))
        XCTAssertThrowsError(try Inflater(noContextTakeover: true).decompress(bomb, limit: 1 << 20)) { error in
            XCTAssertEqual((error as? WebSocketError)?.code, .messageTooBig)
        }
    }

    func testInflateLimitIsExact() throws {
        let data = [UInt8](repeating: 0x41, count: 100_000)
        let c = Deflater(noContextTakeover: true).compress(data)
        XCTAssertEqual(try Inflater(noContextTakeover: true).decompress(c, limit: 100_000), data)
        XCTAssertThrowsError(try Inflater(noContextTakeover: true).decompress(c, limit: 99_999))
        var ok = deflateMachine(.server, SMConfig(maxMessageSize: 100_000))
        XCTAssertEqual(ok.feed(clientFrame(.binary, c, rsv1: true)), [.deliver(.binary(data))])
        assertStreamFails(clientFrame(.binary, c, rsv1: true), with: .messageTooBig,
                          machine: deflateMachine(.server, SMConfig(maxMessageSize: 99_999)))
    }

    func testInflaterRecoversAfterBombWhenResetPerMessage() throws {
        // A shared per-loop inflater must be usable by the next connection after a failure.
        let inflater = Inflater(noContextTakeover: true)
        let bomb = Deflater(noContextTakeover: true).compress([UInt8](repeating: 0, count: 1 << 20))
        XCTAssertThrowsError(try inflater.decompress(bomb, limit: 1000))
        XCTAssertThrowsError(try inflater.decompress(hex("07 ff ff"), limit: 1000))
        XCTAssertEqual(try inflater.decompress(helloCompressed, limit: 1000), Array("Hello".utf8))
    }

    func testRSV1WithoutNegotiationIsAProtocolError() {
        assertStreamFails(clientFrame(.text, helloCompressed, rsv1: true), with: .protocolError, machine: makeMachine(.server))
    }

    func testOutboundMessageCompressedFrameDecodes() throws {
        let text = String(repeating: "{\"kind\":\"disruption\"} ", count: 50)
        let message = OutboundMessage(text: text)
        XCTAssertEqual(message.frame.array, serverFrame(.text, Array(text.utf8)))
        let pool = DeflaterPool()
        let frame = message.compressedFrame(windowBits: 15, pool: pool).array
        XCTAssertEqual(frame.first, 0xC1, "FIN + RSV1 + text")
        XCTAssertLessThan(frame.count, message.frame.count)
        XCTAssertEqual(message.compressedFrame(windowBits: 15, pool: pool).array, frame, "cached and deterministic")
        var m = deflateMachine(.client)
        XCTAssertEqual(m.feed(frame), [.deliver(.text(text))])
        var m2 = deflateMachine(.client)
        XCTAssertEqual(m2.feed(message.compressedFrame(windowBits: 9, pool: pool).array), [.deliver(.text(text))])
    }
}
