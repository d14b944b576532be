import WebSocket

/// Carries encoded pushes and replies to connections, from any thread. The transport's wiring
/// implements it; rooms and domains only name connections by `ConnectionID`.
public protocol PushSink: Sendable {
    /// Hands `message` to `members`, which all share one loop (`ConnectionID.loop`): one hand-over.
    func deliver(_ message: OutboundMessage, to members: [ConnectionID])
    /// Hands `message` to one connection.
    func deliver(_ message: OutboundMessage, to member: ConnectionID)
    /// Starts closing a connection (revoked token, abuse).
    func close(_ member: ConnectionID, code: CloseCode, reason: String)
}

/// A push event's name on the wire (`playlist.reordered`, `track.moved`...). Each domain lists its
/// events in an enum of its own whose raw values are the names of protocol.md.
public protocol RoomEvent: RawRepresentable<String>, Sendable {}

/// Where a reconnecting client says it stood: the last `seq` it saw in `epoch`.
public struct Since: Sendable, Equatable {
    public var seq: UInt64
    public var epoch: String
    public init(seq: UInt64, epoch: String) {
        self.seq = seq
        self.epoch = epoch
    }

    /// `since` of a subscribe request (`{seq, epoch}`), if given; errors name the field.
    public init?(_ args: Args) throws(ProtocolError) {
        guard let s = try args.optionalObject("since") else { return nil }
        let seq = try s.int("seq")
        guard seq >= 0 else { throw .badRequest("field since.seq must not be negative") }
        self.init(seq: UInt64(seq), epoch: try s.string("epoch", maxLength: 64))
    }
}

/// One room's live state on a node: where its log stands (`seq`, `epoch`), a bounded history of
/// recent pushes for recovery, and this node's members grouped by loop. Owned by the node's
/// `RoomFeed` (under its lock), so a push and a subscription never interleave.
///
/// The history is bounded three ways, whichever bites first: a number of pushes, an age and a
/// number of bytes. The feed calls `trimHistory(now:)` from time to time, so a room that went
/// quiet gives back its history without waiting for the next push.
public struct Room: Sendable {
    /// Limits of the recovery history.
    public struct HistoryLimits: Sendable, Equatable {
        /// Most pushes kept.
        public var count: Int
        /// Oldest push kept, in seconds.
        public var maxAgeSeconds: Double
        /// Most bytes kept (encoded pushes and their frames).
        public var maxBytes: Int
        /// The memory all rooms' histories share (nil: none, each room holds up to `maxBytes`).
        public var budget: HistoryBudget?
        public init(count: Int = 1000, maxAgeSeconds: Double = 300, maxBytes: Int = 256 * 1024, budget: HistoryBudget? = nil) {
            self.count = count
            self.maxAgeSeconds = maxAgeSeconds
            self.maxBytes = maxBytes
            self.budget = budget
        }

        public static func == (a: HistoryLimits, b: HistoryLimits) -> Bool {
            a.count == b.count && a.maxAgeSeconds == b.maxAgeSeconds && a.maxBytes == b.maxBytes && a.budget === b.budget
        }
    }

    private struct Entry: Sendable {
        var seq: UInt64
        var message: OutboundMessage
        /// The same push for readers of other languages, by language tag (a localized push).
        var translated: [String: OutboundMessage] = [:]
        var at: Double
        var bytes: Int

        /// The push a reader of `language` gets.
        func message(for language: String?) -> OutboundMessage {
            guard !translated.isEmpty, let language, let tag = LanguageTag.match(language, in: translated.keys) else { return message }
            return translated[tag] ?? message
        }
    }

    /// The room's name, e.g. `venue:v12`.
    public let name: String
    /// The room log's epoch (kept across restarts in its head): when it changes, a client's old `seq`
    /// means nothing.
    public private(set) var epoch: String
    /// The last push's sequence number (0 before the first).
    public private(set) var seq: UInt64 = 0
    private let limits: HistoryLimits
    /// Recent pushes, oldest first, from `historyStart` on.
    private var history: [Entry] = []
    private var historyStart = 0
    /// Bytes held by `history[historyStart...]`.
    public private(set) var historyBytes = 0
    /// The same bytes as counted in the shared budget, if any.
    private let account: HistoryAccount?
    /// Members by loop index; each list is handed to the sink as it is (no copy per push).
    private var members: [[ConnectionID]] = []
    /// Where each member sits in its loop's list, so leaving is O(1).
    private var positions: [ConnectionID: Int] = [:]

    public init(name: String, epoch: String, limits: HistoryLimits = .init()) {
        self.name = name
        self.epoch = epoch
        self.limits = limits
        account = limits.budget.map(HistoryAccount.init)
    }

    /// Publishes a durable push (encoded once by its owner's `RoomWriter`) for the next `seq`:
    /// recorded for recovery and handed to every member, one hand-over per loop. With `translated`
    /// (a push read in each reader's language), each member gets the version its language
    /// (`languageOf`, matched by `LanguageTag.match`) picks, else the original.
    public mutating func publish(prepared message: OutboundMessage, translated: [String: OutboundMessage] = [:], seq next: UInt64,
                                 now: Double, languageOf: (ConnectionID) -> String? = { _ in nil }, sink: any PushSink) {
        precondition(next == seq + 1, "prepared pushes are published in seq order")
        seq = next
        record(seq, message, now, translated: translated)
        if translated.isEmpty {
            for group in members where !group.isEmpty { sink.deliver(message, to: group) }
        } else {
            deliver(message, translated: translated, languageOf: languageOf, sink: sink)
        }
    }

    /// A room that starts tracking a log at `seq` (pushes up to it are not its to deliver).
    public init(name: String, epoch: String, seq: UInt64, limits: HistoryLimits) {
        self.init(name: name, epoch: epoch, limits: limits)
        self.seq = seq
    }

