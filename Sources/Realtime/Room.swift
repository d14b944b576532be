import WebSocket

/// Someone a room can push to: hashable, and in a delivery batch (its event loop), so one push
/// costs one hand-over per batch rather than one per member.
public protocol RoomMember: Hashable, Sendable {
    var batch: Int { get }
}

/// Carries encoded pushes to members; `members` all share one batch.
public protocol PushSink<Member>: Sendable {
    associatedtype Member: RoomMember
    func deliver(_ message: OutboundMessage, to members: [Member])
}

/// One room's live state: sequence numbers, an epoch, a bounded history of recent pushes for
/// recovery, and its members grouped by batch. Owned by one actor (the venue's, the corridor's...),
/// so a push and a subscription never interleave.
public struct Room<Member: RoomMember>: Sendable {
    /// Limits of the recovery history.
    public struct HistoryLimits: Sendable {
        /// Most pushes kept.
        public var count: Int
        /// Oldest push kept, in seconds.
        public var maxAgeSeconds: Double
        public init(count: Int = 1000, maxAgeSeconds: Double = 300) {
            self.count = count
            self.maxAgeSeconds = maxAgeSeconds
        }
    }

    /// The room's name, e.g. `venue:v12`.
    public let name: String
    /// Changes when the history is reset (each server start): a client's old `seq` is then meaningless.
    public private(set) var epoch: String
    /// The last push's sequence number (0 before the first).
    public private(set) var seq: UInt64 = 0
    private let limits: HistoryLimits
    /// Recent pushes, oldest first: (seq, message, time).
    private var history: [(UInt64, OutboundMessage, Double)] = []
    private var historyStart = 0
    private var members: [Int: Set<Member>] = [:]

    public init(name: String, epoch: String, limits: HistoryLimits = .init()) {
        self.name = name
        self.epoch = epoch
        self.limits = limits
    }

    public var memberCount: Int { members.values.reduce(0) { $0 + $1.count } }

    /// Encodes a push once, records it for recovery and hands it to every member.
    @discardableResult
    public mutating func publish(event: String, data: JSON, now: Double, sink: some PushSink<Member>) -> OutboundMessage {
        seq += 1
        let message = OutboundMessage(text: Envelope.push(room: name, seq: seq, epoch: epoch, event: event, data: data))
        record(seq, message, now)
        for (_, group) in members where !group.isEmpty { sink.deliver(message, to: Array(group)) }
        return message
    }

    private mutating func record(_ seq: UInt64, _ message: OutboundMessage, _ now: Double) {
        history.append((seq, message, now))
        trim(now: now)
    }

    private mutating func trim(now: Double) {
        while historyStart < history.count,
              history.count - historyStart > limits.count || now - history[historyStart].2 > limits.maxAgeSeconds {
            historyStart += 1
        }
        if historyStart > 64 && historyStart * 2 > history.count {
            history.removeFirst(historyStart)
            historyStart = 0
        }
    }

    /// Where a client that asks to resume stands.
    public enum Resume: Equatable, Sendable {
        /// Every push after `since` is still in the history: here they are, in order.
        case recovered([OutboundMessage])
        /// The epoch changed or the gap is too old: the client needs a snapshot.
        case snapshotNeeded

        public static func == (a: Resume, b: Resume) -> Bool {
            switch (a, b) {
            case (.snapshotNeeded, .snapshotNeeded): return true
            case (.recovered(let x), .recovered(let y)): return x.count == y.count && zip(x, y).allSatisfy { $0 === $1 }
            default: return false
            }
        }
    }

    /// Adds a member; with `since`, says whether the pushes it missed can be replayed.
    /// The caller sends its reply and then the recovered pushes to this member before anything
    /// else is published (it owns the room, so nothing can come in between).
    public mutating func join(_ member: Member, since: (seq: UInt64, epoch: String)?, now: Double) -> Resume {
        members[member.batch, default: []].insert(member)
        guard let since else { return .snapshotNeeded }
        trim(now: now)
        guard since.epoch == epoch, since.seq <= seq else { return .snapshotNeeded }
        if since.seq == seq { return .recovered([]) }
        // The history must still hold seq+1 … current.
        guard historyStart < history.count, history[historyStart].0 <= since.seq + 1 else { return .snapshotNeeded }
        let missed = history[historyStart...].filter { $0.0 > since.seq }.map(\.1)
        return .recovered(missed)
    }

    /// Removes a member (no-op if absent).
    public mutating func leave(_ member: Member) {
        members[member.batch]?.remove(member)
        if members[member.batch]?.isEmpty == true { members[member.batch] = nil }
    }
}
