import XCTest
import WebSocket

// Shared helpers for the WebSocket codec tests.

typealias Action = WebSocketStateMachine.Action
typealias Role = WebSocketStateMachine.Role
typealias SMConfig = WebSocketStateMachine.Configuration

/// Bytes from a hex string such as "81 05 48 65" (spaces and "0x" prefixes ignored).
func hex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    for token in text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "\n" }) {
        var t = Substring(token)
        if t.hasPrefix("0x") { t = t.dropFirst(2) }
        precondition(t.count % 2 == 0, "odd hex token \(token)")
        var i = t.startIndex
        while i < t.endIndex {
            let j = t.index(i, offsetBy: 2)
            out.append(UInt8(t[i..<j], radix: 16)!)
            i = j
        }
    }
    return out
}

func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}

/// A masking key given as its four wire bytes.
func maskKey(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) -> UInt32 {
    [b0, b1, b2, b3].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
}

let testKey = maskKey(0x37, 0xfa, 0x21, 0x3d)

/// A frame as a client sends it (masked).
func clientFrame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false,
                 key: UInt32 = testKey) -> [UInt8] {
    FrameEncoder.frame(opcode: opcode, payload: payload, fin: fin, rsv1: rsv1, maskKey: key)
}

func clientFrame(_ opcode: Opcode, _ text: String, fin: Bool = true) -> [UInt8] {
    clientFrame(opcode, Array(text.utf8), fin: fin)
}

/// A frame as a server sends it (unmasked).
func serverFrame(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false) -> [UInt8] {
    FrameEncoder.frame(opcode: opcode, payload: payload, fin: fin, rsv1: rsv1)
}

/// A frame as `role`'s peer sends it (masked when the peer is a client).
func peerFrame(to role: Role, _ opcode: Opcode, _ payload: [UInt8], fin: Bool = true, rsv1: Bool = false) -> [UInt8] {
    role == .server ? clientFrame(opcode, payload, fin: fin, rsv1: rsv1) : serverFrame(opcode, payload, fin: fin, rsv1: rsv1)
}

func makeMachine(_ role: Role = .server, _ config: SMConfig = SMConfig(), deflate: PerMessageDeflate.Parameters? = nil,
                 inflater: Inflater? = nil, now: UInt64 = 0) -> WebSocketStateMachine {
    WebSocketStateMachine(role: role, configuration: config, deflate: deflate,
                          inflater: inflater ?? (deflate == nil ? nil : Inflater(noContextTakeover: deflate!.clientNoContextTakeover)),
                          now: now)
}

/// A machine with permessage-deflate negotiated; `contextTakeover` keeps the peer's window across messages.
func deflateMachine(_ role: Role = .server, _ config: SMConfig = SMConfig(), contextTakeover: Bool = false) -> WebSocketStateMachine {
    let params = PerMessageDeflate.Parameters(serverNoContextTakeover: !contextTakeover, clientNoContextTakeover: !contextTakeover)
    return WebSocketStateMachine(role: role, configuration: config, deflate: params,
                                 inflater: Inflater(noContextTakeover: !contextTakeover))
}

extension WebSocketStateMachine {
    /// Feeds bytes and returns the actions they caused.
    mutating func feed(_ bytes: [UInt8], now: UInt64 = 0) -> [Action] {
        var actions: [Action] = []
        bytes.withUnsafeBytes { receive($0, now: now, into: &actions) }
        return actions
    }

    mutating func tick(_ now: UInt64) -> [Action] {
        var actions: [Action] = []
        tick(now: now, into: &actions)
        return actions
    }
}

