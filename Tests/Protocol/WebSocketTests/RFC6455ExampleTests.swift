import XCTest
import WebSocket

/// The examples of RFC 6455 §5.7, through the state machine of the role that receives them.
final class RFC6455ExampleTests: XCTestCase {
    let hello = Array("Hello".utf8)

    func testSingleFrameUnmaskedTextAsClient() {
        var m = makeMachine(.client)
        XCTAssertEqual(m.feed(hex("81 05 48 65 6c 6c 6f")), [.deliver(.text("Hello"))])
        XCTAssertEqual(m.state, .open)
    }

    func testSingleFrameMaskedTextAsServer() {
        let wire = hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(wire), [.deliver(.text("Hello"))])
        // The encoder produces exactly the RFC's bytes for that key.
        XCTAssertEqual(FrameEncoder.frame(opcode: .text, payload: hello, maskKey: maskKey(0x37, 0xfa, 0x21, 0x3d)), wire)
    }

    func testUnmaskedFrameRefusedByServerAndMaskedRefusedByClient() {
        assertStreamFails(hex("81 05 48 65 6c 6c 6f"), with: .protocolError, machine: makeMachine(.server))
        assertStreamFails(hex("81 85 37 fa 21 3d 7f 9f 4d 51 58"), with: .protocolError, machine: makeMachine(.client))
    }

    func testFragmentedUnmaskedText() {
        var m = makeMachine(.client)
        XCTAssertEqual(m.feed(hex("01 03 48 65 6c")), [], "no message before the final fragment")
        XCTAssertEqual(m.feed(hex("80 02 6c 6f")), [.deliver(.text("Hello"))])
        // Both fragments in one read.
        var m2 = makeMachine(.client)
        XCTAssertEqual(m2.feed(hex("01 03 48 65 6c 80 02 6c 6f")), [.deliver(.text("Hello"))])
    }

    func testUnmaskedPingGetsMaskedPongFromClient() {
        var m = makeMachine(.client)
        let actions = m.feed(hex("89 05 48 65 6c 6c 6f"))
        XCTAssertEqual(actions.count, 1)
        guard case .write(let bytes) = actions.first, let pong = parseWritten(bytes, by: .client) else {
            return XCTFail("expected a pong, got \(describe(actions))")
        }
        XCTAssertEqual(pong.header.opcode, .pong)
        XCTAssertNotNil(pong.header.maskKey, "a client's pong is masked")
        XCTAssertEqual(pong.payload, hello)
    }

    func testMaskedPingGetsRFCPongFromServer() {
        var m = makeMachine(.server)
        // The RFC's unmasked pong response is 0x8a 0x05 "Hello".
        XCTAssertEqual(m.feed(clientFrame(.ping, hello)), [.write(hex("8a 05 48 65 6c 6c 6f"))])
    }

    func testUnsolicitedPongIsIgnored() {
        var m = makeMachine(.client)
        XCTAssertEqual(m.feed(hex("8a 05 48 65 6c 6c 6f")), [])
        XCTAssertEqual(m.state, .open)
        var s = makeMachine(.server)
        XCTAssertEqual(s.feed(clientFrame(.pong, hello)), [])
    }

    func test256ByteBinaryUses16BitLength() {
        let payload = pseudoRandomBytes(256)
        let wire = hex("82 7E 01 00") + payload
        XCTAssertEqual(serverFrame(.binary, payload), wire)
        var m = makeMachine(.client)
        XCTAssertEqual(m.feed(wire), [.deliver(.binary(payload))])
        var s = makeMachine(.server)
        let masked = clientFrame(.binary, payload)
        XCTAssertEqual(Array(masked.prefix(4)), hex("82 FE 01 00"))
        XCTAssertEqual(s.feed(masked), [.deliver(.binary(payload))])
    }

    func test64KiBBinaryUses64BitLength() {
        let payload = pseudoRandomBytes(65536)
        let wire = hex("82 7F 00 00 00 00 00 01 00 00") + payload
        XCTAssertEqual(serverFrame(.binary, payload), wire)
        var m = makeMachine(.client)
        XCTAssertEqual(m.feed(wire), [.deliver(.binary(payload))])
        var s = makeMachine(.server)
        let masked = clientFrame(.binary, payload)
        XCTAssertEqual(Array(masked.prefix(10)), hex("82 FF 00 00 00 00 00 01 00 00"))
        XCTAssertEqual(s.feed(masked), [.deliver(.binary(payload))])
    }

    func testPingBetweenFragmentsIsAnsweredAndMessageStillAssembled() {
        var m = makeMachine(.client)
        let actions = m.feed(hex("01 03 48 65 6c") + hex("89 05 48 65 6c 6c 6f") + hex("80 02 6c 6f"))
        XCTAssertEqual(actions.count, 2)
        guard case .write(let bytes) = actions.first, let pong = parseWritten(bytes, by: .client) else {
            return XCTFail("expected a pong first, got \(describe(actions))")
        }
        XCTAssertEqual(pong.header.opcode, .pong)
        XCTAssertEqual(actions.last, .deliver(.text("Hello")))
    }

    func testHeaderParserFieldsOfRFCExample() throws {
        let wire = hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")
        let limits = FrameLimits(peer: .client, maxFramePayload: 1000)
        let header = try wire.withUnsafeBytes { try FrameHeaderParser.parse($0, limits: limits) }
        XCTAssertEqual(header, FrameHeader(fin: true, rsv: 0, opcode: .text, maskKey: maskKey(0x37, 0xfa, 0x21, 0x3d),
                                           payloadLength: 5, headerLength: 6))
        // Every proper prefix of the header asks for more bytes.
        for n in 0..<6 {
            let partial = try Array(wire.prefix(n)).withUnsafeBytes { try FrameHeaderParser.parse($0, limits: limits) }
            XCTAssertNil(partial, "prefix of \(n) bytes")
        }
    }
}
