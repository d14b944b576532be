/// One venue's social jukebox: the playlist an owner set, the queue guests vote on and request
/// into, what is playing, and the venue's rules (`VenueSettings`). A pure value: no clock, no I/O.
/// Time comes in as `now`, seconds since 1970; the caller (the venue's actor) owns one `Jukebox`,
/// applies each op to it, stores what changed and pushes what the returned `JukeboxChange` says.
///
/// Every mutating method either succeeds and returns a change, or throws a `JukeboxError` and
/// leaves the jukebox exactly as it was (a refused vote or request is not counted against the
/// rate limits: they are checked last, after every other rule). Ownership is not checked here: the caller lets only a
/// venue's owners call `setPlaylist`, `reset`, `clearVotes`, `removePlaylist`, `setExplicitAllowed`,
/// `setSettings`, `nowPlaying` and `trackEnded`.
///
/// Order of the queue (`order`, `entries`):
/// 1. the now-playing track, if any, pinned first whatever its votes;
/// 2. then by votes, most first;
/// 3. ties by time of entry into the queue, earlier first. The time of entry is a counter that
///    grows by one with each track entering the queue (and each vote), never wall time, so ties
///    are deterministic and survive a restart (`JukeboxRecord`).
/// 4. In fair mode only, ties in votes are broken differently: tracks from the owner's playlist
///    first (by time of entry; they always entered before any request, so this is their place
///    anyway), then requested tracks by their requester's number of pending requests, fewest
///    first, then by time of entry. "Pending" = requested tracks of that user still in the queue,
///    not counting the now-playing track. So with equal votes, a request from a guest with 1 track
///    waiting comes before one from a guest with 2 waiting, even if the latter was requested earlier.
///
/// A vote, an unvote or a request (outside fair mode) moves one track (binary search, O(log n)
/// lookups plus one array move); other changes re-sort the queue.
public struct Jukebox: Sendable, Equatable {
    /// The sliding window of the per-user rate limits: one hour, in milliseconds.
    public static let rateWindowMs: Int64 = 3_600_000

    public let limits: JukeboxLimits
    public internal(set) var settings: VenueSettings
    /// The playlist an owner set (nil: none, or removed).
    public internal(set) var playlist: PlaylistInfo?
    /// The playlist's tracks as set, duplicates collapsed (what `reset` goes back to).
    public internal(set) var originalTracks: [Track] = []
    /// The track pinned on top, if any.
    public internal(set) var nowPlayingUri: String?
    /// The queue's uris in order (see the type's documentation).
    public internal(set) var order: [String] = []

    var queue: [String: Slot] = [:]
    /// Next value of the entry/vote counter.
    var nextSeq: Int64 = 1
    /// uri → when it last finished playing.
    var plays: [String: Double] = [:]
    /// Per user, times of their counted votes / requests in the last hour, oldest first.
    var voteTimes: [String: [Double]] = [:]
    var requestTimes: [String: [Double]] = [:]
    /// Actions counted since the last sweep of idle users out of the rate windows.
    var actionsSinceSweep = 0
    /// In fair mode, pending requests per requester as of the last full `reorder()` (votes do not
    /// change them, so a vote's reposition can use them).
    var fairPending: [String: Int] = [:]

    /// One queued track.
    struct Slot: Sendable, Equatable {
        var track: Track
        var seq: Int64
        var votes: [Vote] = []
        var voterSet: Set<String> = []
        var requester: String?
        var requestedAt: Double?
    }

    struct Vote: Sendable, Equatable {
        var user: String
        var at: Double
        var seq: Int64
    }

    /// A venue with no playlist yet; settings out of range are clamped (`VenueSettings.clamped()`).
    public init(settings: VenueSettings = VenueSettings(), limits: JukeboxLimits = JukeboxLimits()) {
        self.settings = settings.clamped()
        self.limits = limits
    }

    /// Same state: equal `records` (playlist, original tracks, queue with entry counters and
    /// requesters, votes in order, recent plays, rate windows, settings). `limits` are not compared.
    public static func == (a: Jukebox, b: Jukebox) -> Bool { a.records == b.records }

    // MARK: Owner operations (ownership checked by the caller)

