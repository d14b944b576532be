// libFuzzer target for the pure WebSocket codec (Sources/Protocol/WebSocket): .build-fuzz/fuzz-websocket.
// Built by scripts/fuzz.sh with `swiftc -sanitize=fuzzer,address` together with
// fuzz/Shared/FuzzInput.swift; not part of the SwiftPM package.
//
// The first input byte picks what is fuzzed (byte % 7):
//   0  state machine fed raw bytes (server role with permessage-deflate, or client role)
//   1  state machine fed a stream built from frame descriptors (masked, valid deflate bodies)
//   2  HTTP request head parser, then Handshake.accept on any head it returns
//   3  HTTP response head parser, then Handshake.checkResponse
//   4  Inflater (raw bytes with a limit) and Deflater → Inflater round trips
//   5  Sec-WebSocket-Extensions parsing and permessage-deflate negotiation
//   6  HTTP request bodies: Content-Length and chunked framing, whole and in pieces
//
// Every target checks invariants and traps (a crash libFuzzer reports) when one breaks; the
// state machine and HTTP targets also check that feeding the input in pieces gives exactly the
// results of feeding it whole.

import WebSocket

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var input = Input(bytes: bytes, position: 1)
    switch bytes[0] % 7 {
    case 0: fuzzMachineRaw(&input)
    case 1: fuzzMachineStructured(&input)
    case 2: fuzzHTTP(&input, kind: .request)
    case 3: fuzzHTTP(&input, kind: .response)
    case 4: fuzzInflater(&input)
    case 5: fuzzExtensions(&input)
    default: fuzzBody(&input)
    }
    return 0
}

// MARK: State machine

struct MachineSetup {
    var role: WebSocketStateMachine.Role
    var config: WebSocketStateMachine.Configuration
    var deflate: PerMessageDeflate.Parameters?
    var takeover: Bool

    func make() -> WebSocketStateMachine {
        WebSocketStateMachine(role: role, configuration: config, deflate: deflate,
                              inflater: deflate == nil ? nil : Inflater(noContextTakeover: !takeover))
    }
}

func readSetup(_ input: inout Input, forceServerDeflate: Bool) -> MachineSetup {
    let flags = input.byte()
    let role: WebSocketStateMachine.Role = forceServerDeflate || flags & 1 == 0 ? .server : .client
    let useDeflate = forceServerDeflate || flags & 2 == 0
    let takeover = flags & 4 != 0
    let maxFrame = 1 + Int(input.byte()) * 97       // up to ~24 KiB
    let maxMessage = 1 + Int(input.byte()) * 193    // up to ~48 KiB
    let config = WebSocketStateMachine.Configuration(maxFrameSize: maxFrame, maxMessageSize: maxMessage,
                                                     pingIntervalNanos: 1_000, pongTimeoutNanos: 500,
                                                     closeTimeoutNanos: 700, idleTimeoutNanos: 5_000)
    let params = useDeflate ? PerMessageDeflate.Parameters(serverNoContextTakeover: !takeover,
                                                           clientNoContextTakeover: !takeover) : nil
    return MachineSetup(role: role, config: config, deflate: params, takeover: takeover)
}

/// What one run did: the actions while open, our close() frame if we closed at `closeAt`, and the actions after it.
struct Run: Equatable {
    var actions: [WebSocketStateMachine.Action] = []
    var ourClose: [UInt8]?
    var afterClose: [WebSocketStateMachine.Action] = []
}

func feedAll(_ setup: MachineSetup, _ stream: [UInt8], cuts: [Int], closeAt: Int?) -> (Run, WebSocketStateMachine) {
    var m = setup.make()
    var run = Run()
    var start = 0
    var points = cuts
    if let c = closeAt { points = Array(Set(points + [c]).filter { $0 > 0 && $0 < stream.count }).sorted() }
    func closeIfDue(_ offset: Int) {
        if offset == closeAt && run.ourClose == nil && m.state == .open {
            run.ourClose = m.close(code: .goingAway, reason: "restart", now: 0)
            check(run.ourClose != nil, "close() while open gave no frame")
        }
    }
    closeIfDue(0)
    for end in points + [stream.count] {
        if run.ourClose == nil {
            stream[start..<end].withUnsafeBytes { m.receive($0, now: 0, into: &run.actions) }
        } else {
            stream[start..<end].withUnsafeBytes { m.receive($0, now: 0, into: &run.afterClose) }
        }
        start = end
        closeIfDue(end)
    }
    return (run, m)
}

