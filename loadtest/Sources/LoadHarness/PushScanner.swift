import Realtime
import Routes
import Venues

/// FNV-1a over bytes: how the harness names rooms, users and tracks without building Strings on
/// the hot path (a push can list hundreds of tracks and arrive 100,000 times a second).
@inline(__always) public func nameHash<C: Collection<UInt8>>(_ bytes: C) -> UInt64 {
    var h: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
    return h
}

@inline(__always) public func nameHash(_ s: String) -> UInt64 { nameHash(s.utf8) }

/// The room events the harness tells apart.
public enum PushEvent: Sendable, Equatable {
    case trackMoved, playlistReordered, playlistSnapshot, trackRequested, votesCleared, nowPlayingChanged
    case venueUpdated, presenceChanged, venueRemoved, playlistRemoved
    case intelAdded, intelUpdated, intelExpired, intelLinked
    case other

    init(_ name: String) {
        if let push = VenuePush(rawValue: name) {
            switch push {
            case .trackMoved: self = .trackMoved
            case .reordered: self = .playlistReordered
            case .snapshot: self = .playlistSnapshot
            case .trackRequested: self = .trackRequested
            case .votesCleared: self = .votesCleared
            case .nowPlayingChanged: self = .nowPlayingChanged
            case .venueUpdated: self = .venueUpdated
            case .presenceChanged: self = .presenceChanged
            case .venueRemoved: self = .venueRemoved
            case .playlistRemoved: self = .playlistRemoved
            }
        } else if let push = RoutePush(rawValue: name) {
            switch push {
            case .added: self = .intelAdded
            case .updated: self = .intelUpdated
            case .expired: self = .intelExpired
            case .linked: self = .intelLinked
            }
        } else {
            self = .other
        }
    }
}

/// A guest action named by a push's `cause`: a `track.moved` push's `{action, by}` with the track it
/// moved, or a `playlist.reordered` push's `{action, by, track}` (fair mode's request).
public struct PushCause: Sendable, Equatable, Hashable {
    public enum Action: Sendable, Equatable, Hashable { case vote, unvote, request }
    public var action: Action
    public var by: UInt64
    public var track: UInt64
    public init(action: Action, by: UInt64, track: UInt64) {
        self.action = action
        self.by = by
        self.track = track
    }
}

/// One queued track as a push lists it: its uri's hash and its votes.
public struct QueuedTrack: Sendable, Equatable {
    public var track: UInt64
    public var votes: Int
    public init(track: UInt64, votes: Int) {
        self.track = track
        self.votes = votes
    }
}

/// The item of an `intel.added` or `intel.updated` push: what a traveller checks and acts on.
public struct ScannedIntel: Sendable, Equatable {
    /// The item's id (kept as text: a traveller likes and comments on it by id).
    public var id: String = ""
    public var lat = Double.nan
    public var lon = Double.nan
    /// `nameHash` of its body (the harness's bodies are unique: it names the post).
    public var body: UInt64 = 0
    /// `nameHash` of `by.user` (0: a provider's item, or a deleted user's).
    public var by: UInt64 = 0
    public init() {}
}

/// The fields of a push the validator needs, read in one pass without building a JSON tree.
public struct ScannedPush: Sendable, Equatable {
    public var room: UInt64 = 0
    public var seq: Int = -1
    public var epoch: String = ""
    public var event: PushEvent = .other
    /// `playlist.reordered`: the queue in order (from `votes`, which lists it in `order`'s order).
    public var queue: [QueuedTrack] = []
    /// `playlist.reordered`: whether `order` named the same tracks in the same order as `votes`.
    public var orderMatchesVotes = true
    /// `track.moved`: the track with its new vote count.
    public var moved: QueuedTrack?
    /// `track.moved`: the track's new 0-based place in the queue (the pinned track's is 0).
    public var index = 0
    /// `track.requested`: the track that entered the queue (at its end, with no votes until the
    /// `track.moved` that follows gives it its requester's).
    public var requested: UInt64?
    /// The guest action that caused a `track.moved` or `playlist.reordered` (nil: none named).
    public var cause: PushCause?
    /// `nowplaying.changed`: the pinned track (nil: none).
    public var nowPlaying: UInt64?
    /// `intel.added`, `intel.updated`: the item.
    public var intel: ScannedIntel?
    /// Where `data` lies in the message (to parse rare events in full).
    public var data: Range<Int> = 0..<0
    public init() {}
}

/// Reads pushes (`{"room":...,"seq":...,"epoch":...,"event":...,"data":...}`) in one pass.
/// Anything else (a reply, malformed JSON) gives nil.
public enum PushScanner {
    public static func scan(_ bytes: [UInt8]) -> ScannedPush? {
        bytes.withUnsafeBufferPointer { buffer in
            var c = JSONCursor(buffer)
            return try? scanPush(&c)
        }
    }

