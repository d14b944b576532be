import XCTest
import WebSocket

/// FrameEncoder → FrameHeaderParser / state machine round trips, masking and close payloads.
final class FrameCodecTests: XCTestCase {
    static let sizes = [0, 1, 125, 126, 127, 65535, 65536, 1 << 20]

    func testHeaderLengths() {
        XCTAssertEqual(FrameEncoder.headerLength(payload: 0, masked: false), 2)
        XCTAssertEqual(FrameEncoder.headerLength(payload: 125, masked: false), 2)
        XCTAssertEqual(FrameEncoder.headerLength(payload: 126, masked: false), 4)
        XCTAssertEqual(FrameEncoder.headerLength(payload: 65535, masked: false), 4)
        XCTAssertEqual(FrameEncoder.headerLength(payload: 65536, masked: false), 10)
        XCTAssertEqual(FrameEncoder.headerLength(payload: 65536, masked: true), 14)
        XCTAssertEqual(FrameEncoder.headerLength(payload: 1, masked: true), 6)
    }

    func testEncodeParseRoundTripAllSizes() throws {
        for size in Self.sizes {
            for masked in [false, true] {
                for kind in [MessageKind.text, .binary] {
                    let payload = kind == .text ? pseudoRandomBytes(size, seed: UInt64(size) + 7).map { 0x20 + $0 % 0x5F }
                                                : pseudoRandomBytes(size, seed: UInt64(size) + 3)
                    let key: UInt32? = masked ? maskKey(0xA1, 0xB2, 0xC3, UInt8(size & 0xFF)) : nil
                    let wire = FrameEncoder.frame(opcode: kind.opcode, payload: payload, maskKey: key)
                    let headerLength = FrameEncoder.headerLength(payload: size, masked: masked)
                    XCTAssertEqual(wire.count, headerLength + size)
                    let limits = FrameLimits(peer: masked ? .client : .server, maxFramePayload: 1 << 21)
                    let header = try wire.withUnsafeBytes { try FrameHeaderParser.parse($0, limits: limits) }
                    XCTAssertEqual(header, FrameHeader(fin: true, rsv: 0, opcode: kind.opcode, maskKey: key,
                                                       payloadLength: size, headerLength: headerLength), "size \(size)")
                    if masked && size >= 8 {
                        XCTAssertNotEqual(Array(wire[headerLength...]), payload, "payload is masked on the wire")
                    }
                    // Through the machine of the receiving role.
                    var m = makeMachine(masked ? .server : .client)
                    XCTAssertEqual(m.feed(wire), [.deliver(Message(kind: kind, data: payload))], "size \(size) masked \(masked) \(kind)")
                }
            }
        }
    }

    func testLengthEncodingBytes() {
        XCTAssertEqual(Array(serverFrame(.binary, [UInt8](repeating: 0, count: 125)).prefix(2)), hex("82 7d"))
        XCTAssertEqual(Array(serverFrame(.binary, [UInt8](repeating: 0, count: 126)).prefix(4)), hex("82 7e 00 7e"))
        XCTAssertEqual(Array(serverFrame(.binary, [UInt8](repeating: 0, count: 65535)).prefix(4)), hex("82 7e ff ff"))
        XCTAssertEqual(Array(serverFrame(.binary, [UInt8](repeating: 0, count: 65536)).prefix(10)), hex("82 7f 00 00 00 00 00 01 00 00"))
        XCTAssertEqual(Array(serverFrame(.binary, [UInt8](repeating: 0, count: 1 << 20)).prefix(10)), hex("82 7f 00 00 00 00 00 10 00 00"))
    }

    func testFlagsAndOpcodesRoundTrip() throws {
        let limits = FrameLimits(peer: .server, maxFramePayload: 100, allowedRSV: 0x40)
        for (opcode, fin, rsv1) in [(Opcode.text, false, true), (.continuation, false, false), (.continuation, true, false),
                                    (.binary, true, true), (.ping, true, false), (.pong, true, false), (.close, true, false)] {
            let wire = FrameEncoder.frame(opcode: opcode, payload: [1, 2, 3], fin: fin, rsv1: rsv1)
            let h = try wire.withUnsafeBytes { try FrameHeaderParser.parse($0, limits: limits) }
            XCTAssertEqual(h?.opcode, opcode)
            XCTAssertEqual(h?.fin, fin)
            XCTAssertEqual(h?.rsv1, rsv1)
        }
    }