/// Checks what one run of the machine did.
func checkActions(_ actions: [WebSocketStateMachine.Action], _ machine: WebSocketStateMachine, _ setup: MachineSetup) {
    var closeConnections = 0
    var closeFramesWritten = 0
    var writtenCloseCode: UInt16?? = nil
    for (index, action) in actions.enumerated() {
        check(closeConnections == 0, "an action after closeConnection")
        switch action {
        case .deliver(let message):
            check(message.data.count <= setup.config.maxMessageSize,
                  "delivered \(message.data.count) bytes, limit \(setup.config.maxMessageSize)")
            if message.kind == .text { check(isValidUTF8(message.data), "delivered invalid UTF-8 as text") }
        case .write(let bytes):
            // A control frame of ours: masked exactly when we are the client.
            let limits = FrameLimits(peer: setup.role == .server ? .server : .client, maxFramePayload: 125)
            let header: FrameHeader?
            do { header = try bytes.withUnsafeBytes { try FrameHeaderParser.parse($0, limits: limits) } } catch {
                fatalError("invariant broken: our frame does not parse: \(error)")
            }
            guard let header else { fatalError("invariant broken: our frame is incomplete") }
            check(header.headerLength + header.payloadLength == bytes.count, "frame length mismatch")
            check(header.opcode.isControl && header.fin && header.rsv == 0, "we wrote a non-control frame")
            let body = Array(bytes[header.headerLength...])
            let payload = header.maskKey.map { key in body.withUnsafeBytes { Masking.unmask(key: key, $0) } } ?? body
            if header.opcode == .close {
                closeFramesWritten += 1
                check(closeFramesWritten == 1, "two close frames")
                check(payload.count != 1, "1-byte close payload")
                if payload.count >= 2 {
                    let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
                    check(CloseCode(code).isValidOnWire, "we sent close code \(code)")
                    check(isValidUTF8(Array(payload[2...])), "close reason not UTF-8")
                    writtenCloseCode = .some(code)
                } else {
                    writtenCloseCode = .some(nil)
                }
                check(index + 2 == actions.count, "a close frame not followed by closeConnection only")
            } else {
                check(header.opcode == .pong, "unexpected \(header.opcode) written while receiving")
            }
        case .closeConnection(let code, _):
            closeConnections += 1
            if let written = writtenCloseCode {
                check(written.map { CloseCode($0) } ?? .noStatus == code, "closeConnection code differs from our close frame")
            }
        }
    }
    if closeConnections == 1 { check(closeFramesWritten == 1, "closed without a close frame while open") }
}

/// Checks a run as a whole, including what happened after our close().
func checkRun(_ run: Run, _ machine: WebSocketStateMachine, _ setup: MachineSetup) {
    checkActions(run.actions, machine, setup)
    let closedWhileOpen = run.actions.contains { if case .closeConnection = $0 { true } else { false } }
    if let frame = run.ourClose {
        check(!closedWhileOpen, "close() after closeConnection")
        check(frame.count >= 4 && frame[0] == 0x88, "our close frame")
        // After our close: nothing delivered, nothing written, at most one closeConnection, last.
        for (i, a) in run.afterClose.enumerated() {
            switch a {
            case .deliver: fatalError("invariant broken: delivered after our close")
            case .write: fatalError("invariant broken: wrote after our close")
            case .closeConnection: check(i == run.afterClose.count - 1, "actions after closeConnection")
            }
        }
        let closed = !run.afterClose.isEmpty
        if closed { check(machine.state == .closed, "closeConnection but not closed") } else {
            guard case .closeSent = machine.state else { fatalError("invariant broken: state \(machine.state) after close()") }
        }
    } else {
        check(run.afterClose.isEmpty, "actions after close without close")
        check((machine.state == .closed) == closedWhileOpen, "state \(machine.state) vs closeConnection \(closedWhileOpen)")
    }
}

