/// A protocol violation by the peer; each maps to the close code the connection is failed with.
public struct WebSocketError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: CloseCode
    /// Short reason sent in the close frame (≤ 123 bytes of UTF-8).
    public var reason: String

    public init(_ code: CloseCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue) \(reason)" }

    public static func protocolError(_ reason: String) -> WebSocketError { WebSocketError(.protocolError, reason) }
}
