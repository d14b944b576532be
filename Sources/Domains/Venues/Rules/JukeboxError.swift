/// Why a jukebox change was refused. Each case has a human `message` and maps to one protocol
/// error `code` (protocol.md): the server replies `{"code": code, "message": message}`.
public enum JukeboxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A field is missing, empty, too long or out of range; `field` names it as in the op's args.
    case badRequest(field: String, message: String)
    /// No playlist, no such track in the queue, no such vote.
    case notFound(String)
    /// The change contradicts the current state: the same playlist again, a second vote,
    /// a track played recently, fair mode's cap on pending requests, a full queue.
    case conflict(String)
    /// The track has explicit lyrics and the venue does not allow them (UC9 8a).
    case explicitNotAllowed
    /// Too many votes or requests in the last hour; retry after this many milliseconds.
    case rateLimited(retryAfterMs: Int)

    /// The protocol's error code. `explicitNotAllowed` is `forbidden`: the venue's policy refuses it.
    public var code: String {
        switch self {
        case .badRequest: "bad_request"
        case .notFound: "not_found"
        case .conflict: "conflict"
        case .explicitNotAllowed: "forbidden"
        case .rateLimited: "rate_limited"
        }
    }

    public var message: String {
        switch self {
        case .badRequest(_, let message): message
        case .notFound(let message): message
        case .conflict(let message): message
        case .explicitNotAllowed: "this track has explicit lyrics, which this venue does not allow"
        case .rateLimited(let ms):
            "too many votes or requests in the last hour; try again in \(Self.seconds(ms))"
        }
    }

    public var description: String { "\(code): \(message)" }

    /// Whole seconds, rounded up, for messages ("1 second", "42 seconds").
    static func seconds(_ ms: Int) -> String {
        let s = max(1, (ms + 999) / 1000)
        return s == 1 ? "1 second" : "\(s) seconds"
    }
}