/// Runs a stream whole and in pieces; both must give the same actions, each satisfying the invariants.
func runMachine(_ setup: MachineSetup, _ stream: [UInt8], cutSeed: UInt8, closeAt: Int?) {
    let (whole, wholeMachine) = feedAll(setup, stream, cuts: [], closeAt: closeAt)
    checkRun(whole, wholeMachine, setup)
    let (pieces, piecesMachine) = feedAll(setup, stream, cuts: cuts(count: stream.count, seed: cutSeed), closeAt: closeAt)
    check(whole == pieces, "split feed differs from whole feed")
    check(wholeMachine.state == piecesMachine.state, "split feed ends in another state")
    // After a closeConnection every further input is ignored.
    if wholeMachine.state == .closed {
        var m = wholeMachine
        var more: [WebSocketStateMachine.Action] = []
        stream.withUnsafeBytes { m.receive($0, now: 1, into: &more) }
        m.tick(now: 1 << 40, into: &more)
        check(more.isEmpty, "actions after closed")
    } else {
        // Timers: a ping or idle close, then at most one closeConnection.
        var m = wholeMachine
        var timed: [WebSocketStateMachine.Action] = []
        for now: UInt64 in [699, 700, 999, 1_000, 1_499, 1_500, 5_000, 5_700, 9_999] { m.tick(now: now, into: &timed) }
        check(timed.filter { if case .closeConnection = $0 { true } else { false } }.count <= 1, "two closeConnections from ticks")
        check(m.state == .closed, "timers never closed an idle connection")
    }
}

/// Where to call close() in the stream, if at all (a quarter of the runs).
func closePoint(_ byte: UInt8, count: Int) -> Int? {
    byte & 3 == 0 ? Int(byte >> 2) * (count + 1) / 64 : nil
}

func fuzzMachineRaw(_ input: inout Input) {
    let setup = readSetup(&input, forceServerDeflate: false)
    let cutSeed = input.byte()
    let closeByte = input.byte()
    let stream = input.rest
    runMachine(setup, stream, cutSeed: cutSeed, closeAt: closePoint(closeByte, count: stream.count))
}

/// Builds frames from descriptors, so the fuzzer explores semantics rather than masking bits:
/// each descriptor is [flags][length][payload...].
func fuzzMachineStructured(_ input: inout Input) {
    let setup = readSetup(&input, forceServerDeflate: true)
    let cutSeed = input.byte()
    let closeByte = input.byte()
    let deflater = Deflater(windowBits: 9 + Int(input.byte() % 7), noContextTakeover: !setup.takeover)
    var stream: [UInt8] = []
    var key: UInt32 = 0x1234_5678
    while input.position < input.bytes.count && stream.count < 1 << 20 {
        let flags = input.byte()
        var length = Int(input.byte())
        if flags & 0x80 != 0 { length = length * 64 } // occasionally larger payloads
        var payload = input.take(length)
        if flags & 0x80 != 0 {
            // Stretch with a repeating pattern so large, compressible messages occur.
            var stretched: [UInt8] = []
            while stretched.count < length { stretched += payload.isEmpty ? [0] : payload }
            payload = Array(stretched.prefix(length))
        }
        let opcodes: [UInt8] = [0x0, 0x1, 0x2, 0x8, 0x9, 0xA, 0x1, 0x0]
        var opcode = opcodes[Int(flags & 7)]
        if flags & 0x38 == 0x38 { opcode = 3 + (flags >> 6) } // reserved opcodes, rarely
        let fin = flags & 0x08 == 0
        let compress = flags & 0x10 != 0 && (opcode == 1 || opcode == 2)
        if opcode == 0x8 && flags & 0x20 != 0 {
            // A well-formed close payload with some code.
            payload = FrameEncoder.closePayload(code: CloseCode(UInt16(payload.first ?? 0) << 8 | UInt16(payload.dropFirst().first ?? 0)),
                                                reason: String(decoding: payload.dropFirst(2), as: UTF8.self))
        }
        let body = compress ? deflater.compress(payload) : payload
        key = key &* 1_103_515_245 &+ 12345
        if let op = Opcode(rawValue: opcode) {
            stream += FrameEncoder.frame(opcode: op, payload: body, fin: fin, rsv1: compress, maskKey: setup.role == .server ? key : nil)
        } else {
            stream += [(fin ? 0x80 : 0) | opcode, 0x80 | UInt8(min(body.count, 125))] + [1, 2, 3, 4] + body.prefix(125)
        }
    }
    runMachine(setup, stream, cutSeed: cutSeed, closeAt: closePoint(closeByte, count: stream.count))
}