    /// UC20: sets the venue's playlist. Its tracks enter the queue in list order with no votes;
    /// a uri listed twice enters once (the first wins). A different playlist replaces the current
    /// one (queue, votes, requests and now playing are dropped).
    /// - Throws: `badRequest` (field `playlistUri`, `creator`, `tracks`, `tracks[i].uri`...),
    ///   `conflict("this playlist is already set")` when `uri` is the current playlist's.
    public mutating func setPlaylist(uri: String, creator: String, tracks: [Track], now: Double) throws(JukeboxError) -> JukeboxChange {
        try Validate.text(uri, field: "playlistUri", max: limits.maxTextBytes)
        try Validate.text(creator, field: "creator", max: limits.maxTextBytes)
        if playlist?.uri == uri { throw .conflict("this playlist is already set") }
        guard tracks.count <= limits.maxPlaylistTracks else {
            throw .badRequest(field: "tracks", message: "a playlist has at most \(limits.maxPlaylistTracks) tracks")
        }
        var seen = Set<String>()
        var originals: [Track] = []
        originals.reserveCapacity(tracks.count)
        for (i, t) in tracks.enumerated() {
            try t.validate(field: "tracks[\(i)]", limits: limits)
            if seen.insert(t.uri).inserted { originals.append(t) }
        }
        playlist = PlaylistInfo(uri: uri, creator: creator, setAt: now)
        originalTracks = originals
        loadOriginalTracks()
        return .playlistSet
    }

    /// UC21: back to the playlist's original tracks, in list order; all votes and requests cleared,
    /// nothing playing. - Throws: `notFound("no playlist is set")`.
    public mutating func reset() throws(JukeboxError) -> JukeboxChange {
        try requirePlaylist()
        loadOriginalTracks()
        return .reset
    }

    /// UC22: every vote cleared; the queue is kept (requested tracks stay, with their requester,
    /// and no votes). - Throws: `notFound("no playlist is set")`.
    public mutating func clearVotes() throws(JukeboxError) -> JukeboxChange {
        try requirePlaylist()
        for uri in queue.keys {
            queue[uri]!.votes = []
            queue[uri]!.voterSet = []
        }
        reorder()
        return .votesCleared
    }

    /// UC23: the playlist and its queue are gone. - Throws: `notFound("no playlist is set")`.
    public mutating func removePlaylist() throws(JukeboxError) -> JukeboxChange {
        try requirePlaylist()
        playlist = nil
        originalTracks = []
        queue = [:]
        order = []
        nowPlayingUri = nil
        return .removed
    }

    /// UC24: whether guests may request explicit tracks. Tracks already queued stay.
    public mutating func setExplicitAllowed(_ allowed: Bool) -> JukeboxChange {
        settings.explicitAllowed = allowed
        return .settingsChanged(settings, reordered: false)
    }

    /// Replaces the venue's settings. Rate windows already counted stay counted.
    /// - Throws: `badRequest` naming a field out of range.
    public mutating func setSettings(_ new: VenueSettings) throws(JukeboxError) -> JukeboxChange {
        try new.validate()
        let before = order
        settings = new
        // Keep each window within the (possibly lower) limit, as restoring would.
        let votesLimit = limit(.vote), requestsLimit = limit(.request)
        voteTimes = voteTimes.mapValues { Array($0.suffix(votesLimit)) }
        requestTimes = requestTimes.mapValues { Array($0.suffix(requestsLimit)) }
        reorder()
        return .settingsChanged(settings, reordered: order != before)
    }

    /// The owner's player started `uri` (nil: nothing playing): it is pinned on top.
    /// - Throws: `notFound` when no playlist is set or `uri` is not in the queue.
    public mutating func nowPlaying(uri: String?) throws(JukeboxError) -> JukeboxChange {
        try requirePlaylist()
        if let uri, queue[uri] == nil { throw .notFound("track \(uri) is not in the playlist") }
        nowPlayingUri = uri
        reorder()
        return .nowPlaying(uri)
    }

    /// The owner's player finished `uri`: it leaves the queue with its votes, and is remembered
    /// for the no-repeat window; if it was pinned, nothing is pinned afterwards.
    /// - Throws: `notFound` when no playlist is set or `uri` is not in the queue.
    public mutating func trackEnded(uri: String, now: Double) throws(JukeboxError) -> JukeboxChange {
        try requirePlaylist()
        guard queue.removeValue(forKey: uri) != nil else { throw .notFound("track \(uri) is not in the playlist") }
        plays[uri] = now
        prunePlays(now: now)
        let cleared = nowPlayingUri == uri
        if cleared { nowPlayingUri = nil }
        reorder()
        return .ended(uri, clearedNowPlaying: cleared)
    }