    func testMaskingMatchesBytewiseXORAtEveryLengthAndIsAnInvolution() {
        let key = maskKey(0x01, 0x80, 0x7f, 0xfe)
        let keyBytes: [UInt8] = [0x01, 0x80, 0x7f, 0xfe]
        for n in 0..<70 {
            let data = pseudoRandomBytes(n, seed: UInt64(n + 1))
            let masked = data.withUnsafeBytes { Masking.unmask(key: key, $0) }
            XCTAssertEqual(masked, data.enumerated().map { $0.element ^ keyBytes[$0.offset % 4] }, "length \(n)")
            XCTAssertEqual(masked.withUnsafeBytes { Masking.unmask(key: key, $0) }, data)
        }
    }

    func testFragmentedRoundTripThroughMachine() {
        let payload = pseudoRandomBytes(10_000)
        var wire: [UInt8] = []
        var i = 0
        var first = true
        for chunk in [1, 0, 125, 126, 2000, 65535] {
            let end = min(payload.count, i + chunk)
            wire += clientFrame(first ? .binary : .continuation, Array(payload[i..<end]), fin: false)
            first = false
            i = end
        }
        wire += clientFrame(.continuation, Array(payload[i...]), fin: true)
        var m = makeMachine(.server)
        XCTAssertEqual(m.feed(wire), [.deliver(.binary(payload))])
    }

    // MARK: Close payloads

    func testClosePayloadShortReason() {
        XCTAssertEqual(FrameEncoder.closePayload(code: .normal, reason: ""), [0x03, 0xE8])
        XCTAssertEqual(FrameEncoder.closePayload(code: .slowConsumer, reason: "slow"), [0x0F, 0xA1] + Array("slow".utf8))
        XCTAssertEqual(FrameEncoder.closePayload(code: CloseCode(65535), reason: ""), [0xFF, 0xFF])
    }

    func testClosePayloadCutsAtCharacterBoundary() {
        for filler in ["a", "é", "€", "😀"] {
            for prefix in ["", "x", "xy", "xyz"] {
                let reason = prefix + String(repeating: filler, count: 200)
                let payload = FrameEncoder.closePayload(code: .goingAway, reason: reason)
                XCTAssertLessThanOrEqual(payload.count, 125)
                XCTAssertEqual(Array(payload.prefix(2)), [0x03, 0xE9])
                let cut = Array(payload.dropFirst(2))
                XCTAssertTrue(UTF8Validator.isValid(cut), "cut inside a character: \(filler) \(prefix)")
                XCTAssertTrue(Array(reason.utf8).starts(with: cut))
                // As long as possible: one more character would not fit.
                let charLen = filler.utf8.count
                XCTAssertGreaterThan(cut.count + charLen, 123, "\(filler) \(prefix): \(cut.count)")
            }
        }
    }

    func testClosePayloadExactly123BytesKept() {
        let reason = String(repeating: "r", count: 123)
        XCTAssertEqual(FrameEncoder.closePayload(code: .normal, reason: reason).count, 125)
        XCTAssertEqual(FrameEncoder.closePayload(code: .normal, reason: reason + "s").count, 125)
    }

    func testCloseFrameFromMachineWithLongReasonIsValid() {
        var m = makeMachine(.server)
        guard let frame = m.close(code: .goingAway, reason: String(repeating: "ü", count: 100), now: 0),
              let parsed = parseWritten(frame, by: .server) else { return XCTFail("no close frame") }
        XCTAssertEqual(parsed.header.opcode, .close)
        XCTAssertLessThanOrEqual(parsed.payload.count, 125)
        XCTAssertTrue(UTF8Validator.isValid(Array(parsed.payload.dropFirst(2))))
        // And the peer's machine accepts it.
        var client = makeMachine(.client)
        let actions = client.feed(frame)
        XCTAssertEqual(actions.last, .closeConnection(.goingAway, String(repeating: "ü", count: 61)))
    }
}
