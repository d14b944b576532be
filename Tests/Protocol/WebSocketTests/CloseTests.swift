import XCTest
import WebSocket

/// The close handshake (RFC 6455 §5.5.1, §7) and close codes.
final class CloseTests: XCTestCase {
    static let validCodes: [UInt16] = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4001, 4002, 4003, 4999]
    static let invalidCodes: [UInt16] = [0, 1, 999, 1004, 1005, 1006, 1012, 1013, 1014, 1015, 1016, 1100, 2000, 2999, 5000, 65535]

    func closePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
        [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
    }

    func testIsValidOnWireForEveryCode() {
        for raw in 0...UInt16.max {
            let expected = (1000...1003).contains(raw) || (1007...1011).contains(raw) || (3000...4999).contains(raw)
            XCTAssertEqual(CloseCode(raw).isValidOnWire, expected, "\(raw)")
        }
    }

    func testValidCodesAreEchoed() {
        for code in Self.validCodes {
            for role in [Role.server, .client] {
                var m = makeMachine(role)
                let actions = m.feed(peerFrame(to: role, .close, closePayload(code, Array("bye ✓".utf8))))
                XCTAssertEqual(actions.count, 2, describe(actions))
                guard case .write(let bytes) = actions.first, let frame = parseWritten(bytes, by: role) else {
                    XCTFail("no close reply for \(code)"); continue
                }
                XCTAssertEqual(frame.header.opcode, .close)
                XCTAssertEqual(closeCode(of: frame.payload), code, "echoes the code")
                XCTAssertEqual(actions.last, .closeConnection(CloseCode(code), "bye ✓"))
                XCTAssertEqual(m.state, .closed)
                XCTAssertFalse(m.canSend)
            }
        }
        // The server's echo of 1000 is exactly 88 02 03 e8.
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.close, closePayload(1000))).first, .write(hex("88 02 03 e8")))
    }

    func testInvalidCodesFail1002() {
        for code in Self.invalidCodes {
            assertStreamFails(clientFrame(.close, closePayload(code)), with: .protocolError)
        }
    }

    func testOneBytePayloadFails1002() {
        assertStreamFails(clientFrame(.close, [0x03]), with: .protocolError)
    }

    func testInvalidUTF8ReasonFails1007() {
        assertStreamFails(clientFrame(.close, closePayload(1000, hex("c0 80"))), with: .invalidPayload)
        assertStreamFails(clientFrame(.close, closePayload(1000, hex("61 e2 82"))), with: .invalidPayload)
    }

    func testMaximalCloseReasonAccepted() {
        var m = makeMachine(.server)
        let reason = String(repeating: "z", count: 123)
        let actions = m.feed(clientFrame(.close, closePayload(1000, Array(reason.utf8))))
        XCTAssertEqual(actions.last, .closeConnection(.normal, reason))
        // 124 bytes of reason: a 126-byte control frame is a protocol error.
        assertStreamFails(clientFrame(.close, closePayload(1000, Array((reason + "z").utf8))), with: .protocolError)
    }

    func testEmptyCloseGetsEmptyClose() {
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.close, [])), [.write(hex("88 00")), .closeConnection(.noStatus, "")])
        var c = makeMachine(.client)
        let actions = c.feed(serverFrame(.close, []))
        XCTAssertEqual(actions.count, 2)
        guard case .write(let bytes) = actions.first, let frame = parseWritten(bytes, by: .client) else { return XCTFail() }
        XCTAssertEqual(frame.header.opcode, .close)
        XCTAssertEqual(frame.payload, [])
        XCTAssertNotNil(frame.header.maskKey)
        XCTAssertEqual(actions.last, .closeConnection(.noStatus, ""))
    }

    func testInputAfterCloseIsIgnored() {
        var m = makeMachine(.server)
        let closeThenMore = clientFrame(.close, closePayload(1000)) + clientFrame(.text, "late") + clientFrame(.ping, [])
        let actions = m.feed(closeThenMore)
        XCTAssertEqual(actions.count, 2, describe(actions))
        XCTAssertEqual(m.feed(clientFrame(.text, "later")), [])
        XCTAssertEqual(m.feed(clientFrame(.close, closePayload(1000))), [])
        XCTAssertEqual(m.feed(hex("ff ff ff")), [], "garbage too")
        XCTAssertEqual(m.tick(UInt64.max / 2), [], "no timers once closed")
        XCTAssertNil(m.close(code: .normal, now: 0))
    }

    func testOurCloseThenPeersClose() {
        var m = makeMachine(.server, SMConfig(closeTimeoutNanos: 1000))
        let frame = m.close(code: .goingAway, reason: "restart", now: 10)
        XCTAssertEqual(frame, serverFrame(.close, FrameEncoder.closePayload(code: .goingAway, reason: "restart")))
        XCTAssertEqual(m.state, .closeSent(deadline: 1010))
        XCTAssertFalse(m.canSend)
        XCTAssertNil(m.close(code: .normal, now: 11), "only one close frame")
        // Messages arriving while we wait are dropped; the peer's close completes the handshake without a reply.
        XCTAssertEqual(m.feed(clientFrame(.text, "late"), now: 20), [])
        XCTAssertEqual(m.feed(clientFrame(.close, closePayload(1001)), now: 30), [.closeConnection(.goingAway, "")])
        XCTAssertEqual(m.state, .closed)
        XCTAssertEqual(m.tick(5000), [], "no timeout after the handshake finished")
    }

    func testClientCloseIsMasked() {
        var c = makeMachine(.client)
        guard let frame = c.close(code: .normal, reason: "done", now: 0), let parsed = parseWritten(frame, by: .client) else {
            return XCTFail("no close frame")
        }
        XCTAssertNotNil(parsed.header.maskKey)
        XCTAssertEqual(parsed.payload, FrameEncoder.closePayload(code: .normal, reason: "done"))
        XCTAssertEqual(c.feed(serverFrame(.close, closePayload(1000))), [.closeConnection(.normal, "")])
    }

    func testCloseTimeoutViaTick() {
        var m = makeMachine(.server, SMConfig(closeTimeoutNanos: 5_000))
        XCTAssertNotNil(m.close(code: .normal, now: 1_000))
        XCTAssertEqual(m.tick(5_999), [])
        let actions = m.tick(6_000)
        XCTAssertEqual(actions.count, 1)
        guard case .closeConnection(let code, _) = actions.first else { return XCTFail(describe(actions)) }
        XCTAssertEqual(code, .abnormal)
        XCTAssertEqual(m.state, .closed)
        XCTAssertEqual(m.tick(7_000), [], "reported once")
        XCTAssertEqual(m.feed(clientFrame(.close, closePayload(1000))), [])
    }

    func testProtocolErrorWhileClosingClosesWithoutSecondCloseFrame() {
        var m = makeMachine(.server)
        XCTAssertNotNil(m.close(code: .normal, now: 0))
        let actions = m.feed(hex("83 80 00 00 00 00")) // reserved opcode 3
        XCTAssertEqual(actions.count, 1, describe(actions))
        guard case .closeConnection(let code, _) = actions.first else { return XCTFail(describe(actions)) }
        XCTAssertEqual(code, .protocolError)
    }

    func testCloseDuringFragmentedMessage() {
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.text, Array("part".utf8), fin: false)), [])
        let actions = m.feed(clientFrame(.close, closePayload(1000)))
        XCTAssertEqual(actions, [.write(hex("88 02 03 e8")), .closeConnection(.normal, "")])
    }

    func testPeerMayFinishItsFragmentedMessageAfterOurClose() {
        // The peer had not seen our close yet when it sent the rest of its message (RFC 6455 §5.5.1 only stops
        // the closing side from sending data): the rest is dropped, and the handshake completes normally.
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(clientFrame(.text, Array("part".utf8), fin: false)), [])
        XCTAssertNotNil(m.close(code: .goingAway, reason: "restart", now: 0))
        XCTAssertEqual(m.feed(clientFrame(.continuation, Array("rest".utf8))), [], "not a protocol error")
        XCTAssertEqual(m.feed(clientFrame(.close, closePayload(1001))), [.closeConnection(.goingAway, "")])
        // Same with a compressed message in flight.
        var d = deflateMachine(.server)
        let body = Deflater(noContextTakeover: true).compress(Array("compressed in flight".utf8))
        XCTAssertEqual(d.feed(clientFrame(.text, Array(body.prefix(3)), fin: false, rsv1: true)), [])
        XCTAssertNotNil(d.close(code: .goingAway, now: 0))
        XCTAssertEqual(d.feed(clientFrame(.continuation, Array(body.dropFirst(3)))), [])
        XCTAssertEqual(d.feed(clientFrame(.close, closePayload(1000))), [.closeConnection(.normal, "")])
    }
}
