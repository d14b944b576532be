/// One piece of intel: where, what, from whom, until when. A pure value; a refused change (a
/// second like, a like of one's own item) leaves it untouched.
public struct IntelItem: Sendable, Equatable {
    /// Who posted it.
    public enum Author: Sendable, Equatable {
        /// A traveller (by user id; the alias is looked up when shown).
        case user(String)
        /// A provider (a transit operator, a city service), by its `source` name.
        case provider(source: String)
    }

    /// Why a change is refused.
    public enum Refusal: Error, Equatable, Sendable {
        /// Liked by this user already.
        case alreadyLiked
        /// One's own item.
        case ownItem
        /// Linked to that item already, or to itself.
        case alreadyLinked
        case selfLink
    }

    public let id: String
    /// Where it is: one place, or several (a transit alert on a route is at each of its stops);
    /// never empty. It reaches every corridor that contains any of them.
    public private(set) var points: [GeoPoint]
    /// The first of `points` (what `lat` and `lon` show).
    public var point: GeoPoint { points[0] }
    public let kind: IntelKind
    public let author: Author
    public var tags: [String]
    public var modes: [TravelMode]
    public var body: String
    /// The body in other languages, by BCP 47 tag (a transit alert's translations); shown to a
    /// reader who set a language that one of them matches.
    public var translations: [String: String] = [:]
    /// The provider's own name for it (`<feed>/<alert id>` for a transit alert), by which a
    /// later message updates or removes it; nil for travellers' items.
    public var reference: String?
    /// When it happened (the poster's `at`, or the time of posting).
    public var at: Double
    /// When it leaves lists and corridors: `ttl` after it was posted or last liked.
    public private(set) var expiresAt: Double
    /// Who liked it (empty on a copy that knows only how many did: `restore(likes:links:expiresAt:)`).
    public private(set) var likedBy: Set<String> = []
    /// How many liked it.
    public private(set) var likes = 0
    public var comments = 0
    /// Items linked to this one, oldest link first.
    public private(set) var links: [String] = []

    public init(id: String, point: GeoPoint, kind: IntelKind, author: Author, tags: [String], modes: [TravelMode], body: String,
                at: Double, expiresAt: Double) {
        self.init(id: id, points: [point], kind: kind, author: author, tags: tags, modes: modes, body: body, at: at, expiresAt: expiresAt)
    }

    /// An item at several places (`points` must not be empty).
    public init(id: String, points: [GeoPoint], kind: IntelKind, author: Author, tags: [String], modes: [TravelMode], body: String,
                at: Double, expiresAt: Double) {
        precondition(!points.isEmpty, "an item is somewhere")
        self.id = id
        self.points = points
        self.kind = kind
        self.author = author
        self.tags = tags
        self.modes = modes
        self.body = body
        self.at = at
        self.expiresAt = expiresAt
    }

    public var origin: IntelOrigin {
        if case .provider = author { return .provider }
        return .traveler
    }

    /// A like by `user` at `now`: counted once, never one's own; it keeps the item `ttl` longer
    /// (unless its provider names it: then the provider decides when it ends).
    public mutating func like(by user: String, now: Double, ttl: Double) throws(Refusal) {
        if case .user(let poster) = author, poster == user { throw .ownItem }
        guard !likedBy.contains(user) else { throw .alreadyLiked }
        likedBy.insert(user)
        likes = likedBy.count
        // A provider's named item lives as long as its provider says (a transit alert's period).
        if reference == nil { expiresAt = max(expiresAt, now + ttl) }
    }

    /// Links this item to `other` (each side records the other).
    public mutating func link(to other: String) throws(Refusal) {
        guard other != id else { throw .selfLink }
        guard !links.contains(other) else { throw .alreadyLinked }
        links.append(other)
    }

