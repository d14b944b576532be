/// A jukebox's whole state as plain rows, one type per SQL table (the venue id is the store's
/// to add as a column of every row). `Jukebox.records` produces it; `Jukebox(restoring:)` rebuilds
/// the same jukebox from it after a restart. Every list is in a canonical order, so two equal
/// jukeboxes give equal records.
///
/// Suggested tables (one row per element):
/// - `settings` → columns of the venue row (or a `venue_jukebox` row);
/// - `playlist` → `venue_playlist(venue_id PK, uri, creator, set_at, now_playing, next_seq)`;
/// - `originalTracks` → `venue_playlist_track(venue_id, position, uri, title, artist, explicit, duration_ms, cover_url)`;
/// - `queue` → `venue_queue(venue_id, uri, title, artist, explicit, duration_ms, cover_url, seq, requester, requested_at)`, PK (venue_id, uri);
/// - `votes` → `venue_vote(venue_id, uri, user_id, at, seq)`, PK (venue_id, uri, user_id);
/// - `plays` → `venue_play(venue_id, uri, ended_at)`, PK (venue_id, uri);
/// - `actions` → `venue_action(venue_id, user_id, kind, at)`: the rate windows. Optional: a store
///   that does not keep them restarts every user's hourly counts from zero.
public struct JukeboxRecord: Sendable, Equatable, Codable {
    public var settings: VenueSettings
    /// nil: no playlist (then `originalTracks`, `queue` and `votes` are empty).
    public var playlist: PlaylistRecord?
    /// Ordered by `position`.
    public var originalTracks: [TrackRecord]
    /// Ordered by `seq` (time of entry).
    public var queue: [QueueRecord]
    /// Ordered by `seq` (vote order).
    public var votes: [VoteRecord]
    /// Ordered by `endedAt`, then `uri`.
    public var plays: [PlayRecord]
    /// Ordered by `kind`, `user`, `at`.
    public var actions: [ActionRecord]

    public init(settings: VenueSettings = VenueSettings(), playlist: PlaylistRecord? = nil, originalTracks: [TrackRecord] = [],
                queue: [QueueRecord] = [], votes: [VoteRecord] = [], plays: [PlayRecord] = [], actions: [ActionRecord] = []) {
        self.settings = settings
        self.playlist = playlist
        self.originalTracks = originalTracks
        self.queue = queue
        self.votes = votes
        self.plays = plays
        self.actions = actions
    }
}

/// The set playlist and the queue's counters.
public struct PlaylistRecord: Sendable, Equatable, Codable {
    public var uri: String
    public var creator: String
    public var setAt: Double
    /// The pinned track's uri, if any.
    public var nowPlaying: String?
    /// The next value of the entry/vote counter (greater than every `seq` in use).
    public var nextSeq: Int64

    public init(uri: String, creator: String, setAt: Double, nowPlaying: String?, nextSeq: Int64) {
        self.uri = uri
        self.creator = creator
        self.setAt = setAt
        self.nowPlaying = nowPlaying
        self.nextSeq = nextSeq
    }
}

/// One track of the playlist as set (what `reset` goes back to).
public struct TrackRecord: Sendable, Equatable, Codable {
    public var position: Int
    public var uri: String
    public var title: String
    public var artist: String
    public var explicit: Bool
    public var durationMs: Int?
    public var coverUrl: String?

    public init(position: Int, track: Track) {
        self.position = position
        uri = track.uri
        title = track.title
        artist = track.artist
        explicit = track.explicit
        durationMs = track.durationMs
        coverUrl = track.coverUrl
    }

    public var track: Track {
        Track(uri: uri, title: title, artist: artist, explicit: explicit, durationMs: durationMs, coverUrl: coverUrl)
    }
}

/// One track in the queue.
public struct QueueRecord: Sendable, Equatable, Codable {
    public var uri: String
    public var title: String
    public var artist: String
    public var explicit: Bool
    public var durationMs: Int?
    public var coverUrl: String?
    /// Time of entry into the queue (the counter; ties in votes are broken by it).
    public var seq: Int64
    /// Who requested it (nil: it came with the playlist).
    public var requester: String?
    public var requestedAt: Double?

    public init(track: Track, seq: Int64, requester: String?, requestedAt: Double?) {
        uri = track.uri
        title = track.title
        artist = track.artist
        explicit = track.explicit
        durationMs = track.durationMs
        coverUrl = track.coverUrl
        self.seq = seq
        self.requester = requester
        self.requestedAt = requestedAt
    }

    public var track: Track {
        Track(uri: uri, title: title, artist: artist, explicit: explicit, durationMs: durationMs, coverUrl: coverUrl)
    }
}

/// One user's vote for one queued track (a request's own vote included).
public struct VoteRecord: Sendable, Equatable, Codable {
    public var uri: String
    public var user: String
    public var at: Double
    /// The counter when cast: the order of voters.
    public var seq: Int64

    public init(uri: String, user: String, at: Double, seq: Int64) {
        self.uri = uri
        self.user = user
        self.at = at
        self.seq = seq
    }
}

/// When a track last finished playing (for the no-repeat window).
public struct PlayRecord: Sendable, Equatable, Codable {
    public var uri: String
    public var endedAt: Double

