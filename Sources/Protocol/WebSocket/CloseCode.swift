/// Close status codes (RFC 6455 §7.4) and Hubbub's own (protocol.md).
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = CloseCode(1000)
    /// Server shutting down or restarting; with reason `restart` the client should reconnect with jitter.
    public static let goingAway = CloseCode(1001)
    public static let protocolError = CloseCode(1002)
    public static let unsupportedData = CloseCode(1003)
    /// Never sent on the wire: reported when a close frame carried no code.
    public static let noStatus = CloseCode(1005)
    /// Never sent on the wire: reported when the connection dropped without a close frame.
    public static let abnormal = CloseCode(1006)
    public static let invalidPayload = CloseCode(1007)
    public static let policyViolation = CloseCode(1008)
    public static let messageTooBig = CloseCode(1009)
    public static let mandatoryExtension = CloseCode(1010)
    public static let internalError = CloseCode(1011)
    /// The client's outbound queue went over its limit (a slow consumer).
    public static let slowConsumer = CloseCode(4001)
    public static let tokenExpired = CloseCode(4002)
    /// Rate limits far exceeded.
    public static let abuse = CloseCode(4003)

    /// Whether a peer may send this code in a close frame: 1000–1003, 1007–1011, 3000–4999.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1011, 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }

    /// The codes RFC 6455 and Hubbub give a meaning to.
    public static let named: Set<CloseCode> = [.normal, .goingAway, .protocolError, .unsupportedData, .noStatus, .abnormal,
                                                .invalidPayload, .policyViolation, .messageTooBig, .mandatoryExtension,
                                                .internalError, .slowConsumer, .tokenExpired, .abuse]

    /// A metric label for this code: the code itself when it is named, else its range, so a peer
    /// choosing codes cannot create series without bound.
    public var label: String {
        if Self.named.contains(self) { return description }
        switch rawValue {
        case 3000...3999: return "3xxx"
        case 4000...4999: return "4xxx"
        default: return "other"
        }
    }
}
