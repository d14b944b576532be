/// How a request's body is delimited (RFC 9112 §6.3), decided from its head.
public enum HTTPBodyFraming: Equatable, Sendable {
    /// No body.
    case none
    /// Exactly this many bytes.
    case length(Int)
    /// `Transfer-Encoding: chunked`: chunks, a last chunk of size 0, optional trailers.
    case chunked

    /// The framing of a request, or why it is refused. Refused, as smuggling defences: both
    /// Transfer-Encoding and Content-Length (400), Content-Lengths that disagree or are not digits
    /// (400), a transfer coding that does not end in `chunked` (400); any other coding is 501.
    public static func of(_ head: HTTPHead) -> Result<HTTPBodyFraming, HTTPError> {
        let encodings = head.values("Transfer-Encoding")
        let lengths = head.values("Content-Length")
        if !encodings.isEmpty {
            guard lengths.isEmpty else { return .failure(HTTPError(400, "both Transfer-Encoding and Content-Length")) }
            let codings = encodings.flatMap { $0.split(separator: ",").map { $0.trimmingSpaces().lowercased() } }
            guard codings.last == "chunked" else { return .failure(HTTPError(400, "Transfer-Encoding must end with chunked")) }
            guard codings.count == 1 else {
                let other = codings.first { $0 != "chunked" } ?? "chunked"
                return .failure(HTTPError(other == "chunked" ? 400 : 501, other == "chunked" ? "chunked twice"
                                                                                             : "transfer coding \(other) is not supported"))
            }
            return .success(.chunked)
        }
        guard !lengths.isEmpty else { return .success(.none) }
        // Several fields (or a list) are allowed only when they all say the same (RFC 9110 §8.6).
        let values = Set(lengths.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingSpaces() } })
        guard values.count == 1, let text = values.first, !text.isEmpty, text.count <= 18,
              text.utf8.allSatisfy({ (48...57).contains($0) }), let n = Int(text) else {
            return .failure(HTTPError(400, "invalid Content-Length"))
        }
        return .success(n == 0 ? .none : .length(n))
    }
}

/// Reads a request body as it arrives, in any pieces: pure and I/O-free like `HTTPHeadParser`. The
/// body's bytes are reported as ranges of the input just fed, so they are never copied or held
/// whole here; a 500 MB feed passes through in read-sized pieces.
///
/// Strict on framing, which is where request smuggling lives: chunk lines end in CRLF (a bare LF
/// is refused), sizes are hexadecimal without sign or prefix, extensions and trailers are bounded.
public struct HTTPBodyParser {
    /// Bounds on one body; every value is configurable.
    public struct Limits: Sendable, Equatable {
        /// Largest body (413 beyond it).
        public var maxBytes: Int
        /// Longest chunk-size line, extensions included (400 beyond it).
        public var maxLineBytes: Int
        /// Most bytes of trailer fields (431 beyond them).
        public var maxTrailerBytes: Int

        public init(maxBytes: Int, maxLineBytes: Int = 4096, maxTrailerBytes: Int = 8192) {
            self.maxBytes = maxBytes
            self.maxLineBytes = maxLineBytes
            self.maxTrailerBytes = maxTrailerBytes
        }
    }

    /// Where the parser is.
    public enum State: Equatable, Sendable {
        /// Content-Length framing: this many bytes still to come.
        case fixed(remaining: Int)
        /// Reading a chunk size's hexadecimal digits (`digits` so far, `value` their value).
        case chunkSize(value: Int, digits: Int)
        /// After the size: spaces or tabs, then (once `extensions` is set by a `;`) extensions, up to
        /// CR. `lineBytes` counts the line so far.
        case chunkExtension(size: Int, lineBytes: Int, extensions: Bool)
        /// The size line's CR was read; LF must follow.
        case chunkSizeLF(size: Int)
        /// Inside a chunk: this many data bytes still to come.
        case chunkData(remaining: Int)
        /// After a chunk's data: CR must follow.
        case chunkDataCR
        /// After a chunk's data and CR: LF must follow.
        case chunkDataLF
        /// After the last chunk: trailer fields, line by line, until an empty line.
        case trailers
        /// The body is complete; further bytes belong to the next request.
        case done
        /// The body was refused; nothing more is read.
        case failed
    }

    /// What a call to `feed` came to.
    public enum Progress: Equatable, Sendable {
        /// The body goes on: feed more.
        case needMore
        /// The body ended after `consumed` bytes of this input (the rest is the next request).
        case complete(consumed: Int, trailers: [HTTPField])
        /// The body is malformed or too large; answer `error` and close.
        case error(HTTPError)
    }

    /// A trailer field.
    public struct HTTPField: Equatable, Sendable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public let limits: Limits
    public private(set) var state: State
    /// Body bytes seen so far.
    public private(set) var received = 0
    /// The trailer line being read, and every trailer line's bytes so far.
    private var line: [UInt8] = []
    private var trailerBytes = 0
    private var fields: [HTTPField] = []

