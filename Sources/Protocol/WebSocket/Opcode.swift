/// A WebSocket frame opcode (RFC 6455 §5.2).
public enum Opcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Control frames (close, ping, pong) may not be fragmented and carry at most 125 bytes.
    @inlinable public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// What a complete message carries: UTF-8 text or opaque bytes.
public enum MessageKind: Sendable, Equatable {
    case text
    case binary

    public var opcode: Opcode { self == .text ? .text : .binary }
}

/// One complete, reassembled (and inflated) WebSocket message.
public struct Message: Sendable, Equatable {
    public var kind: MessageKind
    public var data: [UInt8]

    public init(kind: MessageKind, data: [UInt8]) {
        self.kind = kind
        self.data = data
    }

    public static func text(_ string: String) -> Message { Message(kind: .text, data: Array(string.utf8)) }
    public static func binary(_ bytes: [UInt8]) -> Message { Message(kind: .binary, data: bytes) }

    /// The text of a text message (the bytes were validated as UTF-8 on receipt).
    public var text: String { String(decoding: data, as: UTF8.self) }
}
