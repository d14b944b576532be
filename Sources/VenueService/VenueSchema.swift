import GRDB

/// Tables of the venues domain. Venues are soft-deleted (`deleted_at`): their data is kept.
public enum VenueSchema {
    public static func register(_ migrator: inout DatabaseMigrator) {
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
    }
}
