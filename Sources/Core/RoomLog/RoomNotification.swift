import WebSocket

/// What a node tells the others when it commits pushes to a room's log (PostgreSQL `NOTIFY` on
/// `channel`, sent in the change's transaction, so only once it commits): the room, its epoch,
/// the range of `seq`s written and when, and the pushes themselves when they fit well under
/// NOTIFY's 8,000-byte limit (otherwise the listeners read them from the log).
///
/// The text is `room TAB epoch TAB first TAB last TAB at`, then for each push carried, the record
/// separator U+001E and its JSON text (JSON text never holds an unescaped control character).
/// One NOTIFY may carry several rooms' notifications (a change that reached many rooms), separated
/// by the group separator U+001D (`packed`, `all(in:)`).
public struct RoomNotification: Sendable, Equatable {
    public static let channel = "hubbub_rooms"
    /// Most bytes a notification's text takes (PostgreSQL refuses 8,000 and more).
    public static let maxBytes = 7_600

    public var room: String
    public var epoch: String
    public var first: UInt64
    public var last: UInt64
    public var at: Double
    /// The pushes' texts, `first` … `last`, or none (read them from the log).
    public var payloads: [[UInt8]]

    public init(room: String, epoch: String, first: UInt64, last: UInt64, at: Double, payloads: [[UInt8]]) {
        self.room = room
        self.epoch = epoch
        self.first = first
        self.last = last
        self.at = at
        self.payloads = payloads
    }

    /// The notification for `pushes` (one room's, in order), carrying them when they fit.
    public init?(_ pushes: [LoggedPush]) {
        guard let f = pushes.first, let l = pushes.last else { return nil }
        let header = 5 + f.room.utf8.count + f.epoch.utf8.count + 60
        let size = pushes.reduce(header) { $0 + 1 + $1.message.payload.count }
        let carry = size <= Self.maxBytes && pushes.allSatisfy { $0.translated.isEmpty }
        self.init(room: f.room, epoch: f.epoch, first: f.seq, last: l.seq, at: l.at, payloads: carry ? pushes.map(\.message.payload) : [])
    }

    public var text: String {
        var out = Array("\(room)\t\(epoch)\t\(first)\t\(last)\t\(at)".utf8)
        for p in payloads {
            out.append(0x1E)
            out += p
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Reads a notification's text; nil if it is not one.
    public init?(text: String) {
        var parts = Array(text.utf8).split(separator: 0x1E, omittingEmptySubsequences: false)
        guard !parts.isEmpty else { return nil }
        let fields = parts.removeFirst().split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        guard fields.count == 5, let first = UInt64(fields[2]), let last = UInt64(fields[3]), first <= last,
              let at = Double(fields[4]) else { return nil }
        guard parts.isEmpty || parts.count == Int(last - first + 1) else { return nil }
        self.init(room: fields[0], epoch: fields[1], first: first, last: last, at: at, payloads: parts.map { Array($0) })
    }

    /// `notes` in as few texts as fit under `maxBytes`, each note whole, in order.
    public static func packed(_ notes: [RoomNotification]) -> [String] {
        var texts: [String] = [], current: [UInt8] = []
        for note in notes {
            let text = Array(note.text.utf8)
            if !current.isEmpty && current.count + 1 + text.count > maxBytes {
                texts.append(String(decoding: current, as: UTF8.self))
                current = []
            }
            if !current.isEmpty { current.append(0x1D) }
            current += text
        }
        if !current.isEmpty { texts.append(String(decoding: current, as: UTF8.self)) }
        return texts
    }

    /// Every notification a NOTIFY's text holds, in order; nil if any part is not one.
    public static func all(in text: String) -> [RoomNotification]? {
        all(in: text) { _ in true }?.notes
    }

    /// The notifications of the rooms `wanted` keeps, in order, and how many others were passed
    /// over unread (every node hears every room's notifications, most of them of rooms it does
    /// not watch: 70 % in rush hour on three nodes); nil if a part read is not one, or a part
    /// has no room.
    public static func all(in text: String, wanted: (String) -> Bool) -> (notes: [RoomNotification], skipped: Int)? {
        var notes: [RoomNotification] = [], skipped = 0
        for part in Array(text.utf8).split(separator: 0x1D, omittingEmptySubsequences: false) {
            guard let tab = part.firstIndex(of: UInt8(ascii: "\t")) else { return nil }
            guard wanted(String(decoding: part[..<tab], as: UTF8.self)) else {
                skipped += 1
                continue
            }
            guard let note = RoomNotification(text: String(decoding: part, as: UTF8.self)) else { return nil }
            notes.append(note)
        }
        return (notes, skipped)
    }

    /// The pushes carried, if any.
    public var pushes: [LoggedPush] {
        payloads.enumerated().map { i, p in
            LoggedPush(room: room, epoch: epoch, seq: first + UInt64(i), at: at, message: OutboundMessage(kind: .text, payload: p))
        }
    }
}
