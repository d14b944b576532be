import Realtime
import WebSocket

/// One push of a room as the room log keeps it: its `seq` in the room's `epoch`, when it was
/// made, and its encoded text (with a version per language for a localized push). The same value
/// is written in the change's transaction, delivered to this node's subscribers after the commit,
/// and read back by other nodes and by recovery.
public struct LoggedPush: Sendable {
    public let room: String
    public let epoch: String
    public let seq: UInt64
    /// Seconds since 1970.
    public let at: Double
    /// The push in its original language.
    public let message: OutboundMessage
    /// The same push for readers of other languages, by language tag.
    public let translated: [String: OutboundMessage]

    public init(room: String, epoch: String, seq: UInt64, at: Double, message: OutboundMessage,
                translated: [String: OutboundMessage] = [:]) {
        self.room = room
        self.epoch = epoch
        self.seq = seq
        self.at = at
        self.message = message
        self.translated = translated
    }
}

/// Where a room's log stands: the last `seq` written, in `epoch`.
public struct RoomHead: Sendable, Equatable {
    public var seq: UInt64
    public var epoch: String
    public init(seq: UInt64, epoch: String) {
        self.seq = seq
        self.epoch = epoch
    }
}

/// A room's pushes made durable before they are delivered: the owner of a room (its actor) takes
/// the next `seq` here, encodes the push once, and hands the staged pushes to the change that
/// reports them (`RoomLogRows.append` in its transaction); once that commits, `RoomFeed.deliver`.
public struct StagedRoom: Sendable {
    public let name: String
    public private(set) var head: RoomHead
    /// Pushes taken since the last `take()`, in order.
    private var staged: [LoggedPush] = []
    /// The mark (`PushMark`) of the push at `head.seq`, when this writer made it (nil: the push
    /// is older, or was encoded inside a change).
    public private(set) var headMark: UInt64?

    public init(name: String, head: RoomHead) {
        self.name = name
        self.head = head
    }

    public var seq: UInt64 { head.seq }
    public var epoch: String { head.epoch }

    /// Encodes the next push, to be written with the change that reports it.
    public mutating func stage(_ event: some RoomEvent, data: JSON, at now: Double) {
        head.seq += 1
        let text = Envelope.push(room: name, seq: head.seq, epoch: head.epoch, event: event.rawValue, data: data)
        let message = OutboundMessage(text: text)
        headMark = PushMark.of(message.payload)
        staged.append(LoggedPush(room: name, epoch: head.epoch, seq: head.seq, at: now, message: message))
    }

    /// Encodes a push whose text depends on the reader's language: `data(nil)` is the original, `data(tag)`
    /// the version for readers of `tag`, each encoded once; all share one `seq` (see `Room.publish(prepared:)`).
    public mutating func stage(_ event: some RoomEvent, languages: [String], data: (String?) -> JSON, at now: Double) {
        head.seq += 1
        func encode(_ data: JSON) -> OutboundMessage {
            OutboundMessage(text: Envelope.push(room: name, seq: head.seq, epoch: head.epoch, event: event.rawValue, data: data))
        }
        var translated: [String: OutboundMessage] = [:]
        for tag in languages where translated[tag] == nil { translated[tag] = encode(data(tag)) }
        let message = encode(data(nil))
        headMark = PushMark.of(message.payload)
        staged.append(LoggedPush(room: name, epoch: head.epoch, seq: head.seq, at: now, message: message, translated: translated))
    }

    /// Takes the next `seq` for a push whose data only the change's transaction knows (a count
    /// read there): the change encodes it with `Reservation.push` and appends it itself. The
    /// change must not fail for any reason but the store's, or the room's log would have a hole.
    public mutating func reserve() -> Reservation {
        head.seq += 1
        headMark = nil
        return Reservation(room: name, head: head)
    }

    /// The pushes staged since the last call, for the change that reports them.
    public mutating func take() -> [LoggedPush] {
        defer { staged = [] }
        return staged
    }

    /// Whether pushes are staged and not yet taken (a change forgot to take them).
    public var hasStaged: Bool { !staged.isEmpty }
}

/// A `seq` taken for a push encoded inside the change's transaction (see `StagedRoom.reserve`).
public struct Reservation: Sendable {
    public let room: String
    public let head: RoomHead

    public func push(_ event: some RoomEvent, data: JSON, at now: Double) -> LoggedPush {
        let text = Envelope.push(room: room, seq: head.seq, epoch: head.epoch, event: event.rawValue, data: data)
        return LoggedPush(room: room, epoch: head.epoch, seq: head.seq, at: now, message: OutboundMessage(text: text))
    }
}

/// A push's fingerprint (FNV-1a over its text): a snapshot taken while its last push was not yet
/// durable names it, so that a node holding the snapshot's answer releases it only when that very
/// push is in the log at that seq, not another one its seq went to after the first was lost.
public enum PushMark {
    public static func of(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        return h
    }
}