// MARK: HTTP

func fuzzHTTP(_ input: inout Input, kind: HTTPHeadParser.Kind) {
    let bytesByte = input.byte(), headersByte = input.byte()
    let cutSeed = input.byte()
    let policyFlags = input.byte()
    let stream = input.rest
    // Half the time the limits sit right at the input's own size, so off-by-one errors show up.
    let maxBytes = bytesByte & 0x80 != 0 ? max(0, stream.count - Int(bytesByte & 7)) : 16 + Int(bytesByte) * 8
    let lines = stream.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
    let maxHeaders = headersByte & 0x80 != 0 ? max(0, lines - 2 - Int(headersByte & 3)) : Int(headersByte % 20)
    let limits = HTTPHeadParser.Limits(maxBytes: maxBytes, maxHeaders: maxHeaders)

    func run(_ cutPoints: [Int]) -> (HTTPHeadParser.Result, consumed: Int) {
        var p = HTTPHeadParser(kind: kind, limits: limits)
        var start = 0
        var fed = 0
        var last = HTTPHeadParser.Result.needMore
        for end in cutPoints + [stream.count] {
            last = stream[start..<end].withUnsafeBytes { p.feed($0) }
            fed = end
            start = end
            switch last {
            case .needMore:
                check(p.state == .reading, "needMore while not reading")
                check(fed <= limits.maxBytes, "still reading after \(fed) bytes, limit \(limits.maxBytes)")
            case .head(let head, let remainder):
                check(p.state == .done, "head but not done")
                let headBytes = fed - remainder.count
                check(headBytes >= 0 && headBytes <= limits.maxBytes, "head of \(headBytes) bytes, limit \(limits.maxBytes)")
                check(head.headers.count <= limits.maxHeaders, "\(head.headers.count) headers, limit \(limits.maxHeaders)")
                check(Array(stream[headBytes..<fed]) == remainder, "remainder is not the rest of the input")
                let terminator = stream[..<headBytes].suffix(2)
                check(terminator.last == 10, "head does not end with LF")
                return (last, fed)
            case .error(let e):
                check(p.state == .failed, "error but not failed")
                check(e.status == 400 || e.status == 431, "status \(e.status)")
                return (last, fed)
            }
        }
        return (last, fed)
    }

    let (whole, _) = run([])
    let (split, _) = run(cuts(count: stream.count, seed: cutSeed))
    // Split feeds may stop earlier (at the first piece that completes or fails) but must agree on the outcome.
    switch (whole, split) {
    case (.needMore, .needMore): break
    case (.head(let a, let ra), .head(let b, let rb)):
        check(a == b, "split parse gives another head")
        check(ra.count >= 0 && rb.count >= 0, "")
    case (.error(let a), .error(let b)):
        check(a.status == b.status, "split parse gives status \(b.status), whole \(a.status)")
    default:
        // A head over maxBytes: whole sees the blank line past the limit (431); pieces may see the
        // limit first (431) - both must be errors with the same status, so anything else is a bug.
        fatalError("invariant broken: whole \(whole) vs split \(split)")
    }

    guard case .head(let head, _) = whole else { return }
    _ = head.path
    _ = head.value("Connection")
    switch kind {
    case .request:
        let policy = Handshake.ServerPolicy(subprotocols: policyFlags & 1 != 0 ? ["hubbub.v1", "chat"] : [],
                                            allowedOrigins: policyFlags & 2 != 0 ? ["https://a.example"] : [],
                                            deflate: PerMessageDeflate.Configuration(enabled: policyFlags & 4 == 0))
        switch Handshake.accept(head, policy: policy) {
        case .success(let accepted):
            // Our 101 must parse as a response and satisfy a client holding the same key.
            var rp = HTTPHeadParser(kind: .response, limits: .init(maxBytes: 1 << 16, maxHeaders: 64))
            guard case .head(let response, let rest) = accepted.response.withUnsafeBytes({ rp.feed($0) }), rest.isEmpty else {
                fatalError("invariant broken: our 101 does not parse")
            }
            check(response.startLine.1 == "101", "not 101")
            let key = head.value("Sec-WebSocket-Key") ?? ""
            // The client offered what the request lists (the check refuses a subprotocol it did not offer).
            let offered = (head.value("Sec-WebSocket-Protocol") ?? "").split(separator: ",")
                .map { String($0.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()) }
            let checked = Handshake.checkResponse(response, key: key, offeredDeflate: true, offeredSubprotocols: offered)
            guard case .success(let c) = checked else {
                fatalError("invariant broken: a client refuses our 101: \(checked)\n\(String(decoding: accepted.response, as: UTF8.self))")
            }
            check(c.deflate == accepted.deflate, "client reads other deflate parameters: \(String(describing: c.deflate)) vs \(String(describing: accepted.deflate))")
            check(c.subprotocol == accepted.subprotocol, "client reads another subprotocol")
            if let p = accepted.deflate { check((9...15).contains(p.serverMaxWindowBits), "server window \(p.serverMaxWindowBits)") }
            if let s = accepted.subprotocol { check(policy.subprotocols.contains(s), "subprotocol we do not speak") }
        case .failure(let e):
            check([400, 403, 405, 426, 505].contains(e.status), "refused with \(e.status)")
            _ = HTTPResponse.error(e)
        }
    case .response:
        _ = Handshake.checkResponse(head, key: "dGhlIHNhbXBsZSBub25jZQ==", offeredDeflate: policyFlags & 1 != 0)
    }
}

