import Synchronization

/// Error codes of protocol.md; each failed request gets exactly one of them.
public enum ErrorCode: String, Sendable {
    case badRequest = "bad_request"
    case unauthorized
    case forbidden
    case notFound = "not_found"
    case conflict
    case rateLimited = "rate_limited"
    case tooLarge = "too_large"
    case unavailable
    case `internal`
}

/// A request that failed: code, a message naming the field or rule, and `retryAfterMs` for rate limits.
public struct ProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var retryAfterMs: Int?

    public init(_ code: ErrorCode, _ message: String, retryAfterMs: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfterMs = retryAfterMs
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public static func badRequest(_ m: String) -> ProtocolError { ProtocolError(.badRequest, m) }
    public static func forbidden(_ m: String) -> ProtocolError { ProtocolError(.forbidden, m) }
    public static func notFound(_ m: String) -> ProtocolError { ProtocolError(.notFound, m) }
    public static func conflict(_ m: String) -> ProtocolError { ProtocolError(.conflict, m) }
    public static func unauthorized(_ m: String) -> ProtocolError { ProtocolError(.unauthorized, m) }
}

/// A parsed request: `{"id": 7, "op": "venue.vote", "args": {...}}`.
public struct Request: Sendable {
    public var id: Int
    public var op: String
    public var args: Args

    /// Parses a text message. A message that is not even an object with an integer `id` gets
    /// a reply with `id` null (protocol.md: one reply per request, always).
    /// A message that could not be taken as a request, with the id to answer to (if one was found).
    public struct Rejection: Error, Sendable {
        public var id: Int?
        public var error: ProtocolError
    }

    public static func parse(_ text: [UInt8], limits: JSONParser.Limits = JSONParser.Limits()) -> Result<Request, Rejection> {
        let json: JSON
        do {
            json = try JSONParser.parse(text, limits: limits)
        } catch where error.isLimit {
            return .failure(Rejection(id: nil, error: ProtocolError(.tooLarge, "message has \(error.reason) (at byte \(error.offset))")))
        } catch {
            return .failure(Rejection(id: nil, error: .badRequest("message is not valid JSON: \(error.reason) at byte \(error.offset)")))
        }
        guard case .object = json else { return .failure(Rejection(id: nil, error: .badRequest("message must be a JSON object"))) }
        guard case .int(let id)? = json["id"] else {
            return .failure(Rejection(id: nil, error: .badRequest(json["id"] == nil ? "missing field id" : "field id must be an integer")))
        }
        guard let opValue = json["op"] else { return .failure(Rejection(id: id, error: .badRequest("missing field op"))) }
        guard case .string(let op) = opValue else { return .failure(Rejection(id: id, error: .badRequest("field op must be a string"))) }
        let args = json["args"] ?? .object([])
        guard case .object = args else { return .failure(Rejection(id: id, error: .badRequest("field args must be an object"))) }
        return .success(Request(id: id, op: op, args: Args(args)))
    }
}

/// Typed access to a request's arguments; every failure names the field.
///
/// It notes the fields it is asked for, so that once an op's arguments are parsed the fields it
/// never asked for can be refused (`unknownField`): a misspelt optional field would otherwise be
/// ignored, and the caller believe it set.
public struct Args: Sendable {
    public let value: JSON
    private let asked = AskedFields()

    public init(_ value: JSON) { self.value = value }

    public func has(_ key: String) -> Bool { if let v = field(key), v != .null { return true } else { return false } }

    /// Fields an op takes though it reads them later (or only some of them, depending on others).
    public func declare(_ keys: String...) { asked.note(keys) }

    /// The value of `key`, noted as asked for.
    private func field(_ key: String) -> JSON? {
        asked.note(key)
        return value[key]
    }

    /// `bad_request` naming the first field of these arguments (or of an object among them that
    /// was read as arguments too) that nothing asked for, with the asked field nearest in spelling.
    public func unknownField() -> ProtocolError? { asked.unknown(in: value, path: "") }

    public func string(_ key: String, maxLength: Int = 1000) throws(ProtocolError) -> String {
        guard let v = field(key) else { throw .badRequest("missing field \(key)") }
        return try Args.string(v, key, maxLength: maxLength)
    }

    public func optionalString(_ key: String, maxLength: Int = 1000) throws(ProtocolError) -> String? {
        guard let v = field(key), v != .null else { return nil }
        return try Args.string(v, key, maxLength: maxLength)
    }

    static func string(_ v: JSON, _ key: String, maxLength: Int) throws(ProtocolError) -> String {
        guard case .string(let s) = v else { throw .badRequest("field \(key) must be a string") }
        guard s.count <= maxLength else { throw ProtocolError(.tooLarge, "field \(key) is longer than \(maxLength) characters") }
        return s
    }

    public func int(_ key: String) throws(ProtocolError) -> Int {
        guard let v = field(key) else { throw .badRequest("missing field \(key)") }
        guard case .int(let i) = v else { throw .badRequest("field \(key) must be an integer") }
        return i
    }

    public func optionalInt(_ key: String) throws(ProtocolError) -> Int? {
        guard let v = field(key), v != .null else { return nil }
        guard case .int(let i) = v else { throw .badRequest("field \(key) must be an integer") }
        return i
    }