    // MARK: Guest operations

    /// UC8: `user` votes for the queued track `uri`. Voting for the now-playing track is allowed;
    /// it stays pinned. Counts against `votesPerUserPerHour`. Returns the vote as the store keeps
    /// it and where the track now stands (its push: `CountedVote.change`).
    /// - Throws: `notFound` (no playlist, track not queued), `conflict` (already voted),
    ///   `rateLimited`, `badRequest` (empty user).
    public mutating func vote(user: String, uri: String, now: Double) throws(JukeboxError) -> CountedVote {
        try requirePlaylist()
        try Validate.text(user, field: "user", max: limits.maxTextBytes)
        guard let voted = queue[uri]?.voterSet.contains(user) else { throw .notFound("track \(uri) is not in the playlist") }
        if voted { throw .conflict("you already voted for this track") }
        try checkRate(.vote, user: user, now: now)
        countAction(.vote, user: user, now: now)
        let before = rankKey(queue[uri]!)
        let vote = addVote(user: user, uri: uri, now: now)
        let index = reposition(uri, from: before)
        return CountedVote(vote: vote, track: queue[uri]!.track, index: index, nextSeq: nextSeq)
    }

    /// Takes back `user`'s vote for `uri` (not rate limited; the vote stays counted in the hour).
    /// - Throws: `notFound` (no playlist, track not queued, or `user` had not voted for it).
    public mutating func unvote(user: String, uri: String) throws(JukeboxError) -> JukeboxChange {
        try requirePlaylist()
        guard let voted = queue[uri]?.voterSet.contains(user) else { throw .notFound("track \(uri) is not in the playlist") }
        guard voted else { throw .notFound("you have not voted for this track") }
        let before = rankKey(queue[uri]!)
        queue[uri]!.voterSet.remove(user)
        queue[uri]!.votes.removeAll { $0.user == user }
        return .moved(uri: uri, index: reposition(uri, from: before))
    }

    /// UC9: `user` requests `track`; returns what the store keeps of it (a vote, or a new track).
    /// - Already queued: exactly a vote for it (`vote(user:uri:now:)`: same checks, counted as a
    ///   vote, requester unchanged, no explicit/no-repeat/fair-mode checks since it is already there).
    /// - Otherwise it enters the queue (a new entry, so it ranks after earlier tracks with equal
    ///   votes) carrying `user`'s vote, with `user` recorded as requester. Counts against
    ///   `requestsPerUserPerHour` only (its vote is part of the request, not a separate vote).
    ///   Checked in this order: explicit lyrics (`explicitNotAllowed`), the no-repeat window
    ///   (`conflict("played recently: ...")`), fair mode's cap (`conflict`, see below), queue
    ///   length (`conflict`), then the rate limit (`rateLimited`).
    /// Fair mode's cap is a `conflict`, not `rateLimited`: waiting a fixed time does not help, the
    /// user must wait until one of their tracks has been played (or removed).
    public mutating func request(user: String, track: Track, now: Double) throws(JukeboxError) -> RequestOutcome {
        try requirePlaylist()
        try Validate.text(user, field: "user", max: limits.maxTextBytes)
        try track.validate(field: "track", limits: limits)
        if queue[track.uri] != nil { return .voted(try vote(user: user, uri: track.uri, now: now)) }
        if track.explicit && !settings.explicitAllowed { throw .explicitNotAllowed }
        if settings.noRepeatHours > 0, let ended = plays[track.uri],
           ms(now) - ms(ended) < Int64(settings.noRepeatHours) * Self.rateWindowMs {
            let h = settings.noRepeatHours == 1 ? "1 hour" : "\(settings.noRepeatHours) hours"
            throw .conflict("played recently: this venue does not repeat a track within \(h) of playing it")
        }
        if settings.fairMode {
            let pending = pendingRequests(of: user)
            if pending >= settings.fairModeMaxPendingPerUser {
                throw .conflict("fair mode: you already have \(pending) requested track\(pending == 1 ? "" : "s") waiting; request again once one has played")
            }
        }
        guard queue.count < limits.maxQueueLength else { throw .conflict("the playlist is full") }
        try checkRate(.request, user: user, now: now)
        countAction(.request, user: user, now: now)
        let slot = Slot(track: track, seq: takeSeq(), requester: user, requestedAt: now)
        queue[track.uri] = slot
        let queued = QueueRecord(track: track, seq: slot.seq, requester: user, requestedAt: now)
        let vote = addVote(user: user, uri: track.uri, now: now)
        guard settings.fairMode else {
            // Nothing else moves: one insertion where the new track ranks.
            let at = lowerBound(rankKey(queue[track.uri]!), moved: nil, old: rankKey(queue[track.uri]!))
            order.insert(track.uri, at: at)
            return .requested(RequestedTrack(queued: queued, vote: vote, index: at, nextSeq: nextSeq))
        }
        // Fair mode: the requester's other waiting tracks rank by their pending count, which just grew.
        var expected = order
        reorder()
        let at = order.firstIndex(of: track.uri)!
        expected.insert(track.uri, at: at)
        return .requested(RequestedTrack(queued: queued, vote: vote, index: expected == order ? at : nil, nextSeq: nextSeq))
    }