    private static func scanPush(_ c: inout JSONCursor) throws(JSONCursor.Failure) -> ScannedPush? {
        var push = ScannedPush()
        var sawRoom = false
        var eventName = ""
        var data: Range<Int>?
        try c.object { c, key throws(JSONCursor.Failure) in
            switch key {
            case "room": push.room = try c.stringHash(); sawRoom = true
            case "seq": push.seq = try c.int()
            case "epoch": push.epoch = try c.string()
            case "event": eventName = try c.string()
            case "data":
                let start = c.index
                try c.skipValue()
                data = start..<c.index
            default: try c.skipValue()
            }
        }
        guard sawRoom, push.seq >= 0, let data else { return nil }
        push.event = PushEvent(eventName)
        push.data = data
        var d = c
        d.index = data.lowerBound
        switch push.event {
        case .trackMoved: try scanMoved(&d, into: &push)
        case .playlistReordered: try scanReordered(&d, into: &push)
        case .trackRequested:
            try d.object { c, key throws(JSONCursor.Failure) in
                if key != "track" { try c.skipValue(); return }
                try c.object { c, key throws(JSONCursor.Failure) in
                    if key != "uri" { try c.skipValue() } else { push.requested = try c.stringHash() }
                }
            }
            if push.requested == nil { throw JSONCursor.Failure() }
        case .nowPlayingChanged:
            try d.object { c, key throws(JSONCursor.Failure) in
                if key != "track" { try c.skipValue() } else if !c.skipNull() { push.nowPlaying = try c.stringHash() }
            }
        case .intelAdded, .intelUpdated:
            try d.object { c, key throws(JSONCursor.Failure) in
                if key != "item" { try c.skipValue() } else { push.intel = try scanIntel(&c) }
            }
            if push.intel == nil { throw JSONCursor.Failure() }
        default: break
        }
        return push
    }

    /// An IntelItem: id, place, body and poster; an item without an id or a place is unreadable.
    private static func scanIntel(_ c: inout JSONCursor) throws(JSONCursor.Failure) -> ScannedIntel {
        var item = ScannedIntel()
        try c.object { c, key throws(JSONCursor.Failure) in
            switch key {
            case "id": item.id = try c.string()
            case "lat": item.lat = try c.double()
            case "lon": item.lon = try c.double()
            case "body": item.body = try c.stringHash()
            case "by":
                try c.object { c, key throws(JSONCursor.Failure) in
                    if key == "user" { item.by = try c.stringHash() } else { try c.skipValue() }
                }
            default: try c.skipValue()
            }
        }
        guard !item.id.isEmpty, item.lat.isFinite, item.lon.isFinite else { throw JSONCursor.Failure() }
        return item
    }

    private static func scanReordered(_ c: inout JSONCursor, into push: inout ScannedPush) throws(JSONCursor.Failure) {
        var order: [UInt64] = []
        try c.object { c, key throws(JSONCursor.Failure) in
            switch key {
            case "order":
                try c.array { c throws(JSONCursor.Failure) in order.append(try c.stringHash()) }
            case "votes":
                try c.objectHashingKeys { c, track throws(JSONCursor.Failure) in push.queue.append(QueuedTrack(track: track, votes: try c.int())) }
            case "cause":
                let (action, by, track) = try scanCause(&c)
                if let action { push.cause = PushCause(action: action, by: by, track: track ?? 0) }
            default: try c.skipValue()
            }
        }
        push.orderMatchesVotes = order.count == push.queue.count && zip(order, push.queue).allSatisfy { $0 == $1.track }
    }

    /// `{"track": uri, "votes": n, "index": i, "cause": {"action", "by"}}`, members in any order;
    /// the cause names the moved track. A move without its track, votes or index is unreadable.
    private static func scanMoved(_ c: inout JSONCursor, into push: inout ScannedPush) throws(JSONCursor.Failure) {
        var track: UInt64?, votes: Int?, index: Int?
        var action: PushCause.Action?, by: UInt64 = 0
        try c.object { c, key throws(JSONCursor.Failure) in
            switch key {
            case "track": track = try c.stringHash()
            case "votes": votes = try c.int()
            case "index": index = try c.int()
            case "cause":
                let cause = try scanCause(&c)
                action = cause.action
                by = cause.by
            default: try c.skipValue()
            }
        }
        guard let track, let votes, let index else { throw JSONCursor.Failure() }
        push.moved = QueuedTrack(track: track, votes: votes)
        push.index = index
        if let action { push.cause = PushCause(action: action, by: by, track: track) }
    }

    /// A `cause` object: its action (nil: not a guest action the harness knows), who, and the
    /// track when it names one.
    private static func scanCause(_ c: inout JSONCursor) throws(JSONCursor.Failure) -> (action: PushCause.Action?, by: UInt64, track: UInt64?) {
        var action: PushCause.Action?
        var by: UInt64 = 0
        var track: UInt64?
        try c.object { c, key throws(JSONCursor.Failure) in
            switch key {
            case "action":
                switch try c.string() {
                case "vote": action = .vote
                case "unvote": action = .unvote
                case "request": action = .request
                default: action = nil
                }
            case "by": by = try c.stringHash()
            case "track": track = try c.stringHash()
            default: try c.skipValue()
            }
        }
        return (action, by, track)
    }
}

