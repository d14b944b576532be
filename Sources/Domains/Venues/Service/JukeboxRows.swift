import Realtime
import Storage
import Venues

/// One change to a venue's stored jukebox, as few rows as the change touches: a vote is one vote
/// row, the counter and one history row, whatever the size of the queue. Only changes that replace
/// the whole queue (a new playlist, a reset, removing the playlist) rewrite it.
enum JukeboxWrite: Sendable {
    /// A vote (or a request of a queued track): its row, the counter, the user's history row.
    case vote(VoteRecord, nextSeq: Int64, history: TrackActionRow)
    /// A vote taken back.
    case unvote(uri: String, user: String)
    /// A new track requested: its queue row, its requester's vote, the counter, the history row.
    case request(QueueRecord, VoteRecord, nextSeq: Int64, history: TrackActionRow)
    /// Every vote cleared.
    case votesCleared
    case settings(VenueSettings)
    case nowPlaying(String?)
    /// A track finished: it leaves the queue with its votes, its play is remembered; plays older
    /// than `forgetPlaysBefore` go.
    case ended(uri: String, at: Double, nowPlaying: String?, forgetPlaysBefore: Double)
    /// The whole state (new playlist, reset, playlist removed).
    case whole(JukeboxRecord)
}

/// A row of the user's vote and request history (`track_action`): `user.votes`, `user.requests`,
/// and the hourly rate windows after a restart.
struct TrackActionRow: Sendable {
    /// `vote` (a vote, or a request of a track already queued) or `request` (a new track, with its vote).
    var kind: ActionKind
    var user: String
    var track: Track
    var at: Double
}

/// The SQL of a venue's jukebox (tables of `VenueSchema`'s `venues.v2`). Statements are prepared once
/// per connection (the store's statement cache): the writer runs the same few all night.
enum JukeboxRows {
    /// Applies one change inside the group transaction.
    static func apply(_ write: JukeboxWrite, venue: String, _ db: any SQLDatabase) throws {
        switch write {
        case .vote(let v, let next, let history):
            try insert(v, venue: venue, db)
            try counter(next, venue: venue, db)
            try insert(history, venue: venue, db)
        case .unvote(let uri, let user):
            try db.cachedStatement(sql: "DELETE FROM venue_vote WHERE venue_id = ? AND uri = ? AND user_id = ?").execute(arguments: [venue, uri, user])
        case .request(let q, let v, let next, let history):
            try insert(q, venue: venue, db)
            try insert(v, venue: venue, db)
            try counter(next, venue: venue, db)
            try insert(history, venue: venue, db)
        case .votesCleared:
            try db.cachedStatement(sql: "DELETE FROM venue_vote WHERE venue_id = ?").execute(arguments: [venue])
        case .settings(let s):
            try ensureRow(venue: venue, db)
            try db.cachedStatement(sql: "UPDATE venue_jukebox SET settings = ? WHERE venue_id = ?").execute(arguments: [s.json.encoded, venue])
        case .nowPlaying(let uri):
            try db.cachedStatement(sql: "UPDATE venue_jukebox SET now_playing = ? WHERE venue_id = ?").execute(arguments: [uri, venue])
        case .ended(let uri, let at, let nowPlaying, let forget):
            try db.cachedStatement(sql: "DELETE FROM venue_queue WHERE venue_id = ? AND uri = ?").execute(arguments: [venue, uri])
            try db.cachedStatement(sql: "DELETE FROM venue_vote WHERE venue_id = ? AND uri = ?").execute(arguments: [venue, uri])
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO venue_play (venue_id, uri, ended_at) VALUES (?, ?, ?)").execute(arguments: [venue, uri, at])
            try db.cachedStatement(sql: "DELETE FROM venue_play WHERE venue_id = ? AND ended_at < ?").execute(arguments: [venue, forget])
            try db.cachedStatement(sql: "UPDATE venue_jukebox SET now_playing = ? WHERE venue_id = ?").execute(arguments: [nowPlaying, venue])
        case .whole(let r):
            try replaceAll(r, venue: venue, db)
        }
    }