    public func double(_ key: String) throws(ProtocolError) -> Double {
        guard let v = field(key) else { throw .badRequest("missing field \(key)") }
        return try Args.number(v, key)
    }

    public func optionalDouble(_ key: String) throws(ProtocolError) -> Double? {
        guard let v = field(key), v != .null else { return nil }
        return try Args.number(v, key)
    }

    static func number(_ v: JSON, _ key: String) throws(ProtocolError) -> Double {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: throw .badRequest("field \(key) must be a number")
        }
    }

    public func bool(_ key: String) throws(ProtocolError) -> Bool {
        guard let v = field(key) else { throw .badRequest("missing field \(key)") }
        guard case .bool(let b) = v else { throw .badRequest("field \(key) must be true or false") }
        return b
    }

    public func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        guard let v = field(key), v != .null else { return nil }
        guard case .bool(let b) = v else { throw .badRequest("field \(key) must be true or false") }
        return b
    }

    public func object(_ key: String) throws(ProtocolError) -> Args {
        guard let v = field(key) else { throw .badRequest("missing field \(key)") }
        guard case .object = v else { throw .badRequest("field \(key) must be an object") }
        return asked.child(key, Args(v))
    }

    public func optionalObject(_ key: String) throws(ProtocolError) -> Args? {
        guard let v = field(key), v != .null else { return nil }
        guard case .object = v else { throw .badRequest("field \(key) must be an object") }
        return asked.child(key, Args(v))
    }

    public func array(_ key: String, maxCount: Int = 10_000) throws(ProtocolError) -> [JSON] {
        guard let v = field(key) else { throw .badRequest("missing field \(key)") }
        guard case .array(let items) = v else { throw .badRequest("field \(key) must be an array") }
        guard items.count <= maxCount else { throw ProtocolError(.tooLarge, "field \(key) has more than \(maxCount) items") }
        return items
    }

    public func optionalStringArray(_ key: String, maxCount: Int = 100, maxLength: Int = 200) throws(ProtocolError) -> [String]? {
        guard let v = field(key), v != .null else { return nil }
        guard case .array(let items) = v else { throw .badRequest("field \(key) must be an array of strings") }
        guard items.count <= maxCount else { throw ProtocolError(.tooLarge, "field \(key) has more than \(maxCount) items") }
        var out: [String] = []
        for (n, item) in items.enumerated() { out.append(try Args.string(item, "\(key)[\(n)]", maxLength: maxLength)) }
        return out
    }
}

/// The fields an `Args` was asked for, and the objects among them read as `Args` of their own.
/// Shared by the copies of one `Args` (an op's `home` reads the same arguments as its parser);
/// used by one request at a time, behind a lock all the same since `Args` is `Sendable`.
private final class AskedFields: Sendable {
    private struct State {
        var keys: Set<String> = []
        var children: [(String, Args)] = []
    }
    private let state = Mutex(State())

    func note(_ key: String) { state.withLock { _ = $0.keys.insert(key) } }
    func note(_ keys: [String]) { state.withLock { $0.keys.formUnion(keys) } }

    func child(_ key: String, _ args: Args) -> Args {
        state.withLock { $0.children.append((key, args)) }
        return args
    }

    func unknown(in value: JSON, path: String) -> ProtocolError? {
        guard case .object(let pairs) = value else { return nil }
        let (keys, children) = state.withLock { ($0.keys, $0.children) }
        for (key, _) in pairs where !keys.contains(key) {
            let known = keys.sorted().map { path + $0 }
            return .badRequest("unknown field \(path + key)\(Spelling.suggestion(for: path + key, among: known))")
        }
        for (key, args) in children {
            if let error = args.unknownField(at: path + key + ".") { return error }
        }
        return nil
    }
}

extension Args {
    fileprivate func unknownField(at path: String) -> ProtocolError? { asked.unknown(in: value, path: path) }
}

/// Builds the server's messages.
public enum Envelope {
    /// `{"id":7,"ok":true,"result":{...}}`
    public static func success(id: Int, result: JSON) -> String {
        var out = "{\"id\":\(id),\"ok\":true,\"result\":"
        result.encode(into: &out)
        out += "}"
        return out
    }

    /// `{"id":7,"ok":false,"error":{"code":"forbidden","message":"..."}}` (id null when unknown).
    public static func failure(id: Int?, error: ProtocolError) -> String {
        var e: [(String, JSON)] = [("code", .string(error.code.rawValue)), ("message", .string(error.message))]
        if let r = error.retryAfterMs { e.append(("retryAfterMs", .int(r))) }
        var out = "{\"id\":" + (id.map(String.init) ?? "null") + ",\"ok\":false,\"error\":"
        JSON.object(e).encode(into: &out)
        out += "}"
        return out
    }

    /// `{"room":"venue:v12","seq":1043,"epoch":"k3j9","event":"playlist.reordered","data":{...}}`
    public static func push(room: String, seq: UInt64, epoch: String, event: String, data: JSON) -> String {
        var out = "{\"room\":"
        JSON.encodeString(room, into: &out)
        out += ",\"seq\":\(seq),\"epoch\":"
        JSON.encodeString(epoch, into: &out)
        out += ",\"event\":"
        JSON.encodeString(event, into: &out)
        out += ",\"data\":"
        data.encode(into: &out)
        out += "}"
        return out
    }
}