    // MARK: Queries

    /// The next value of the entry/vote counter (stored beside single-row changes).
    public var nextCounter: Int64 { nextSeq }
    /// Whether a playlist is set.
    public var hasPlaylist: Bool { playlist != nil }
    public var explicitAllowed: Bool { settings.explicitAllowed }
    /// Votes per queued uri (0 included), as `playlist.reordered` sends them.
    public var votes: [String: Int] { queue.mapValues { $0.votes.count } }
    /// The queue in order, with votes, voters and requester.
    public var entries: [QueueEntry] { order.map { entry(queue[$0]!) } }
    /// One queued track, or nil.
    public func entry(_ uri: String) -> QueueEntry? { queue[uri].map(entry) }
    /// A queued track's votes (0 when not queued), without building the whole `votes` map.
    public func voteCount(of uri: String) -> Int { queue[uri]?.votes.count ?? 0 }
    /// A queued track, or nil.
    public func track(of uri: String) -> Track? { queue[uri]?.track }
    public func contains(_ uri: String) -> Bool { queue[uri] != nil }
    /// UC10: who voted for `uri`, in vote order (empty when not queued).
    public func voters(of uri: String) -> [String] { queue[uri]?.votes.map(\.user) ?? [] }
    /// UC12: who requested `uri` (nil: not queued, or it came with the playlist).
    public func requester(of uri: String) -> String? { queue[uri]?.requester }
    public func hasVoted(user: String, uri: String) -> Bool { queue[uri]?.voterSet.contains(user) ?? false }
    /// Requested tracks of `user` waiting in the queue (the now-playing track not counted).
    public func pendingRequests(of user: String) -> Int {
        queue.values.reduce(0) { $0 + ($1.requester == user && $1.track.uri != nowPlayingUri ? 1 : 0) }
    }
    /// When `uri` last finished playing, if remembered.
    public func lastPlayed(_ uri: String) -> Double? { plays[uri] }

    /// Everything a client needs to draw the venue's playlist (`playlist.snapshot`, subscribe).
    public var snapshot: JukeboxSnapshot {
        JukeboxSnapshot(playlist: playlist, nowPlaying: nowPlayingUri, settings: settings, tracks: entries)
    }

    // MARK: Internals

    private func entry(_ s: Slot) -> QueueEntry {
        QueueEntry(track: s.track, votes: s.votes.count, voters: s.votes.map(\.user), requester: s.requester,
                   nowPlaying: s.track.uri == nowPlayingUri)
    }

    private func requirePlaylist() throws(JukeboxError) {
        if playlist == nil { throw .notFound("no playlist is set") }
    }

    mutating func takeSeq() -> Int64 {
        defer { nextSeq += 1 }
        return nextSeq
    }

    @discardableResult
    private mutating func addVote(user: String, uri: String, now: Double) -> VoteRecord {
        let seq = takeSeq()
        queue[uri]!.votes.append(Vote(user: user, at: now, seq: seq))
        queue[uri]!.voterSet.insert(user)
        return VoteRecord(uri: uri, user: user, at: now, seq: seq)
    }