    /// A parser for a body of `framing` (not `.none`: a body-less request has nothing to parse).
    public init(framing: HTTPBodyFraming, limits: Limits) {
        self.limits = limits
        switch framing {
        case .none: state = .done
        case .length(let n): state = .fixed(remaining: n)
        case .chunked: state = .chunkSize(value: 0, digits: 0)
        }
    }

    /// Feeds bytes; appends the ranges of `bytes` that are body data to `data`, in order.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, data: inout [Range<Int>]) -> Progress {
        var i = 0
        let n = bytes.count
        while i < n || state == .done {
            switch state {
            case .done:
                return .complete(consumed: i, trailers: fields)
            case .failed:
                return .error(HTTPError(400, "the request body was already refused"))
            case .fixed(let remaining):
                let take = min(remaining, n - i)
                if let e = account(take) { return e }
                data.append(i..<(i + take))
                i += take
                state = remaining == take ? .done : .fixed(remaining: remaining - take)
            case .chunkData(let remaining):
                let take = min(remaining, n - i)
                if let e = account(take) { return e }
                data.append(i..<(i + take))
                i += take
                state = remaining == take ? .chunkDataCR : .chunkData(remaining: remaining - take)
            case .chunkSize(let value, let digits):
                let c = bytes[i]
                if let d = Self.hexValue(c) {
                    guard digits < 16, value <= (Int.max - d) / 16 else { return fail(400, "chunk size too large") }
                    let v = value * 16 + d
                    // Refused as soon as the size alone would pass the limit: nothing of it is read.
                    if received + v > limits.maxBytes { return fail(413, "request body larger than \(limits.maxBytes) bytes") }
                    state = .chunkSize(value: v, digits: digits + 1)
                    i += 1
                } else {
                    guard digits > 0 else { return fail(400, "chunk size expected") }
                    state = .chunkExtension(size: value, lineBytes: digits, extensions: false)
                }
            case .chunkExtension(let size, let lineBytes, let extensions):
                let c = bytes[i]
                i += 1
                if c == 13 {
                    state = .chunkSizeLF(size: size)
                } else {
                    guard c != 10 else { return fail(400, "chunk line must end with CRLF") }
                    // Extensions are ignored (RFC 9112 §7.1.1), but only printable text may be in them,
                    // and before the first `;` only whitespace.
                    let allowed = extensions ? c == 9 || (32...126).contains(c) : c == 9 || c == 32 || c == 59
                    guard allowed else { return fail(400, "invalid byte in a chunk line") }
                    guard lineBytes < limits.maxLineBytes else { return fail(400, "chunk line longer than \(limits.maxLineBytes) bytes") }
                    state = .chunkExtension(size: size, lineBytes: lineBytes + 1, extensions: extensions || c == 59)
                }
            case .chunkSizeLF(let size):
                guard bytes[i] == 10 else { return fail(400, "chunk line must end with CRLF") }
                i += 1
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkDataCR:
                guard bytes[i] == 13 else { return fail(400, "chunk data must end with CRLF") }
                i += 1
                state = .chunkDataLF
            case .chunkDataLF:
                guard bytes[i] == 10 else { return fail(400, "chunk data must end with CRLF") }
                i += 1
                state = .chunkSize(value: 0, digits: 0)
            case .trailers:
                let c = bytes[i]
                i += 1
                trailerBytes += 1
                guard trailerBytes <= limits.maxTrailerBytes else { return fail(431, "trailers larger than \(limits.maxTrailerBytes) bytes") }
                if c == 10 {
                    guard line.last == 13 else { return fail(400, "trailer lines must end with CRLF") }
                    line.removeLast()
                    if line.isEmpty {
                        state = .done
                    } else {
                        guard let field = Self.field(line) else { return fail(400, "malformed trailer field") }
                        fields.append(field)
                        line.removeAll(keepingCapacity: true)
                    }
                } else {
                    guard line.last != 13 else { return fail(400, "trailer lines must end with CRLF") }
                    line.append(c)
                }
            }
        }
        return .needMore
    }

    /// Counts `n` more body bytes; the error once the body passes its limit.
    private mutating func account(_ n: Int) -> Progress? {
        received += n
        return received > limits.maxBytes ? fail(413, "request body larger than \(limits.maxBytes) bytes") : nil
    }

    private mutating func fail(_ status: Int, _ message: String) -> Progress {
        state = .failed
        return .error(HTTPError(status, message))
    }

    private static func hexValue(_ c: UInt8) -> Int? {
        switch c {
        case 48...57: return Int(c - 48)
        case 65...70: return Int(c - 55)
        case 97...102: return Int(c - 87)
        default: return nil
        }
    }

    /// `name: value` with a token name; the value trimmed of spaces and tabs.
    private static func field(_ line: [UInt8]) -> HTTPField? {
        guard let colon = line.firstIndex(of: 58), colon > 0,
              line[..<colon].allSatisfy(HTTPHeadParser.isTokenByte),
              line[(colon + 1)...].allSatisfy({ $0 == 9 || (32...126).contains($0) || $0 >= 128 }) else { return nil }
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()
        return HTTPField(name: String(decoding: line[..<colon], as: UTF8.self), value: value)
    }
}
