import XCTest
import WebSocket

/// Frames that break RFC 6455 fail the connection with 1002; frames and messages over the limits with 1009.
final class ProtocolErrorTests: XCTestCase {
    let mask: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]

    func testUnmaskedClientFrame() {
        assertStreamFails(serverFrame(.text, Array("Hello".utf8)), with: .protocolError, machine: makeMachine(.server))
        assertStreamFails(serverFrame(.ping, []), with: .protocolError, machine: makeMachine(.server))
    }

    func testMaskedServerFrame() {
        assertStreamFails(clientFrame(.text, "Hello"), with: .protocolError, machine: makeMachine(.client))
    }

    func testReservedOpcodes() {
        for op: UInt8 in [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            for fin: UInt8 in [0x80, 0x00] {
                assertStreamFails([fin | op, 0x80] + mask, with: .protocolError)
                // Known as soon as the first two bytes arrive.
                var m = makeMachine(.server)
                assertFails(m.feed([fin | op, 0x80]), with: .protocolError)
            }
        }
    }

    func testReservedBitsWithoutExtension() {
        for rsv: UInt8 in [0x40, 0x20, 0x10, 0x70] {
            assertStreamFails([0x81 | rsv, 0x81] + mask + [0x41], with: .protocolError)
        }
        // With permessage-deflate only RSV1 gains a meaning.
        for rsv: UInt8 in [0x20, 0x10, 0x60] {
            assertStreamFails([0x81 | rsv, 0x81] + mask + [0x41], with: .protocolError, machine: deflateMachine(.server))
        }
    }

    func testRSV1OnContinuation() {
        var m = deflateMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.text, hex("f2 48 cd"), fin: false, rsv1: true)), [])
        assertFails(m.feed(clientFrame(.continuation, hex("c9 c9 07 00"), rsv1: true)), with: .protocolError)
    }

    func testRSV1OnControlFrame() {
        assertStreamFails(clientFrame(.ping, [], rsv1: true), with: .protocolError, machine: deflateMachine(.server))
    }

    func testFragmentedPing() {
        assertStreamFails(clientFrame(.ping, Array("a".utf8), fin: false), with: .protocolError)
        assertStreamFails(clientFrame(.pong, [], fin: false), with: .protocolError)
        assertStreamFails(clientFrame(.close, [0x03, 0xE8], fin: false), with: .protocolError)
    }

    func testOversizedPing() {
        assertStreamFails(clientFrame(.ping, [UInt8](repeating: 0x61, count: 126)), with: .protocolError)
        // Refused from the header alone.
        var m = makeMachine(.server)
        assertFails(m.feed(hex("89 fe 00 7e")), with: .protocolError)
        // 125 bytes is fine.
        var ok = makeMachine(.server)
        XCTAssertEqual(ok.feed(clientFrame(.ping, [UInt8](repeating: 0x61, count: 125))),
                       [.write(serverFrame(.pong, [UInt8](repeating: 0x61, count: 125)))])
    }

    func testContinuationWithoutStart() {
        assertStreamFails(clientFrame(.continuation, Array("x".utf8)), with: .protocolError)
        assertStreamFails(clientFrame(.continuation, Array("x".utf8), fin: false), with: .protocolError)
        // And after a message finished.
        assertStreamFails(clientFrame(.text, "done") + clientFrame(.continuation, Array("x".utf8)), with: .protocolError)
    }

    func testNewMessageDuringFragmentedMessage() {
        assertStreamFails(clientFrame(.text, Array("a".utf8), fin: false) + clientFrame(.text, "b"), with: .protocolError)
        assertStreamFails(clientFrame(.binary, [1], fin: false) + clientFrame(.text, "b", fin: false), with: .protocolError)
        assertStreamFails(clientFrame(.text, Array("a".utf8), fin: false) + clientFrame(.binary, [1]), with: .protocolError)
    }

    func testNonMinimalLengths() {
        // 16-bit form holding 5.
        assertStreamFails(hex("82 fe 00 05") + mask + [1, 2, 3, 4, 5], with: .protocolError)
        // 16-bit form holding 125.
        assertStreamFails(hex("82 fe 00 7d") + mask, with: .protocolError)
        // 64-bit form holding 200 and 65535.
        assertStreamFails(hex("82 ff 00 00 00 00 00 00 00 c8") + mask, with: .protocolError)
        assertStreamFails(hex("82 ff 00 00 00 00 00 00 ff ff") + mask, with: .protocolError)
        // Client role (unmasked) too.
        assertStreamFails(hex("82 7e 00 05 01 02 03 04 05"), with: .protocolError, machine: makeMachine(.client))
    }

    func testTopBitOf64BitLength() {
        assertStreamFails(hex("82 ff 80 00 00 00 00 00 00 00") + mask, with: .protocolError)
        assertStreamFails(hex("82 ff ff ff ff ff ff ff ff ff") + mask, with: .protocolError)
        assertStreamFails(hex("82 7f 80 00 00 00 00 01 00 00"), with: .protocolError, machine: makeMachine(.client))
    }

    func testNothingDeliveredAndNoReplyBeforeTheError() {
        // A frame that is fine, then a bad one in the same read: the first is delivered, then the failure.
        var m = makeMachine(.server)
        let actions = m.feed(clientFrame(.text, "ok") + [0x83, 0x80] + mask)
        XCTAssertEqual(actions.first, .deliver(.text("ok")))
        assertFails(Array(actions.dropFirst()), with: .protocolError)
    }

    // MARK: Limits

    func testFrameOverMaxFrameSizeFailsBeforePayload() {
        let config = SMConfig(maxFrameSize: 1000, maxMessageSize: 1 << 20)
        // Only the header of a 1001-byte frame: refused before the payload arrives (16-bit form).
        var m = makeMachine(.server, config)
        assertFails(m.feed(hex("82 fe 03 e9")), with: .messageTooBig)
        // 64-bit form, before the mask key.
        var m2 = makeMachine(.server, config)
        assertFails(m2.feed(hex("82 ff 00 00 00 01 00 00 00 00")), with: .messageTooBig)
        // Exactly at the limit is fine.
        var ok = makeMachine(.server, config)
        XCTAssertEqual(ok.feed(clientFrame(.binary, [UInt8](repeating: 1, count: 1000))).count, 1)
        // Client role too.
        var c = makeMachine(.client, config)
        assertFails(c.feed(hex("81 7e 03 e9")), with: .messageTooBig, role: .client)
    }

    func testALoweredMessageLimitRefusesOnTheHeaderAndCanBeRaisedBack() {
        let config = SMConfig(maxFrameSize: 1 << 20, maxMessageSize: 1 << 20)
        var m = makeMachine(.server, config)
        m.maxMessageSize = 1000
        XCTAssertEqual(m.maxMessageSize, 1000)
        XCTAssertEqual(m.feed(clientFrame(.binary, [UInt8](repeating: 1, count: 1000))).count, 1, "at the lowered limit: delivered")
        assertFails(m.feed(hex("82 fe 03 e9") + mask), with: .messageTooBig) // the header of 1001 bytes: refused before its payload
        var raised = makeMachine(.server, config)
        raised.maxMessageSize = 1000
        raised.maxMessageSize = 1 << 30
        XCTAssertEqual(raised.maxMessageSize, 1 << 20, "never above the configuration's")
        XCTAssertEqual(raised.feed(clientFrame(.binary, [UInt8](repeating: 1, count: 5000))).count, 1)
    }

    func testHugeDeclaredLengthDoesNotAllocate() {
        // 2^62 bytes declared: must fail with 1009 rather than trap or allocate.
        var m = makeMachine(.server)
        assertFails(m.feed(hex("82 ff 40 00 00 00 00 00 00 00") + mask), with: .messageTooBig)
    }

    func testMessageOverMaxMessageSizeAcrossFragments() {
        let config = SMConfig(maxFrameSize: 1000, maxMessageSize: 1500)
        var m = makeMachine(.server, config)
        XCTAssertEqual(m.feed(clientFrame(.binary, [UInt8](repeating: 1, count: 800), fin: false)), [])
        // The next fragment's header alone (2 + 2 length + 4 mask bytes) tips it over.
        let next = clientFrame(.continuation, [UInt8](repeating: 2, count: 701), fin: true)
        XCTAssertEqual(m.feed(Array(next.prefix(4))), [], "header not complete yet")
        assertFails(m.feed(Array(next[4..<8])), with: .messageTooBig)
        // Exactly the limit across fragments is fine.
        var ok = makeMachine(.server, config)
        let wire = clientFrame(.text, [UInt8](repeating: 0x61, count: 800), fin: false)
            + clientFrame(.continuation, [UInt8](repeating: 0x62, count: 700))
        XCTAssertEqual(ok.feed(wire), [.deliver(Message(kind: .text, data: [UInt8](repeating: 0x61, count: 800) + [UInt8](repeating: 0x62, count: 700)))])
    }

    func testSingleFrameOverMaxMessageSize() {
        let config = SMConfig(maxFrameSize: 4000, maxMessageSize: 1000)
        var m = makeMachine(.server, config)
        assertFails(m.feed(hex("82 fe 03 e9") + mask), with: .messageTooBig)
    }

    func testCompressedMessageOverLimitAcrossFragments() {
        let config = SMConfig(maxFrameSize: 1 << 20, maxMessageSize: 10_000)
        let body = Deflater(noContextTakeover: true).compress([UInt8](repeating: 7, count: 6_000) + pseudoRandomBytes(6_000))
        var m = deflateMachine(.server, config)
        let half = body.count / 2
        let actions = m.feed(clientFrame(.binary, Array(body[..<half]), fin: false, rsv1: true)
                             + clientFrame(.continuation, Array(body[half...])))
        assertFails(actions, with: .messageTooBig)
    }
}