// MARK: Inflater / Deflater

func fuzzInflater(_ input: inout Input) {
    let mode = input.byte()
    let limit = 1 + Int(input.byte()) * 257
    if mode & 1 == 0 {
        // Arbitrary bytes: either a result within the limit or a 1007/1009 error.
        let inflater = Inflater(noContextTakeover: mode & 2 == 0)
        let chunks = input.rest.split(separator: 0xFE, maxSplits: 4, omittingEmptySubsequences: false)
        for chunk in chunks {
            do {
                let out = try inflater.decompress(Array(chunk), limit: limit)
                check(out.count <= limit, "inflated \(out.count) bytes over the limit \(limit)")
            } catch {
                check(error.code == .messageTooBig || error.code == .invalidPayload, "inflate error \(error.code)")
                if inflater.noContextTakeover == false { break }
            }
        }
    } else {
        // Round trips: messages compressed with (or without) context takeover inflate back exactly.
        let takeover = mode & 2 != 0
        let deflater = Deflater(level: 1 + Int(mode >> 4) % 9, windowBits: 9 + Int(mode >> 2) % 7,
                                memoryLevel: 1 + Int(input.byte()) % 9, noContextTakeover: !takeover)
        let inflater = Inflater(noContextTakeover: !takeover)
        for message in input.rest.split(separator: 0xFE, maxSplits: 8, omittingEmptySubsequences: false) {
            var m = Array(message)
            if m.first == 0xFD { m = [UInt8](repeating: m.last ?? 0, count: min(m.count, 64) * 997) } // long runs
            let c = deflater.compress(m)
            do {
                let back = try inflater.decompress(c, limit: max(m.count, 1))
                check(back == m, "round trip changed \(m.count) bytes")
            } catch {
                fatalError("invariant broken: our own deflate output fails to inflate: \(error)")
            }
            if m.count > 0 {
                do {
                    _ = try Inflater(noContextTakeover: true).decompress(c, limit: m.count - 1)
                    fatalError("invariant broken: inflating \(m.count) bytes with limit \(m.count - 1) succeeded")
                } catch {
                    check(error.code == .messageTooBig || (takeover && error.code == .invalidPayload), "limit error \(error.code)")
                }
            }
        }
    }
}

