/// What a client caught wrong in the pushes of its rooms. Every field counts occurrences.
public struct Violations: Sendable, Equatable {
    /// Pushes never received: the seqs skipped over by a gap.
    public var missing = 0
    /// A push whose seq was already received.
    public var duplicates = 0
    /// A push with a seq below one already received that had not been received yet.
    public var outOfOrder = 0
    /// A push from an epoch other than the one the client subscribed in.
    public var wrongEpoch = 0
    /// A queue out of order: a `playlist.reordered` whose order does not follow its votes (most
    /// first, the pinned track first) or whose `order` and `votes` disagree; a `track.moved` that
    /// puts its track where its votes do not belong (above a track with more votes, below one with
    /// fewer, above the pinned track, the pinned track anywhere but first, past the queue's end),
    /// or gives it fewer than no votes.
    public var badOrder = 0
    /// Counts that do not follow from the state the client knew: a vote, unvote or request must
    /// move its track by exactly one vote (a `track.moved` from the track's known count, a new
    /// request from the 0 its `track.requested` brought it in with; a `playlist.reordered` the
    /// total too); a `track.moved` of a track not queued; a `track.requested` of one already queued.
    public var badCount = 0
    /// Routes: an `intel.added` or `intel.updated` whose item lies outside the traveller's corridor.
    public var outsideCorridor = 0
    /// Routes: an item the traveller should have received (posted inside its corridor while it
    /// watched, see `DeliveryAudit`) that never came.
    public var undelivered = 0
    /// Routes: an item received a second time while watching. Tonight: a suggestion, announcement
    /// or change received twice.
    public var redelivered = 0
    /// Tonight: a push the user should not have had (an event outside their suggestions, an
    /// announcement not theirs, a change with wrong previous values).
    public var unwanted = 0

    public init() {}

    /// Everything that was wrong (a gap counts once per missing push).
    public var total: Int { missing + duplicates + outOfOrder + wrongEpoch + badOrder + badCount + outsideCorridor + undelivered + redelivered + unwanted }

    public static func - (a: Violations, b: Violations) -> Violations {
        var d = Violations()
        d.missing = a.missing - b.missing
        d.duplicates = a.duplicates - b.duplicates
        d.outOfOrder = a.outOfOrder - b.outOfOrder
        d.wrongEpoch = a.wrongEpoch - b.wrongEpoch
        d.badOrder = a.badOrder - b.badOrder
        d.badCount = a.badCount - b.badCount
        d.outsideCorridor = a.outsideCorridor - b.outsideCorridor
        d.undelivered = a.undelivered - b.undelivered
        d.redelivered = a.redelivered - b.redelivered
        d.unwanted = a.unwanted - b.unwanted
        return d
    }

    public static func += (a: inout Violations, b: Violations) {
        a.missing += b.missing
        a.duplicates += b.duplicates
        a.outOfOrder += b.outOfOrder
        a.wrongEpoch += b.wrongEpoch
        a.badOrder += b.badOrder
        a.badCount += b.badCount
        a.outsideCorridor += b.outsideCorridor
        a.undelivered += b.undelivered
        a.redelivered += b.redelivered
        a.unwanted += b.unwanted
    }
}

/// Checks one room's pushes on one connection: seq without gaps or repeats within an epoch,
/// and a jukebox queue whose every change follows from the one before.
public struct PushValidator: Sendable {
    /// How far back received seqs are remembered (to tell a late push from a repeated one).
    static let window = 256

    public private(set) var epoch: String?
    /// The highest seq received (or the subscribe reply's seq).
    public private(set) var seq = 0
    public private(set) var violations = Violations()
    /// The queue as the client knows it (nil until a snapshot arrives).
    public private(set) var queue: [QueuedTrack]?
    public private(set) var nowPlaying: UInt64?
    /// Bit i set: seq (`seq` - i) was received.
    private var received: [UInt64] = Array(repeating: 0, count: window / 64)

    public init() {}

    /// A subscribe reply with a snapshot (or after a failed recovery): start over from it.
    public mutating func reset(epoch: String, seq: Int, queue: [QueuedTrack]?, nowPlaying: UInt64?) {
        self.epoch = epoch
        self.seq = seq
        self.queue = queue
        self.nowPlaying = nowPlaying
        received = Array(repeating: 0, count: Self.window / 64)
        markReceived(0)
    }

    /// A subscribe reply that said `recovered`: the missed pushes follow and the known queue stays,
    /// which is only right if the epoch is the one the client asked about.
    @discardableResult
    public mutating func recovered(epoch: String) -> Violations {
        guard epoch != self.epoch else { return Violations() }
        violations.wrongEpoch += 1
        var d = Violations()
        d.wrongEpoch = 1
        return d
    }

    /// Checks a push of this room and applies it to the known state; returns what it found wrong.
    @discardableResult
    public mutating func receive(_ push: ScannedPush) -> Violations {
        let before = violations
        check(push)
        return violations - before
    }

