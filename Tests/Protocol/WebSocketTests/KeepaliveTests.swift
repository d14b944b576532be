import XCTest
import WebSocket

/// Keepalive pings and the pong timeout, driven by tick(now:).
final class KeepaliveTests: XCTestCase {
    let config = SMConfig(pingIntervalNanos: 10_000, pongTimeoutNanos: 5_000, closeTimeoutNanos: 1_000, idleTimeoutNanos: 0)

    func testPingAfterIntervalAndCloseWithoutPong() {
        var m = makeMachine(.server, config, now: 0)
        XCTAssertEqual(m.tick(9_999), [])
        XCTAssertEqual(m.tick(10_000), [.write(hex("89 00"))])
        XCTAssertEqual(m.tick(12_000), [], "one ping outstanding at a time")
        XCTAssertEqual(m.tick(14_999), [])
        let actions = m.tick(15_000)
        XCTAssertEqual(actions.count, 1)
        guard case .closeConnection(let code, _) = actions.first else { return XCTFail(describe(actions)) }
        XCTAssertEqual(code, .abnormal)
        XCTAssertEqual(m.state, .closed)
        XCTAssertEqual(m.tick(100_000), [])
    }

    func testPongClearsTheTimeout() {
        var m = makeMachine(.server, config, now: 0)
        XCTAssertEqual(m.tick(10_000), [.write(hex("89 00"))])
        XCTAssertEqual(m.feed(clientFrame(.pong, []), now: 12_000), [])
        XCTAssertEqual(m.tick(15_000), [], "no timeout after the pong")
        XCTAssertEqual(m.tick(21_999), [])
        XCTAssertEqual(m.tick(22_000), [.write(hex("89 00"))], "next ping an interval after the pong")
        XCTAssertEqual(m.state, .open)
    }

    func testInboundDataPostponesThePing() {
        var m = makeMachine(.server, config, now: 0)
        XCTAssertEqual(m.feed(clientFrame(.text, "hi"), now: 6_000), [.deliver(.text("hi"))])
        XCTAssertEqual(m.tick(10_000), [])
        XCTAssertEqual(m.tick(15_999), [])
        XCTAssertEqual(m.tick(16_000), [.write(hex("89 00"))])
    }

    func testDataIsNotAPong() {
        var m = makeMachine(.server, config, now: 0)
        XCTAssertEqual(m.tick(10_000).count, 1)
        _ = m.feed(clientFrame(.text, "busy"), now: 11_000)
        guard case .closeConnection(let code, _)? = m.tick(15_000).first else { return XCTFail("expected a timeout") }
        XCTAssertEqual(code, .abnormal)
    }

    func testZeroIntervalDisablesKeepalive() {
        var m = makeMachine(.server, SMConfig(pingIntervalNanos: 0, pongTimeoutNanos: 1, idleTimeoutNanos: 0))
        XCTAssertEqual(m.tick(UInt64(1) << 62), [])
        XCTAssertEqual(m.state, .open)
    }

    func testClientPingIsMasked() {
        var m = makeMachine(.client, config, now: 0)
        let actions = m.tick(10_000)
        guard case .write(let bytes)? = actions.first, let frame = parseWritten(bytes, by: .client) else {
            return XCTFail(describe(actions))
        }
        XCTAssertEqual(frame.header.opcode, .ping)
        XCTAssertNotNil(frame.header.maskKey)
        XCTAssertEqual(frame.payload, [])
    }

    func testPingsInitialNowIsHonoured() {
        var m = makeMachine(.server, config, now: 1_000_000)
        XCTAssertEqual(m.tick(1_009_999), [])
        XCTAssertEqual(m.tick(1_010_000), [.write(hex("89 00"))])
    }

    func testClientMaskKeysVary() {
        var m = makeMachine(.client)
        let keys = (0..<1000).map { _ in m.nextMaskKey() }
        XCTAssertGreaterThan(Set(keys).count, 990)
    }

    func testIdleTimeoutStartsTheCloseHandshake() {
        var m = makeMachine(.server, SMConfig(pingIntervalNanos: 0, closeTimeoutNanos: 1_000, idleTimeoutNanos: 10_000))
        XCTAssertEqual(m.feed(clientFrame(.text, "hi"), now: 5_000), [.deliver(.text("hi"))])
        XCTAssertEqual(m.tick(14_999), [])
        XCTAssertEqual(m.tick(15_000), [.write(serverFrame(.close, FrameEncoder.closePayload(code: .goingAway, reason: "idle timeout")))])
        XCTAssertEqual(m.state, .closeSent(deadline: 16_000))
        XCTAssertEqual(m.tick(15_500), [])
        guard case .closeConnection(let code, _)? = m.tick(16_000).first else { return XCTFail("expected the close timeout") }
        XCTAssertEqual(code, .abnormal)
    }
}