    /// The room's log began a new epoch at `seq`: the history goes (positions in the old epoch
    /// mean nothing), the members stay and get the new epoch's pushes.
    public mutating func restart(epoch: String, seq: UInt64) {
        self.epoch = epoch
        self.seq = seq
        history.removeAll()
        historyStart = 0
        account?.remove(historyBytes)
        historyBytes = 0
    }

    public var memberCount: Int { positions.count }
    /// Pushes kept for recovery.
    public var historyCount: Int { history.count - historyStart }

    /// Hands a localized push to every member, each the version its language picks.
    private func deliver(_ original: OutboundMessage, translated: [String: OutboundMessage],
                         languageOf: (ConnectionID) -> String?, sink: any PushSink) {
        let languages = Array(translated.keys)
        // Each loop's members split by the version they read: one hand-over per version and loop.
        var picked: [String: String?] = [:] // a reader's language → the tag it reads (nil: the original)
        for group in members where !group.isEmpty {
            var byTag: [String: [ConnectionID]] = [:]
            var rest: [ConnectionID] = []
            for member in group {
                let tag = languageOf(member).flatMap { language in
                    if let known = picked[language] { return known }
                    let match = LanguageTag.match(language, in: languages)
                    picked[language] = match
                    return match
                }
                if let tag { byTag[tag, default: []].append(member) } else { rest.append(member) }
            }
            if byTag.isEmpty { sink.deliver(original, to: group); continue }
            if !rest.isEmpty { sink.deliver(original, to: rest) }
            for (tag, readers) in byTag { sink.deliver(translated[tag]!, to: readers) }
        }
    }

    private mutating func record(_ seq: UInt64, _ message: OutboundMessage, _ now: Double, translated: [String: OutboundMessage] = [:]) {
        guard limits.count > 0 else { return }
        // The payload and its frame are both kept; a compressed frame, when made, is smaller.
        func size(_ m: OutboundMessage) -> Int { m.payload.count + m.frame.count + 64 }
        let bytes = translated.isEmpty ? size(message) : translated.values.reduce(size(message)) { $0 + size($1) }
        history.append(Entry(seq: seq, message: message, translated: translated, at: now, bytes: bytes))
        historyBytes += bytes
        account?.add(bytes)
        trimHistory(now: now)
    }

    /// Drops pushes beyond the history's limits (count, age, bytes, and the room's share of the
    /// shared budget).
    public mutating func trimHistory(now: Double) {
        let maxBytes = min(limits.maxBytes, account?.budget.share ?? .max)
        while historyStart < history.count,
              history.count - historyStart > limits.count || now - history[historyStart].at > limits.maxAgeSeconds
                || historyBytes > maxBytes {
            historyBytes -= history[historyStart].bytes
            account?.remove(history[historyStart].bytes)
            history[historyStart].message = Room.empty
            history[historyStart].translated = [:]
            historyStart += 1
        }
        if historyStart == history.count {
            history = []
            historyStart = 0
        } else if historyStart > 64 && historyStart * 2 > history.count {
            history.removeFirst(historyStart)
            historyStart = 0
        }
    }

    private static let empty = OutboundMessage(kind: .text, payload: [])

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

    /// Adds a member; with `since`, says whether the pushes it missed can be replayed (each in the
    /// version a reader of `language` gets). The caller sends its reply and then the recovered
    /// pushes to this member before anything else is published (it owns the room, so nothing can
    /// come in between).
    public mutating func join(_ member: ConnectionID, since: Since?, now: Double, language: String? = nil) -> Resume {
        if positions[member] == nil {
            let loop = Int(member.loop)
            if loop >= members.count { members.append(contentsOf: repeatElement([], count: loop + 1 - members.count)) }
            positions[member] = members[loop].count
            members[loop].append(member)
        }
        guard let since else { return .snapshotNeeded }
        trimHistory(now: now)
        guard since.epoch == epoch, since.seq <= seq else { return .snapshotNeeded }
        if since.seq == seq { return .recovered([]) }
        // The history must still hold seq+1 … current.
        guard historyStart < history.count, history[historyStart].seq <= since.seq + 1 else { return .snapshotNeeded }
        return .recovered(history[historyStart...].filter { $0.seq > since.seq }.map { $0.message(for: language) })
    }

    /// Whether every push after `seq` (of this epoch) is still in the history: a member whose view
    /// stands there can join without a gap.
    public func covers(after seq: UInt64) -> Bool {
        guard seq < self.seq else { return seq == self.seq }
        return historyStart < history.count && history[historyStart].seq <= seq + 1
    }

    /// Removes a member (no-op if absent).
    public mutating func leave(_ member: ConnectionID) {
        guard let at = positions.removeValue(forKey: member) else { return }
        let loop = Int(member.loop)
        let last = members[loop].removeLast()
        if at < members[loop].count {
            members[loop][at] = last
            positions[last] = at
        }
        if positions.isEmpty { positions = [:] } // give the table back when the room empties
    }
}

/// Answers one request, from whichever thread finishes it (an actor, or the store's writer thread
/// once a change is durable): exactly one of `success` or `failure`, once.
public struct Replier: Sendable {
    public let member: ConnectionID
    public let requestID: Int
    public let sink: any PushSink

    public init(member: ConnectionID, requestID: Int, sink: any PushSink) {
        self.member = member
        self.requestID = requestID
        self.sink = sink
    }

    public func success(_ result: JSON) {
        sink.deliver(OutboundMessage(text: Envelope.success(id: requestID, result: result)), to: member)
    }

    public func failure(_ error: ProtocolError) {
        sink.deliver(OutboundMessage(text: Envelope.failure(id: requestID, error: error)), to: member)
    }
}