    private mutating func check(_ push: ScannedPush) {
        guard push.epoch == epoch else {
            violations.wrongEpoch += 1
            return
        }
        let s = push.seq
        if s == seq + 1 {
            shift(by: 1)
            seq = s
        } else if s > seq + 1 {
            violations.missing += s - seq - 1
            shift(by: s - seq)
            seq = s
        } else {
            let back = seq - s
            if back < Self.window, isReceived(back) {
                violations.duplicates += 1
            } else {
                violations.outOfOrder += 1
                if back < Self.window { markReceived(back) }
                if violations.missing > 0 { violations.missing -= 1 } // it came after all, just late
            }
            return // a stale push must not roll the known state back
        }
        markReceived(0)
        apply(push)
    }

    private mutating func apply(_ push: ScannedPush) {
        switch push.event {
        case .trackMoved:
            if let moved = push.moved { move(moved, to: push.index, cause: push.cause) }
        case .trackRequested:
            if let track = push.requested, queue != nil {
                // At the end with no votes; the `track.moved` (or fair mode's `playlist.reordered`)
                // that follows gives it its requester's vote and its place.
                if queue!.contains(where: { $0.track == track }) {
                    violations.badCount += 1
                } else {
                    queue!.append(QueuedTrack(track: track, votes: 0))
                }
            }
        case .playlistReordered:
            checkOrder(push)
            if let cause = push.cause, let old = queue { checkCounts(old: old, new: push.queue, cause: cause) }
            queue = push.queue
        case .nowPlayingChanged:
            nowPlaying = push.nowPlaying
        case .votesCleared:
            queue = queue?.map { QueuedTrack(track: $0.track, votes: 0) }
        case .playlistSnapshot, .playlistRemoved:
            queue = nil // unknown until the caller resets it from the snapshot's data
            nowPlaying = nil
        default:
            break
        }
    }

    /// Sets the queue from a `playlist.snapshot` push's data (parsed by the caller).
    public mutating func adoptSnapshot(queue: [QueuedTrack], nowPlaying: UInt64?) {
        self.queue = queue
        self.nowPlaying = nowPlaying
    }

    private mutating func checkOrder(_ push: ScannedPush) {
        var ok = push.orderMatchesVotes
        var tracks = push.queue[...]
        if let pinned = nowPlaying, tracks.first?.track == pinned { tracks = tracks.dropFirst() }
        var previous = Int.max
        for t in tracks {
            if t.votes > previous || t.votes < 0 { ok = false; break }
            previous = t.votes
        }
        if !ok { violations.badOrder += 1 }
    }

    /// Applies a `track.moved` (the track leaves its place and is inserted at `index` with its new
    /// count) and checks it: the count against the cause, the place against its neighbours' votes.
    /// Only the moved track's place is checked (the others keep their relative order), so a
    /// misplaced track is counted once, not again at every later move. Among equal votes it may go
    /// anywhere: the server breaks ties by an entry counter the client does not see.
    private mutating func move(_ moved: QueuedTrack, to index: Int, cause: PushCause?) {
        guard var q = queue else { return }
        queue = nil // keeps q's storage unique while it is edited
        defer { queue = q }
        let pinnedOnTop = nowPlaying != nil && q.first?.track == nowPlaying
        let isPinned = nowPlaying == moved.track
        if let from = q.firstIndex(where: { $0.track == moved.track }) {
            if let cause, moved.votes != q[from].votes + (cause.action == .unvote ? -1 : 1) { violations.badCount += 1 }
            q.remove(at: from)
        } else {
            violations.badCount += 1 // not queued: a request's `track.requested` brings a track in first
        }
        // Where it may go: the pinned track first; any other after it, at most at the end.
        let lowest = isPinned ? 0 : (pinnedOnTop ? 1 : 0)
        let highest = isPinned ? 0 : q.count
        var ok = moved.votes >= 0 && index >= lowest && index <= highest
        let at = min(max(index, lowest), highest)
        if !isPinned {
            if at - 1 >= lowest, q[at - 1].votes < moved.votes { ok = false }
            if at < q.count, q[at].votes > moved.votes { ok = false }
        }
        if !ok { violations.badOrder += 1 }
        q.insert(moved, at: at)
    }

    private mutating func checkCounts(old: [QueuedTrack], new: [QueuedTrack], cause: PushCause) {
        let delta = cause.action == .unvote ? -1 : 1
        let oldVotes = old.first { $0.track == cause.track }?.votes
        let newVotes = new.first { $0.track == cause.track }?.votes
        let oldTotal = old.reduce(0) { $0 + $1.votes }, newTotal = new.reduce(0) { $0 + $1.votes }
        var ok = newTotal == oldTotal + delta && newVotes == (oldVotes ?? 0) + delta
        // The same tracks, except a request that brought a new one in.
        let added = oldVotes == nil && cause.action == .request ? 1 : 0
        if oldVotes == nil && added == 0 { ok = false }
        if new.count != old.count + added { ok = false }
        if !ok { violations.badCount += 1 }
    }

    private mutating func shift(by n: Int) {
        if n >= Self.window {
            for i in received.indices { received[i] = 0 }
            return
        }
        var remaining = n
        while remaining > 0 {
            let step = min(remaining, 63)
            var carry: UInt64 = 0
            for i in received.indices {
                let next = received[i] >> (64 - step)
                received[i] = (received[i] << step) | carry
                carry = next
            }
            remaining -= step
        }
    }

    private func isReceived(_ back: Int) -> Bool { received[back / 64] & (1 << UInt64(back % 64)) != 0 }
    private mutating func markReceived(_ back: Int) { received[back / 64] |= 1 << UInt64(back % 64) }
}