    /// Writes a whole jukebox, replacing what was stored (also used to migrate the old JSON state).
    static func replaceAll(_ r: JukeboxRecord, venue: String, _ db: any SQLDatabase) throws {
        for table in ["venue_playlist_track", "venue_queue", "venue_vote", "venue_play"] {
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE venue_id = ?").execute(arguments: [venue])
        }
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO venue_jukebox (venue_id, settings, playlist_uri, playlist_creator, playlist_set_at, now_playing, next_seq)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [venue, r.settings.json.encoded, r.playlist?.uri, r.playlist?.creator, r.playlist?.setAt,
                             r.playlist?.nowPlaying, r.playlist?.nextSeq ?? 1])
        for t in r.originalTracks {
            try db.cachedStatement(sql: """
                INSERT INTO venue_playlist_track (venue_id, position, uri, title, artist, explicit, duration_ms, cover_url)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [venue, t.position, t.uri, t.title, t.artist, t.explicit, t.durationMs, t.coverUrl])
        }
        for q in r.queue { try insert(q, venue: venue, db) }
        for v in r.votes { try insert(v, venue: venue, db) }
        for p in r.plays {
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO venue_play (venue_id, uri, ended_at) VALUES (?, ?, ?)").execute(arguments: [venue, p.uri, p.endedAt])
        }
    }

    /// Reads a venue's jukebox back; the rate windows come from the last hour of its history rows.
    static func load(venue: String, now: Double, _ db: any SQLDatabase) throws -> JukeboxRecord {
        var r = JukeboxRecord()
        guard let row = try SQLRow.fetchOne(db, sql: "SELECT * FROM venue_jukebox WHERE venue_id = ?", arguments: [venue]) else { return r }
        if let text: String = row["settings"], let json = try? JSONParser.parse(Array(text.utf8)) { r.settings = VenueSettings(json: json) }
        if let uri: String = row["playlist_uri"] {
            r.playlist = PlaylistRecord(uri: uri, creator: row["playlist_creator"] ?? "", setAt: row["playlist_set_at"] ?? 0,
                                        nowPlaying: row["now_playing"], nextSeq: row["next_seq"])
        }
        func track(_ row: SQLRow) -> Track {
            Track(uri: row["uri"], title: row["title"], artist: row["artist"], explicit: row["explicit"],
                  durationMs: row["duration_ms"], coverUrl: row["cover_url"])
        }
        r.originalTracks = try SQLRow.fetchAll(db, sql: "SELECT * FROM venue_playlist_track WHERE venue_id = ? ORDER BY position",
                                            arguments: [venue]).map { TrackRecord(position: $0["position"], track: track($0)) }
        r.queue = try SQLRow.fetchAll(db, sql: "SELECT * FROM venue_queue WHERE venue_id = ? ORDER BY seq", arguments: [venue]).map {
            QueueRecord(track: track($0), seq: $0["seq"], requester: $0["requester"], requestedAt: $0["requested_at"])
        }
        r.votes = try SQLRow.fetchAll(db, sql: "SELECT uri, user_id, at, seq FROM venue_vote WHERE venue_id = ? ORDER BY seq", arguments: [venue]).map {
            VoteRecord(uri: $0["uri"], user: $0["user_id"], at: $0["at"], seq: $0["seq"])
        }
        r.plays = try SQLRow.fetchAll(db, sql: "SELECT uri, ended_at FROM venue_play WHERE venue_id = ? ORDER BY ended_at, uri", arguments: [venue]).map {
            PlayRecord(uri: $0["uri"], endedAt: $0["ended_at"])
        }
        r.actions = try SQLRow.fetchAll(db, sql: """
            SELECT user_id, kind, at FROM track_action WHERE venue_id = ? AND at > ? ORDER BY kind, user_id, at
            """, arguments: [venue, now - Double(Jukebox.rateWindowMs) / 1000]).compactMap { row in
            (row["kind"] as String?).flatMap(ActionKind.init(rawValue:)).map { ActionRecord(user: row["user_id"], kind: $0, at: row["at"]) }
        }
        return r
    }

    private static func ensureRow(venue: String, _ db: any SQLDatabase) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO venue_jukebox (venue_id, settings, next_seq) VALUES (?, '{}', 1)").execute(arguments: [venue])
    }

    private static func counter(_ next: Int64, venue: String, _ db: any SQLDatabase) throws {
        try db.cachedStatement(sql: "UPDATE venue_jukebox SET next_seq = ? WHERE venue_id = ?").execute(arguments: [next, venue])
    }

    private static func insert(_ q: QueueRecord, venue: String, _ db: any SQLDatabase) throws {
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO venue_queue (venue_id, uri, title, artist, explicit, duration_ms, cover_url, seq, requester, requested_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [venue, q.uri, q.title, q.artist, q.explicit, q.durationMs, q.coverUrl, q.seq, q.requester, q.requestedAt])
    }

    private static func insert(_ v: VoteRecord, venue: String, _ db: any SQLDatabase) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO venue_vote (venue_id, uri, user_id, at, seq) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [venue, v.uri, v.user, v.at, v.seq])
    }

    private static func insert(_ a: TrackActionRow, venue: String, _ db: any SQLDatabase) throws {
        try db.cachedStatement(sql: "INSERT INTO track_action (user_id, venue_id, kind, uri, title, artist, at) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [a.user, venue, a.kind.rawValue, a.track.uri, a.track.title, a.track.artist, a.at])
    }
}
