import HubbubClient
import Realtime
import WebSocket

/// A client of Hubbub's JSON protocol over `/ws` for tests: requests get their replies by id;
/// pushes are collected in arrival order.
public final class ProtocolClient: @unchecked Sendable {
    public let ws: WebSocketClient
    private var nextID = 1
    /// Pushes received so far, oldest first (messages with a `room` field).
    public private(set) var pushes: [JSON] = []
    /// Replies that arrived while waiting for another one.
    private var replies: [Int: JSON] = [:]
    public private(set) var closed: (CloseCode, String)?

    /// Connects to `url` + `/ws`, from `sourceAddress` if given (127.0.0.2 also reaches loopback).
    public init(url: String, from sourceAddress: String? = nil) async throws {
        var options = WebSocketClient.Options()
        options.sourceAddress = sourceAddress
        ws = try await WebSocketClient.connect(to: url + "/ws", options: options)
    }

    /// Sends a request and waits for its reply (the whole reply object).
    public func call(_ op: String, _ args: JSON = [:]) async throws -> JSON {
        let id = nextID
        nextID += 1
        ws.send(text: JSON.object([("id", .int(id)), ("op", .string(op)), ("args", args)]).encoded)
        return try await reply(id)
    }

    /// Sends raw text (malformed requests).
    public func sendRaw(_ text: String) { ws.send(text: text) }

    /// Waits for the reply with `id` (nil id: the next reply with "id": null).
    public func reply(_ id: Int?) async throws -> JSON {
        if let id, let r = replies.removeValue(forKey: id) { return r }
        while true {
            let m = try await next()
            if m["room"] != nil { pushes.append(m); continue }
            if case .int(let got)? = m["id"] {
                if got == id { return m }
                replies[got] = m
            } else if id == nil {
                return m
            }
        }
    }

    /// Waits until `count` pushes have arrived in total; returns them all.
    /// The pushes so far once there are at least `count`, waiting at most `seconds` (30 unless
    /// told): a test fails rather than hangs.
    public func waitForPushes(_ count: Int, within seconds: Double = 30) async throws -> [JSON] {
        try await withThrowingTaskGroup(of: [JSON].self) { group in
            group.addTask { try await self.collectPushes(count) }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                throw TestError("\(count) pushes did not arrive within \(seconds) s; got \(self.pushes.map(\.encoded))")
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
    }

    private func collectPushes(_ count: Int) async throws -> [JSON] {
        while pushes.count < count {
            let m = try await next()
            if m["room"] != nil { pushes.append(m) } else if case .int(let id)? = m["id"] { replies[id] = m }
        }
        return pushes
    }

    public func clearPushes() { pushes = [] }

    /// The `n`th push (counting from 1), waiting at most `seconds`.
    public func push(_ n: Int, within seconds: Double = 10) async throws -> JSON {
        try await waitForPushes(n, within: seconds)[n - 1]
    }

    private func next() async throws -> JSON {
        do {
            let m = try await ws.receive()
            return try JSONParser.parse(m.data)
        } catch let ClientError.closed(code, reason) {
            closed = (code, reason)
            throw ClientError.closed(code, reason)
        }
    }

    /// `result` of a successful reply, or a failure naming the error code and message.
    public func ok(_ op: String, _ args: JSON = [:]) async throws -> JSON {
        let r = try await call(op, args)
        guard r["ok"] == .bool(true), let result = r["result"] else { throw TestError("\(op) failed: \(r.encoded)") }
        return result
    }

    /// The error code of a failed reply (nil if it succeeded).
    public func errorCode(_ op: String, _ args: JSON = [:]) async throws -> String? {
        let r = try await call(op, args)
        if case .string(let code)? = r["error"]?["code"] { return code }
        return nil
    }

    public func close() { ws.close() }

    /// Reads (dropping whatever else arrives) until the server closes the connection; returns its
    /// close code, or nil if it is still open after `seconds` (the connection is then closed).
    public func closeCode(within seconds: Double) async throws -> CloseCode? {
        if let closed { return closed.0 }
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let ws = self.ws
        return try await withThrowingTaskGroup(of: CloseCode?.self) { group in
            group.addTask { await ws.waitForClose().0 }
            group.addTask {
                try await Task.sleep(until: deadline)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            if first == nil { ws.close() } // a receive still waiting ends with the connection
            return first
        }
    }
}

extension JSON {
    /// The string value, if this is a string.
    public var string: String? { if case .string(let s) = self { return s } else { return nil } }
    public var int: Int? { if case .int(let i) = self { return i } else { return nil } }
    /// The number, if this is one (an integral double is encoded as an integer).
    public var double: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }
    /// The elements of an array (empty for anything else).
    public var items: [JSON] { if case .array(let a) = self { return a } else { return [] } }
}