    /// A provider's new version of the item: its places, text, tags, modes and expiry (likes,
    /// comments and links stay). Whether anything a reader sees changed.
    public mutating func revise(points: [GeoPoint], body: String, translations: [String: String], tags: [String], modes: [TravelMode],
                                expiresAt: Double) -> Bool {
        precondition(!points.isEmpty, "an item is somewhere")
        let changed = points != self.points || body != self.body || translations != self.translations || tags != self.tags
            || modes != self.modes || expiresAt != self.expiresAt
        self.points = points
        self.body = body
        self.translations = translations
        self.tags = tags
        self.modes = modes
        self.expiresAt = expiresAt
        return changed
    }

    /// Restores likes and links read from the store.
    public mutating func restore(likedBy: Set<String>, links: [String], expiresAt: Double) {
        self.likedBy = likedBy
        likes = likedBy.count
        self.links = links
        self.expiresAt = expiresAt
    }

    /// Restores what a copy shows (a node's copy of another's item, read from its shard's log):
    /// how many liked it, not who, so it is never liked itself.
    public mutating func restore(likes: Int, links: [String], expiresAt: Double) {
        likedBy = []
        self.likes = likes
        self.links = links
        self.expiresAt = expiresAt
    }
}

/// What a traveller wants to see (protocol.md `filter`): each given set must hold the item's
/// value (for modes and tags: share one with it); an empty or absent set lets everything through.
public struct IntelFilter: Sendable, Equatable {
    /// Whether it lets every item through.
    public var isEmpty: Bool { kinds.isEmpty && origins.isEmpty && modes.isEmpty && tags.isEmpty }
    public var kinds: Set<IntelKind> = []
    public var origins: Set<IntelOrigin> = []
    public var modes: Set<TravelMode> = []
    public var tags: Set<String> = []

    public init(kinds: Set<IntelKind> = [], origins: Set<IntelOrigin> = [], modes: Set<TravelMode> = [], tags: Set<String> = []) {
        self.kinds = kinds
        self.origins = origins
        self.modes = modes
        self.tags = tags
    }

    public func matches(_ item: IntelItem) -> Bool {
        (kinds.isEmpty || kinds.contains(item.kind))
            && (origins.isEmpty || origins.contains(item.origin))
            // An item that names no mode concerns every mode.
            && (modes.isEmpty || item.modes.isEmpty || item.modes.contains { modes.contains($0) })
            && (tags.isEmpty || item.tags.contains { tags.contains($0) })
    }
}

/// When items expire, in order: a min-heap of (time, item). A like that postpones an item adds a
/// new entry; the old one is recognised as stale when it comes up (its time no longer matches the
/// item's). Each expiry costs O(log n); nothing scans all items.
public struct ExpiryQueue: Sendable {
    private var heap: [(at: Double, id: String)] = []

    public init() {}

    public var count: Int { heap.count }

    /// When the earliest entry falls due.
    public var next: Double? { heap.first?.at }

    public mutating func schedule(_ id: String, at time: Double) {
        heap.append((time, id))
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard heap[i].at < heap[parent].at else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    /// The entries due at `now`, left in place (in no particular order).
    public func peek(now: Double) -> [(at: Double, id: String)] {
        var out: [(at: Double, id: String)] = [], stack = heap.isEmpty ? [] : [0]
        // A child is never due before its parent: a subtree whose root is not due is skipped.
        while let i = stack.popLast() {
            guard heap[i].at <= now else { continue }
            out.append(heap[i])
            for child in [2 * i + 1, 2 * i + 2] where child < heap.count { stack.append(child) }
        }
        return out
    }

    /// Removes and returns the entries due at `now` (in time order); the caller checks each against
    /// its item's current `expiresAt` (a postponed item's old entry is simply dropped).
    public mutating func due(now: Double) -> [(at: Double, id: String)] {
        var out: [(at: Double, id: String)] = []
        while let first = heap.first, first.at <= now {
            out.append(first)
            let last = heap.removeLast()
            guard !heap.isEmpty else { break }
            heap[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var m = i
                if l < heap.count && heap[l].at < heap[m].at { m = l }
                if r < heap.count && heap[r].at < heap[m].at { m = r }
                if m == i { break }
                heap.swapAt(i, m)
                i = m
            }
        }
        return out
    }
}
