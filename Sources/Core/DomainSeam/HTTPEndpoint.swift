import Foundation
import Realtime

/// An operator endpoint a domain serves over HTTP, under `/api/` (feeds, provider intel): the
/// core checks the operator key (`api.key`: 401 without it, 404 for everything when none is
/// configured), matches method and path, streams the body to `handle` and sends what it returns.
/// A domain never sees the transport: only the request's head, its body as an async sequence, and
/// the response it returns.
public struct HTTPEndpoint: Sendable {
    /// The request method this endpoint answers (`POST`); other methods on its path get 405.
    public var method: String
    /// The path, segments starting with `:` matching any one segment, given to the handler by name:
    /// `/api/events/:id/live`.
    public var path: String
    /// The largest body taken (413 beyond it, before it is read when Content-Length says so).
    public var maxBodyBytes: Int
    public var handle: @Sendable (HTTPRequest) async -> HTTPResponse
    /// The lease whose holder must serve it (several nodes), like an op's `home`: a request that
    /// arrives elsewhere is read whole and forwarded there. Nil: any node serves it.
    public private(set) var home: String?

    /// This endpoint, served by the holder of lease `home` (`route:*` for what feeds the intel hub).
    public func homed(_ home: String) -> HTTPEndpoint {
        var endpoint = self
        endpoint.home = home
        return endpoint
    }

    /// This endpoint, served once `step` passes (a domain making its memory current first); while
    /// `step` throws, the request gets 503 with its message and `Retry-After`, its body unread.
    public func preceded(by step: @escaping @Sendable () async throws(ProtocolError) -> Void) -> HTTPEndpoint {
        var endpoint = self
        let handle = self.handle
        endpoint.handle = { request in
            do throws(ProtocolError) { try await step() } catch {
                return .error(503, error.message, headers: [("Retry-After", "1")])
            }
            return await handle(request)
        }
        return endpoint
    }

    public init(_ method: String, _ path: String, maxBodyBytes: Int, handle: @escaping @Sendable (HTTPRequest) async -> HTTPResponse) {
        self.method = method
        self.path = path
        self.maxBodyBytes = maxBodyBytes
        self.handle = handle
    }

    /// The path's segments (`/api/intel` → `["api", "intel"]`).
    public var segments: [Substring] { path.split(separator: "/") }

    /// The path parameters when `path` matches this endpoint's pattern, else nil.
    public func match(_ path: String) -> [String: String]? {
        let pattern = segments, given = path.split(separator: "/", omittingEmptySubsequences: true)
        guard pattern.count == given.count else { return nil }
        var parameters: [String: String] = [:]
        for (p, g) in zip(pattern, given) {
            if p.first == ":" {
                guard let value = String(g).removingPercentEncoding, !value.isEmpty else { return nil }
                parameters[String(p.dropFirst())] = value
            } else if p != g {
                return nil
            }
        }
        return parameters
    }
}

/// One request to an `HTTPEndpoint`.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path with its query, as the request line gave it.
    public var target: String
    /// The path without the query.
    public var path: String
    /// The path's `:name` segments, percent-decoded.
    public var parameters: [String: String]
    /// The query's fields, percent-decoded (`?feed=gvb` → `["feed": "gvb"]`; a repeated name keeps the last).
    public var query: [String: String]
    public var headers: [(name: String, value: String)]
    /// The body as it arrives.
    public var body: RequestBody

    public init(method: String, target: String, parameters: [String: String] = [:], headers: [(name: String, value: String)] = [],
                body: RequestBody) {
        self.method = method
        self.target = target
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = String(parts.first ?? "")
        query = parts.count > 1 ? Self.fields(of: parts[1]) : [:]
        self.parameters = parameters
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    static func fields(of query: Substring) -> [String: String] {
        var out: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ s: Substring) -> String? { String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = decode(kv[0]), !name.isEmpty else { continue }
            out[name] = kv.count > 1 ? decode(kv[1]) ?? "" : ""
        }
        return out
    }
}

/// What an `HTTPEndpoint` answers.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    public var headers: [(String, String)]

    public init(status: Int, contentType: String, body: [UInt8], headers: [(String, String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    /// A JSON answer (one line, newline-terminated).
    public static func json(_ status: Int, _ value: JSON, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Array((value.encoded + "\n").utf8), headers: headers)
    }

    /// An error as JSON: `{"error": message}` plus `fields`.
    public static func error(_ status: Int, _ message: String, _ fields: [(String, JSON)] = [], headers: [(String, String)] = []) -> HTTPResponse {
        .json(status, .object([("error", .string(message))] + fields), headers: headers)
    }
}

extension HTTPRequest {
    /// The whole body, or the answer that says why not: 413 past `limit` bytes (naming the
    /// setting that sets it), 400 when it did not arrive whole.
    public func wholeBody(upTo limit: Int, setting: String) async -> (bytes: [UInt8]?, refusal: HTTPResponse?) {
        do {
            return (try await body.collect(upTo: limit), nil)
        } catch is RequestBody.TooLarge {
            return (nil, .error(413, "the body is larger than \(limit) bytes (\(setting))"))
        } catch {
            return (nil, .error(400, "the body did not arrive: \(error)"))
        }
    }
}