/// A forward-only reader of JSON text: just enough to pick fields out of server messages fast.
/// Strings are hashed (after unescaping, so `"a\u0062"` names the same track as `"ab"`).
struct JSONCursor {
    struct Failure: Error {}
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    @inline(__always) mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    @inline(__always) mutating func expect(_ b: UInt8) throws(Failure) {
        skipSpace()
        guard index < bytes.count, bytes[index] == b else { throw Failure() }
        index += 1
    }

    @inline(__always) mutating func peek() -> UInt8? {
        skipSpace()
        return index < bytes.count ? bytes[index] : nil
    }

    /// Visits each member of an object with its key.
    mutating func object(_ body: (inout JSONCursor, String) throws(Failure) -> Void) throws(Failure) {
        try members(key: { c throws(Failure) in try c.string() }, body)
    }

    /// Visits each member of an object with its key's hash (no String built).
    mutating func objectHashingKeys(_ body: (inout JSONCursor, UInt64) throws(Failure) -> Void) throws(Failure) {
        try members(key: { c throws(Failure) in try c.stringHash() }, body)
    }

    private mutating func members<Key>(key readKey: (inout JSONCursor) throws(Failure) -> Key,
                                       _ body: (inout JSONCursor, Key) throws(Failure) -> Void) throws(Failure) {
        try expect(UInt8(ascii: "{"))
        if peek() == UInt8(ascii: "}") { index += 1; return }
        while true {
            let key = try readKey(&self)
            try expect(UInt8(ascii: ":"))
            try body(&self, key)
            skipSpace()
            guard index < bytes.count else { throw Failure() }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return }
            throw Failure()
        }
    }

    mutating func array(_ body: (inout JSONCursor) throws(Failure) -> Void) throws(Failure) {
        try expect(UInt8(ascii: "["))
        if peek() == UInt8(ascii: "]") { index += 1; return }
        while true {
            try body(&self)
            skipSpace()
            guard index < bytes.count else { throw Failure() }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return }
            throw Failure()
        }
    }

    /// The raw bytes of a string and whether it has escapes (the cursor moves past it).
    private mutating func rawString() throws(Failure) -> (Range<Int>, Bool) {
        try expect(UInt8(ascii: "\""))
        let start = index
        var escaped = false
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                return (start..<(index - 1), escaped)
            }
            if b == UInt8(ascii: "\\") { escaped = true; index += 1 }
            index += 1
        }
        throw Failure()
    }

    mutating func string() throws(Failure) -> String {
        let start = index
        let (range, escaped) = try rawString()
        if !escaped { return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
        // Rare: let the strict parser unescape it.
        guard case .string(let s)? = try? JSONParser.parse(Array(bytes[start..<index])) else { throw Failure() }
        return s
    }

    mutating func stringHash() throws(Failure) -> UInt64 {
        let save = index
        let (range, escaped) = try rawString()
        if !escaped { return nameHash(UnsafeBufferPointer(rebasing: bytes[range])) }
        index = save
        return nameHash(try string())
    }

    mutating func int() throws(Failure) -> Int {
        skipSpace()
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { negative = true; index += 1 }
        let start = index
        var v = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(bytes[index] - 0x30))
            guard !o1, !o2 else { throw Failure() }
            v = s
            index += 1
        }
        guard index > start else { throw Failure() }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            throw Failure() // not a whole number
        }
        return negative ? -v : v
    }

    /// A JSON number (integer or decimal).
    mutating func double() throws(Failure) -> Double {
        skipSpace()
        let start = index
        while index < bytes.count {
            let b = bytes[index]
            guard (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "-") || b == UInt8(ascii: "+") || b == UInt8(ascii: ".")
                || b == UInt8(ascii: "e") || b == UInt8(ascii: "E") else { break }
            index += 1
        }
        guard index > start, let v = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)) else {
            throw Failure()
        }
        return v
    }

    /// Consumes `null` if it is next.
    mutating func skipNull() -> Bool {
        guard peek() == UInt8(ascii: "n"), index + 4 <= bytes.count else { return false }
        index += 4
        return true
    }

    mutating func skipValue() throws(Failure) {
        guard let b = peek() else { throw Failure() }
        switch b {
        case UInt8(ascii: "\""): _ = try rawString()
        case UInt8(ascii: "{"): try object { c, _ throws(Failure) in try c.skipValue() }
        case UInt8(ascii: "["): try array { c throws(Failure) in try c.skipValue() }
        default:
            // number, true, false, null
            let start = index
            while index < bytes.count {
                let x = bytes[index]
                if x == UInt8(ascii: ",") || x == UInt8(ascii: "}") || x == UInt8(ascii: "]") || x == 0x20 || x == 0x0A || x == 0x0D || x == 0x09 { break }
                index += 1
            }
            guard index > start else { throw Failure() }
        }
    }
}