    private mutating func loadOriginalTracks() {
        queue = [:]
        queue.reserveCapacity(originalTracks.count)
        nowPlayingUri = nil
        for t in originalTracks { queue[t.uri] = Slot(track: t, seq: takeSeq()) }
        reorder()
    }

    /// Where a non-pinned track ranks: `a < b` when `a` comes first (rules in the type's documentation).
    struct RankKey: Comparable {
        var votes: Int
        /// Fair mode: 0 for playlist tracks, 1 for requested ones; always 0 otherwise.
        var requested: Int
        /// Fair mode: the requester's pending requests; always 0 otherwise.
        var pending: Int
        var seq: Int64

        static func < (a: RankKey, b: RankKey) -> Bool {
            if a.votes != b.votes { return a.votes > b.votes }
            if a.requested != b.requested { return a.requested < b.requested }
            if a.pending != b.pending { return a.pending < b.pending }
            return a.seq < b.seq
        }
    }

    func rankKey(_ s: Slot) -> RankKey {
        guard settings.fairMode, let r = s.requester else { return RankKey(votes: s.votes.count, requested: 0, pending: 0, seq: s.seq) }
        return RankKey(votes: s.votes.count, requested: 1, pending: fairPending[r] ?? 0, seq: s.seq)
    }

    /// Recomputes `order` from scratch (and fair mode's pending counts).
    mutating func reorder() {
        let pinned = nowPlayingUri
        fairPending = [:]
        if settings.fairMode {
            for s in queue.values where s.track.uri != pinned { if let r = s.requester { fairPending[r, default: 0] += 1 } }
        }
        var items: [(key: RankKey, uri: String)] = []
        items.reserveCapacity(queue.count)
        for s in queue.values where s.track.uri != pinned { items.append((rankKey(s), s.track.uri)) }
        items.sort { $0.key < $1.key }
        var o: [String] = []
        o.reserveCapacity(queue.count)
        if let pinned, queue[pinned] != nil { o.append(pinned) }
        for i in items { o.append(i.uri) }
        order = o
    }

    /// Moves `uri`, whose votes just changed, from where `old` ranked it to where it ranks now;
    /// returns its new index in `order` (the pinned track stays at 0).
    mutating func reposition(_ uri: String, from old: RankKey) -> Int {
        if uri == nowPlayingUri { return 0 }
        let at = lowerBound(old, moved: uri, old: old)
        guard at < order.count, order[at] == uri else {
            reorder()
            return order.firstIndex(of: uri) ?? 0
        }
        order.remove(at: at)
        let to = lowerBound(rankKey(queue[uri]!), moved: nil, old: old)
        order.insert(uri, at: to)
        return to
    }