// MARK: Extensions

func fuzzExtensions(_ input: inout Input) {
    let flags = input.byte()
    let header = String(decoding: input.rest, as: UTF8.self)
    let config = PerMessageDeflate.Configuration(serverNoContextTakeover: flags & 1 != 0, clientNoContextTakeover: flags & 2 != 0,
                                                 serverMaxWindowBits: 8 + Int(flags >> 2) % 9)
    if let exts = PerMessageDeflate.parseExtensions(header) {
        for e in exts { check(!e.name.isEmpty, "empty extension name") }
    }
    if let p = PerMessageDeflate.negotiate(offers: header, configuration: config) {
        check((9...15).contains(p.serverMaxWindowBits), "server window \(p.serverMaxWindowBits)")
        check(p.serverMaxWindowBits <= max(9, config.serverMaxWindowBits), "window above our configuration")
        // What we answer must be readable by a client.
        guard let back = PerMessageDeflate.parseResponse(p.responseHeader) else {
            fatalError("invariant broken: a client cannot parse our answer \(p.responseHeader)")
        }
        check(back == p, "answer reads back as \(back), negotiated \(p)")
    }
    _ = PerMessageDeflate.parseResponse(header)
}

// MARK: HTTP bodies

/// What feeding a body gave: its data, how it ended, and where in the whole input it ended.
struct BodyRun: Equatable {
    var data: [UInt8] = []
    var progress = HTTPBodyParser.Progress.needMore
    var end: Int?
}

func fuzzBody(_ input: inout Input) {
    let framingByte = input.byte(), limitByte = input.byte(), cutSeed = input.byte()
    let stream = input.rest
    let framing: HTTPBodyFraming = framingByte & 1 == 0 ? .chunked : .length(Int(framingByte >> 1) * 37 + 1)
    let limits = HTTPBodyParser.Limits(maxBytes: Int(limitByte) * 61, maxLineBytes: 1 + Int(limitByte % 64),
                                       maxTrailerBytes: 1 + Int(limitByte) * 3)

    func run(_ cutPoints: [Int]) -> BodyRun {
        var parser = HTTPBodyParser(framing: framing, limits: limits)
        var out = BodyRun()
        var start = 0
        for end in cutPoints + [stream.count] {
            let piece = Array(stream[start..<end])
            var ranges: [Range<Int>] = []
            out.progress = piece.withUnsafeBytes { parser.feed($0, data: &ranges) }
            var previousEnd = 0
            for r in ranges {
                check(r.lowerBound >= previousEnd && r.upperBound <= piece.count, "data range \(r) outside the piece or out of order")
                previousEnd = r.upperBound
                out.data += piece[r]
            }
            check(out.data.count <= limits.maxBytes, "\(out.data.count) body bytes passed the limit \(limits.maxBytes)")
            switch out.progress {
            case .needMore:
                check(parser.state != .done && parser.state != .failed, "needMore in state \(parser.state)")
                start = end
            case .complete(let consumed, let trailers):
                check(parser.state == .done, "complete but not done")
                check(consumed <= piece.count, "consumed past the piece")
                out.end = start + consumed
                out.progress = .complete(consumed: 0, trailers: trailers) // where it ended is `end`
                return out
            case .error(let e):
                check(parser.state == .failed, "error but not failed")
                check([400, 413, 431].contains(e.status), "body refused with \(e.status)")
                return out
            }
        }
        return out
    }

    let whole = run([])
    let split = run(cuts(count: stream.count, seed: cutSeed))
    // The same bytes give the same body, the same end and the same verdict however they arrive
    // (an error may be found on less data when the pieces stop at it).
    switch (whole.progress, split.progress) {
    case (.error(let a), .error(let b)):
        check(a == b, "split error \(b) vs whole \(a)")
    default:
        check(whole == split, "split feed differs from whole feed: \(split.progress) vs \(whole.progress)")
    }
    if case .length(let n) = framing, case .complete = whole.progress {
        check(whole.data.count == n && whole.end == n, "a Content-Length body of \(n) gave \(whole.data.count) bytes")
    }
}
