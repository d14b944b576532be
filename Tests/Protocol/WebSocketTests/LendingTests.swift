import XCTest
import WebSocket

/// The transport reads with `next`: a single-frame message is unmasked in place and lent from the
/// bytes read (no copy between the socket and the handler); a reassembled one is owned.
final class LendingTests: XCTestCase {
    private func server() -> WebSocketStateMachine { WebSocketStateMachine(role: .server, configuration: SMConfig()) }

    func testASingleFrameMessageIsLentFromTheReadBytesUnmasked() {
        var machine = server()
        var input = clientFrame(.text, "hello") + clientFrame(.binary, [1, 2, 3])
        input.withUnsafeMutableBytes { buffer in
            var reader = machine.startReading(buffer, now: 0)
            var actions: [Action] = []
            for (kind, expected) in [(MessageKind.text, Array("hello".utf8)), (.binary, [1, 2, 3])] {
                guard case .message(let got, .lent(let bytes)) = machine.next(&reader, into: &actions) else {
                    return XCTFail("expected a lent \(kind) message")
                }
                XCTAssertEqual(got, kind)
                XCTAssertEqual(Array(bytes), expected)
                let start = UnsafeRawPointer(buffer.baseAddress!), end = start + buffer.count
                XCTAssertTrue(bytes.baseAddress! >= start && bytes.baseAddress! + bytes.count <= end,
                              "the payload is not inside the bytes read: it was copied")
            }
            guard case .end = machine.next(&reader, into: &actions) else { return XCTFail("expected the end of the read") }
            machine.finishReading(reader)
            XCTAssertEqual(actions, [])
        }
    }

    func testAFrameSplitOverTwoReadsIsJoinedAndAFragmentedMessageIsOwned() {
        var machine = server()
        let whole = clientFrame(.text, "split here") + clientFrame(.text, "fra", fin: false) + clientFrame(.continuation, "gments")
        var delivered: [(String, Bool)] = []
        for part in [Array(whole[..<5]), Array(whole[5...])] {
            var bytes = part
            bytes.withUnsafeMutableBytes { buffer in
                var reader = machine.startReading(buffer, now: 0)
                var actions: [Action] = []
                reading: while true {
                    switch machine.next(&reader, into: &actions) {
                    case .message(_, let payload):
                        let owned: Bool
                        if case .owned = payload { owned = true } else { owned = false }
                        delivered.append((String(decoding: payload.array, as: UTF8.self), owned))
                    case .frame: continue
                    case .end: break reading
                    }
                }
                machine.finishReading(reader)
            }
        }
        XCTAssertEqual(delivered.map(\.0), ["split here", "fragments"])
        XCTAssertEqual(delivered.map(\.1), [false, true], "a joined frame is lent from the joined bytes; a reassembled message is owned")
    }

    func testAPingBeforeAMessageInOneReadIsAnsweredFirst() {
        var machine = server()
        var input = clientFrame(.ping, "p") + clientFrame(.text, "after")
        input.withUnsafeMutableBytes { buffer in
            var reader = machine.startReading(buffer, now: 0)
            var actions: [Action] = []
            guard case .frame = machine.next(&reader, into: &actions) else { return XCTFail("the ping is a frame") }
            XCTAssertEqual(actions, [.write(serverFrame(.pong, Array("p".utf8)))], "the pong is due before the message is handed over")
            actions.removeAll()
            guard case .message(.text, let payload) = machine.next(&reader, into: &actions) else { return XCTFail("expected the message") }
            XCTAssertEqual(payload.array, Array("after".utf8))
            machine.finishReading(reader)
        }
    }
}
