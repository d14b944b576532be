/// An HTTP/1.1 request or response head: start line and headers, as received.
public struct HTTPHead: Sendable, Equatable {
    /// Request: method, target, version. Response: version, status code, reason phrase.
    public var startLine: (String, String, String)
    /// Header fields in order; names as sent (look them up case-insensitively).
    public var headers: [(name: String, value: String)]

    public init(startLine: (String, String, String), headers: [(name: String, value: String)]) {
        self.startLine = startLine
        self.headers = headers
    }

    public static func == (a: HTTPHead, b: HTTPHead) -> Bool {
        a.startLine == b.startLine && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    public var method: String { startLine.0 }
    public var target: String { startLine.1 }
    /// The target without its query string.
    public var path: String { String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "") }

    /// Every value of a header, in order.
    public func values(_ name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// The values of a header joined with ", " (RFC 9110 §5.3), or nil when absent.
    public func value(_ name: String) -> String? {
        let v = values(name)
        return v.isEmpty ? nil : v.joined(separator: ", ")
    }

    /// Whether a comma-separated header holds `token` (case-insensitive).
    public func hasToken(_ name: String, _ token: String) -> Bool {
        values(name).contains { $0.split(separator: ",").contains { $0.trimmingSpaces().caseInsensitiveEquals(token) } }
    }
}

extension StringProtocol {
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in
            (x >= 65 && x <= 90 ? x + 32 : x) == (y >= 65 && y <= 90 ? y + 32 : y)
        }
    }
}

/// Why a request head was refused, with the HTTP status to answer.
public struct HTTPError: Error, Equatable, Sendable {
    public var status: Int
    public var message: String
    /// Extra response headers (for instance `Sec-WebSocket-Version: 13` with 426).
    public var headers: [String: String]
    /// A short, fixed label for metrics (`bad_key`, `version`, `too_large`, ...).
    public var label: String

    public init(_ status: Int, _ message: String, headers: [String: String] = [:], label: String? = nil) {
        self.status = status
        self.message = message
        self.headers = headers
        self.label = label ?? "http_\(status)"
    }
}

/// Incremental parser of an HTTP/1.1 head (up to the empty line), a state machine over bytes.
/// It never buffers more than `maxBytes` and never accepts more than `maxHeaders` fields.
public struct HTTPHeadParser {
    /// Limits on what a peer may send before its head is complete.
    public struct Limits: Sendable, Equatable {
        public var maxBytes: Int
        public var maxHeaders: Int
        public init(maxBytes: Int = 8192, maxHeaders: Int = 64) {
            self.maxBytes = maxBytes
            self.maxHeaders = maxHeaders
        }
    }

    /// What kind of head the start line is parsed as.
    public enum Kind: Sendable { case request, response }

    /// Parsing progress.
    public enum State: Equatable, Sendable {
        /// Collecting bytes; the head has not ended yet.
        case reading
        /// A complete head was parsed (`bytesUsed` of the input belonged to it).
        case done
        /// The head is malformed or over a limit; the connection should get `error` and close.
        case failed
    }

    public let kind: Kind
    public let limits: Limits
    public private(set) var state: State = .reading
    private var buffer: [UInt8] = []
    /// How far the search for the blank line has already looked.
    private var scanned = 0

    public init(kind: Kind, limits: Limits = Limits()) {
        self.kind = kind
        self.limits = limits
    }

    /// Result of feeding bytes.
    public enum Result: Equatable, Sendable {
        /// Need more bytes.
        case needMore
        /// The head, plus any bytes after it (the start of the WebSocket stream).
        case head(HTTPHead, remainder: [UInt8])
        /// A bad or oversized head.
        case error(HTTPError)
    }

    /// Feeds bytes from the peer.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Result {
        guard state == .reading else { return .error(HTTPError(400, "request already parsed")) }
        buffer.append(contentsOf: bytes)
        // Look for CRLFCRLF (or bare LFLF, which RFC 9112 §2.2 lets a recipient accept).
        var end = -1
        var i = max(0, scanned - 3)
        while i < buffer.count {
            if buffer[i] == 10 {
                if i + 1 < buffer.count && buffer[i + 1] == 10 { end = i + 2; break }
                if i + 2 < buffer.count && buffer[i + 1] == 13 && buffer[i + 2] == 10 { end = i + 3; break }
            }
            i += 1
        }
        scanned = buffer.count
        if end < 0 {
            if buffer.count > limits.maxBytes { return fail(431, "request head over \(limits.maxBytes) bytes") }
            return .needMore
        }
        if end > limits.maxBytes { return fail(431, "request head over \(limits.maxBytes) bytes") }
        let remainder = Array(buffer[end...])
        let headBytes = buffer[..<end]
        buffer = []
        return parse(headBytes, remainder: remainder)
    }

    private mutating func fail(_ status: Int, _ message: String) -> Result {
        state = .failed
        buffer = []
        return .error(HTTPError(status, message, label: status == 431 ? "too_large" : "malformed"))
    }

    private mutating func parse(_ bytes: ArraySlice<UInt8>, remainder: [UInt8]) -> Result {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        for i in bytes.indices where bytes[i] == 10 {
            var line = bytes[start..<i]
            if line.last == 13 { line = line.dropLast() }
            lines.append(line)
            start = i + 1
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first, !first.isEmpty else { return fail(400, "empty request line") }
        guard let startLine = parseStartLine(first) else {
            return fail(400, kind == .request ? "malformed request line" : "malformed status line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if line.first == 32 || line.first == 9 { return fail(400, "obsolete header line folding") }
            guard let colon = line.firstIndex(of: 58) else { return fail(400, "header line without a colon") }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else { return fail(400, "invalid header name") }
            let value = line[(colon + 1)...]
            guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return fail(400, "control character in header value") }
            headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self).trimmingSpaces()))
            if headers.count > limits.maxHeaders { return fail(431, "more than \(limits.maxHeaders) header fields") }
        }
        state = .done
        return .head(HTTPHead(startLine: startLine, headers: headers), remainder: remainder)
    }

    private func parseStartLine(_ line: ArraySlice<UInt8>) -> (String, String, String)? {
        let parts = line.split(separator: 32, maxSplits: 2, omittingEmptySubsequences: false)
        switch kind {
        case .request:
            guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(Self.isTokenByte), !parts[1].isEmpty,
                  parts[1].allSatisfy({ $0 > 32 && $0 < 127 }), parts[2].starts(with: Array("HTTP/".utf8)), parts[2].count == 8
            else { return nil }
            return (String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), String(decoding: parts[2], as: UTF8.self))
        case .response:
            guard parts.count >= 2, parts[0].starts(with: Array("HTTP/".utf8)), parts[1].count == 3,
                  parts[1].allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return (String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self),
                    parts.count == 3 ? String(decoding: parts[2], as: UTF8.self) : "")
        }
    }

    static func isTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case 48...57, 65...90, 97...122: return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(c)
        }
    }
}

/// Builds HTTP/1.1 responses.
public enum HTTPResponse {
    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 413: return "Content Too Large"
        case 426: return "Upgrade Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }

    /// A complete response with a body; the connection is closed after it unless `keepAlive`.
    public static func make(status: Int, headers: [(String, String)] = [], contentType: String = "text/plain; charset=utf-8",
                            body: [UInt8], keepAlive: Bool = false) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        head += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// The answer to a refused request: the status and a one-line reason in the body.
    public static func error(_ error: HTTPError) -> [UInt8] {
        make(status: error.status, headers: error.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
             body: Array((error.message + "\n").utf8))
    }
}
