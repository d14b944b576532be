import Foundation
import Storage
import Venues

/// Tables of the venues domain. Venues are soft-deleted (`deleted_at`): their data is kept.
public enum VenueSchema {
    public static func register(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("venues.v1") { db in
            try db.execute(sql: """
                CREATE TABLE venue (
                    id TEXT PRIMARY KEY,
                    owner_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    address TEXT NOT NULL,
                    postcode TEXT NOT NULL,
                    city TEXT NOT NULL,
                    country TEXT NOT NULL,
                    lat REAL NOT NULL,
                    lon REAL NOT NULL,
                    search_text TEXT NOT NULL,       -- name and address, case- and accent-folded
                    settings TEXT NOT NULL DEFAULT '{}',
                    created_at REAL NOT NULL,
                    deleted_at REAL
                );
                CREATE INDEX venue_position ON venue (lat, lon);
                CREATE TABLE venue_owner (
                    venue_id TEXT NOT NULL REFERENCES venue(id),
                    user_id TEXT NOT NULL,
                    PRIMARY KEY (venue_id, user_id)
                );
                CREATE TABLE checkin (
                    venue_id TEXT NOT NULL REFERENCES venue(id),
                    user_id TEXT NOT NULL,
                    at REAL NOT NULL,
                    PRIMARY KEY (venue_id, user_id)
                );
                CREATE INDEX checkin_user ON checkin (user_id, at);
                -- The whole playlist state of a venue (Jukebox.records as JSON), rewritten per group commit.
                CREATE TABLE jukebox (
                    venue_id TEXT PRIMARY KEY REFERENCES venue(id),
                    state TEXT NOT NULL,
                    updated_at REAL NOT NULL
                );
                -- Append-only history for user.votes and user.requests (kept when votes are cleared).
                CREATE TABLE track_action (
                    id INTEGER PRIMARY KEY,
                    user_id TEXT NOT NULL,
                    venue_id TEXT NOT NULL,
                    kind TEXT NOT NULL,               -- 'vote' or 'request'
                    uri TEXT NOT NULL,
                    title TEXT NOT NULL,
                    artist TEXT NOT NULL,
                    at REAL NOT NULL
                );
                CREATE INDEX track_action_user ON track_action (user_id, kind, at);
                """)
        }
        // One row per thing instead of the whole state per commit: a vote writes its row, not the venue.
        migrator.registerMigration("venues.v2") { db in
            try db.execute(sql: """
                CREATE TABLE venue_jukebox (
                    venue_id TEXT PRIMARY KEY REFERENCES venue(id),
                    settings TEXT NOT NULL,           -- VenueSettings as JSON
                    playlist_uri TEXT,                -- NULL: no playlist set
                    playlist_creator TEXT,
                    playlist_set_at REAL,
                    now_playing TEXT,
                    next_seq INTEGER NOT NULL         -- the entry/vote counter
                );
                CREATE TABLE venue_playlist_track (
                    venue_id TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    uri TEXT NOT NULL, title TEXT NOT NULL, artist TEXT NOT NULL, explicit INTEGER NOT NULL,
                    duration_ms INTEGER, cover_url TEXT,
                    PRIMARY KEY (venue_id, position)
                );
                CREATE TABLE venue_queue (
                    venue_id TEXT NOT NULL,
                    uri TEXT NOT NULL, title TEXT NOT NULL, artist TEXT NOT NULL, explicit INTEGER NOT NULL,
                    duration_ms INTEGER, cover_url TEXT,
                    seq INTEGER NOT NULL, requester TEXT, requested_at REAL,
                    PRIMARY KEY (venue_id, uri)
                );
                CREATE TABLE venue_vote (
                    venue_id TEXT NOT NULL,
                    uri TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    at REAL NOT NULL,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (venue_id, uri, user_id)
                );
                CREATE TABLE venue_play (
                    venue_id TEXT NOT NULL,
                    uri TEXT NOT NULL,
                    ended_at REAL NOT NULL,
                    PRIMARY KEY (venue_id, uri)
                );
                -- The rate windows are the last hour of the history.
                CREATE INDEX track_action_venue ON track_action (venue_id, at);
                """)
            // A request used to write a 'vote' row beside its 'request' row; now the request row
            // stands for both (user.votes lists both kinds).
            try db.execute(sql: """
                DELETE FROM track_action WHERE kind = 'vote' AND EXISTS (
                    SELECT 1 FROM track_action r WHERE r.kind = 'request' AND r.user_id = track_action.user_id
                    AND r.venue_id = track_action.venue_id AND r.uri = track_action.uri AND r.at = track_action.at)
                """)
            for row in try SQLRow.fetchAll(db, sql: "SELECT venue_id, state FROM jukebox") {
                let id: String = row["venue_id"]
                let state: String = row["state"]
                var record = try JSONDecoder().decode(JukeboxRecord.self, from: Data(state.utf8))
                record.actions = []
                try JukeboxRows.replaceAll(record, venue: id, db)
            }
            try db.execute(sql: "DROP TABLE jukebox")
        }
    }
}