    /// The first index of `order` (after the pinned track) whose track does not rank before `k`;
    /// `moved`, if still in `order`, is ranked by `old` (its key before the change).
    private func lowerBound(_ k: RankKey, moved: String?, old: RankKey) -> Int {
        var lo = nowPlayingUri == nil ? 0 : 1, hi = order.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let u = order[mid]
            let key = u == moved ? old : rankKey(queue[u]!)
            if key < k { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    // MARK: Rate limits and the no-repeat memory

    private func limit(_ kind: ActionKind) -> Int {
        max(1, kind == .vote ? settings.votesPerUserPerHour : settings.requestsPerUserPerHour)
    }

    /// Throws `rateLimited` when `user` already has `limit` actions of `kind` in the hour before
    /// `now`; `retryAfterMs` is exactly when the oldest of the last `limit` leaves the window.
    /// An action at time t counts while `now - t < 1 hour` (in whole milliseconds).
    private func checkRate(_ kind: ActionKind, user: String, now: Double) throws(JukeboxError) {
        let times = (kind == .vote ? voteTimes[user] : requestTimes[user]) ?? []
        let limit = limit(kind), nowMs = ms(now)
        let counted = times.drop { nowMs - ms($0) >= Self.rateWindowMs }
        if counted.count >= limit {
            let oldest = counted[counted.endIndex - limit]
            throw .rateLimited(retryAfterMs: Int(ms(oldest) + Self.rateWindowMs - nowMs))
        }
    }

    /// Counts an admitted action; keeps each user's list to the actions still in the window and at
    /// most `limit` of them, and every 1,024 actions drops users with nothing left in the window.
    private mutating func countAction(_ kind: ActionKind, user: String, now: Double) {
        let limit = limit(kind), nowMs = ms(now)
        func update(_ list: inout [Double]) {
            list.removeAll { nowMs - ms($0) >= Self.rateWindowMs }
            let at = list.lastIndex { $0 <= now }.map { $0 + 1 } ?? 0
            list.insert(now, at: at)
            if list.count > limit { list.removeFirst(list.count - limit) }
        }
        switch kind {
        case .vote: update(&voteTimes[user, default: []])
        case .request: update(&requestTimes[user, default: []])
        }
        actionsSinceSweep += 1
        if actionsSinceSweep >= 1_024 {
            actionsSinceSweep = 0
            let stale: ([Double]) -> Bool = { list in list.last.map { nowMs - ms($0) >= Self.rateWindowMs } ?? true }
            voteTimes = voteTimes.filter { !stale($0.value) }
            requestTimes = requestTimes.filter { !stale($0.value) }
        }
    }

    /// Forgets plays older than the no-repeat window (kept at least a day, so turning the window on
    /// later still knows the evening's plays), and beyond `maxRecentPlays` the oldest.
    private mutating func prunePlays(now: Double) {
        let keepMs = Int64(max(settings.noRepeatHours, 24)) * Self.rateWindowMs
        let nowMs = ms(now)
        plays = plays.filter { nowMs - ms($0.value) < keepMs }
        if plays.count > limits.maxRecentPlays {
            let dropped = plays.sorted { $0.value < $1.value }.prefix(plays.count - limits.maxRecentPlays)
            for (uri, _) in dropped { plays[uri] = nil }
        }
    }
}

/// What kind of action a rate window counts.
public enum ActionKind: String, Sendable, Codable, CaseIterable {
    case vote, request
}

/// Seconds since 1970 to whole milliseconds (rounded), so window edges are exact.
@inline(__always)
func ms(_ seconds: Double) -> Int64 {
    guard seconds.isFinite else { return 0 }
    let v = (seconds * 1000).rounded()
    if v >= 9.0e15 { return 9_000_000_000_000_000 }
    if v <= -9.0e15 { return -9_000_000_000_000_000 }
    return Int64(v)
}

/// The playlist an owner set.
public struct PlaylistInfo: Sendable, Equatable, Hashable, Codable {
    /// The playlist's link (e.g. a Spotify playlist URI); the venue's playlist id.
    public var uri: String
    /// Who made the playlist, as the owner typed it (UC20); not an owner or a user id.
    public var creator: String
    /// When it was set, seconds since 1970.
    public var setAt: Double

    public init(uri: String, creator: String, setAt: Double) {
        self.uri = uri
        self.creator = creator
        self.setAt = setAt
    }
}

/// One track in the queue as clients see it.
public struct QueueEntry: Sendable, Equatable, Codable {
    public var track: Track
    public var votes: Int
    /// User ids, in vote order.
    public var voters: [String]
    /// Who requested it (nil: it came with the playlist).
    public var requester: String?
    /// Whether it is the pinned, now-playing track.
    public var nowPlaying: Bool

    public init(track: Track, votes: Int, voters: [String], requester: String?, nowPlaying: Bool) {
        self.track = track
        self.votes = votes
        self.voters = voters
        self.requester = requester
        self.nowPlaying = nowPlaying
    }
}

/// The venue's whole playlist state for a client: `playlist.snapshot` and a subscribe's snapshot.
public struct JukeboxSnapshot: Sendable, Equatable, Codable {
    /// nil when no playlist is set.
    public var playlist: PlaylistInfo?
    public var nowPlaying: String?
    public var settings: VenueSettings
    /// The queue in order.
    public var tracks: [QueueEntry]

    public init(playlist: PlaylistInfo?, nowPlaying: String?, settings: VenueSettings, tracks: [QueueEntry]) {
        self.playlist = playlist
        self.nowPlaying = nowPlaying
        self.settings = settings
        self.tracks = tracks
    }

    /// The uris in order, as `playlist.reordered` sends them.
    public var order: [String] { tracks.map(\.track.uri) }
    /// Votes per uri, as `playlist.reordered` sends them.
    public var votes: [String: Int] {
        Dictionary(tracks.map { ($0.track.uri, $0.votes) }, uniquingKeysWith: { a, _ in a })
    }
}