/// Parses one complete frame written by a machine of `role` (a client's frames are masked).
func parseWritten(_ bytes: [UInt8], by role: Role, file: StaticString = #filePath, line: UInt = #line) -> Frame? {
    let limits = FrameLimits(peer: role == .client ? .client : .server, maxFramePayload: 1 << 30, allowedRSV: 0x40)
    do {
        let header = try bytes.withUnsafeBytes { try FrameHeaderParser.parse($0, limits: limits) }
        guard let header else { XCTFail("incomplete frame \(hexString(bytes))", file: file, line: line); return nil }
        guard bytes.count == header.headerLength + header.payloadLength else {
            XCTFail("written frame has \(bytes.count) bytes, header says \(header.headerLength + header.payloadLength)",
                    file: file, line: line)
            return nil
        }
        let body = Array(bytes[header.headerLength...])
        let payload = header.maskKey.map { key in body.withUnsafeBytes { Masking.unmask(key: key, $0) } } ?? body
        return Frame(header: header, payload: payload)
    } catch {
        XCTFail("written frame does not parse: \(error)", file: file, line: line)
        return nil
    }
}

/// The close code in a close frame's payload, nil for an empty payload.
func closeCode(of payload: [UInt8]) -> UInt16? {
    payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
}

/// Asserts the actions are exactly: write a close frame with `code`, then closeConnection(`code`).
func assertFails(_ actions: [Action], with code: CloseCode, role: Role = .server,
                 file: StaticString = #filePath, line: UInt = #line) {
    guard actions.count == 2 else {
        XCTFail("expected [write(close \(code)), closeConnection(\(code))], got \(describe(actions))", file: file, line: line)
        return
    }
    guard case .write(let bytes) = actions[0], let frame = parseWritten(bytes, by: role, file: file, line: line) else {
        XCTFail("first action is not a written frame: \(describe(actions))", file: file, line: line)
        return
    }
    XCTAssertEqual(frame.header.opcode, .close, file: file, line: line)
    XCTAssertTrue(frame.header.fin, file: file, line: line)
    XCTAssertEqual(closeCode(of: frame.payload), code.rawValue, "close frame code", file: file, line: line)
    XCTAssertLessThanOrEqual(frame.payload.count, 125, file: file, line: line)
    XCTAssertTrue(UTF8Validator.isValid(Array(frame.payload.dropFirst(2))), "close reason is UTF-8", file: file, line: line)
    guard case .closeConnection(let c, _) = actions[1] else {
        XCTFail("second action is not closeConnection: \(describe(actions))", file: file, line: line)
        return
    }
    XCTAssertEqual(c, code, file: file, line: line)
}

/// Feeds a machine `bytes` and asserts it fails the connection with `code` and then ignores input.
func assertStreamFails(_ bytes: [UInt8], with code: CloseCode, machine: WebSocketStateMachine = makeMachine(),
                       file: StaticString = #filePath, line: UInt = #line) {
    var m = machine
    let actions = m.feed(bytes)
    assertFails(actions.filter { if case .deliver = $0 { return false } else { return true } }, with: code, role: m.role,
                file: file, line: line)
    XCTAssertEqual(m.state, .closed, file: file, line: line)
    XCTAssertEqual(m.feed(clientFrame(.text, "after")), [], "input after failure is ignored", file: file, line: line)
}

func describe(_ actions: [Action]) -> String {
    "[" + actions.map { a -> String in
        switch a {
        case .deliver(let m): return "deliver(\(m.kind), \(m.data.count) bytes)"
        case .write(let b): return "write(\(hexString(Array(b.prefix(16))))\(b.count > 16 ? "…" : ""))"
        case .closeConnection(let c, let r): return "closeConnection(\(c), \"\(r)\")"
        }
    }.joined(separator: ", ") + "]"
}

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
func pseudoRandomBytes(_ count: Int, seed: UInt64 = 0x2545_F491_4F6C_DD1D) -> [UInt8] {
    var s = seed | 1
    var out = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17
        out[i] = UInt8(truncatingIfNeeded: s >> 24)
    }
    return out
}

struct SeededRNG: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed | 1 }
    mutating func next() -> UInt64 {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return state
    }
}