    public init(uri: String, endedAt: Double) {
        self.uri = uri
        self.endedAt = endedAt
    }
}

/// One vote or request counted in a user's hourly rate window.
public struct ActionRecord: Sendable, Equatable, Codable {
    public var user: String
    public var kind: ActionKind
    public var at: Double

    public init(user: String, kind: ActionKind, at: Double) {
        self.user = user
        self.kind = kind
        self.at = at
    }
}

extension Jukebox {
    /// The whole current state as rows (see `JukeboxRecord`).
    public var records: JukeboxRecord {
        var r = JukeboxRecord(settings: settings)
        if let playlist {
            r.playlist = PlaylistRecord(uri: playlist.uri, creator: playlist.creator, setAt: playlist.setAt,
                                        nowPlaying: nowPlayingUri, nextSeq: nextSeq)
        }
        r.originalTracks = originalTracks.enumerated().map { TrackRecord(position: $0.offset, track: $0.element) }
        let bySeq = queue.values.map { (seq: $0.seq, uri: $0.track.uri) }.sorted { $0.seq < $1.seq }
        r.queue.reserveCapacity(bySeq.count)
        var votes: [(seq: Int64, vote: VoteRecord)] = []
        for (_, uri) in bySeq {
            let s = queue[uri]!
            r.queue.append(QueueRecord(track: s.track, seq: s.seq, requester: s.requester, requestedAt: s.requestedAt))
            for v in s.votes { votes.append((v.seq, VoteRecord(uri: uri, user: v.user, at: v.at, seq: v.seq))) }
        }
        votes.sort { $0.seq < $1.seq }
        r.votes = votes.map(\.vote)
        r.plays = plays.map { PlayRecord(uri: $0.key, endedAt: $0.value) }
            .sorted { $0.endedAt != $1.endedAt ? $0.endedAt < $1.endedAt : $0.uri < $1.uri }
        for (kind, windows) in [(ActionKind.request, requestTimes), (.vote, voteTimes)] {
            for user in windows.keys.sorted() {
                r.actions += windows[user]!.map { ActionRecord(user: user, kind: kind, at: $0) }
            }
        }
        return r
    }

    /// The queue row of `uri`, for a store that writes changes one row at a time.
    public func queueRecord(of uri: String) -> QueueRecord? {
        queue[uri].map { QueueRecord(track: $0.track, seq: $0.seq, requester: $0.requester, requestedAt: $0.requestedAt) }
    }

    /// The vote row of `user` for `uri`, if they voted for it.
    public func voteRecord(user: String, uri: String) -> VoteRecord? {
        queue[uri]?.votes.first { $0.user == user }.map { VoteRecord(uri: uri, user: user, at: $0.at, seq: $0.seq) }
    }

    /// Rebuilds a jukebox from stored rows. Rows are not refused, they are repaired: settings are
    /// clamped into range; without a playlist, tracks, queue and votes are ignored; a second queue
    /// row for a uri, a vote for a uri not queued or a second vote by the same user are skipped;
    /// a now-playing uri not queued is dropped; the counter continues above every `seq` seen;
    /// rate windows keep each user's most recent actions up to the limit.
    public init(restoring r: JukeboxRecord, limits: JukeboxLimits = JukeboxLimits()) {
        self.init(settings: r.settings, limits: limits)
        var maxSeq: Int64 = 0
        if let p = r.playlist {
            playlist = PlaylistInfo(uri: p.uri, creator: p.creator, setAt: p.setAt)
            var seen = Set<String>()
            originalTracks = r.originalTracks.sorted { $0.position < $1.position }.map(\.track)
                .filter { seen.insert($0.uri).inserted }
            for q in r.queue.sorted(by: { $0.seq < $1.seq }) where queue[q.uri] == nil {
                queue[q.uri] = Slot(track: q.track, seq: q.seq, requester: q.requester, requestedAt: q.requestedAt)
                maxSeq = max(maxSeq, q.seq)
            }
            for v in r.votes.sorted(by: { $0.seq < $1.seq }) {
                guard var slot = queue[v.uri], slot.voterSet.insert(v.user).inserted else { continue }
                slot.votes.append(Vote(user: v.user, at: v.at, seq: v.seq))
                queue[v.uri] = slot
                maxSeq = max(maxSeq, v.seq)
            }
            nowPlayingUri = p.nowPlaying.flatMap { queue[$0] == nil ? nil : $0 }
            nextSeq = max(p.nextSeq, maxSeq + 1)
        }
        for p in r.plays { plays[p.uri] = max(plays[p.uri] ?? p.endedAt, p.endedAt) }
        for a in r.actions {
            switch a.kind {
            case .vote: voteTimes[a.user, default: []].append(a.at)
            case .request: requestTimes[a.user, default: []].append(a.at)
            }
        }
        let voteLimit = max(1, settings.votesPerUserPerHour), requestLimit = max(1, settings.requestsPerUserPerHour)
        voteTimes = voteTimes.mapValues { Array($0.sorted().suffix(voteLimit)) }
        requestTimes = requestTimes.mapValues { Array($0.sorted().suffix(requestLimit)) }
        reorder()
    }
}
