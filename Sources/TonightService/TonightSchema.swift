import GRDB

/// Tables of the tonight domain: the event feed's catalog (categories, artists, venues, events).
public enum TonightSchema {
    public static func register(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("tonight.v1") { db in
            try db.execute(sql: """
                CREATE TABLE tonight_category (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    parent TEXT
                ) WITHOUT ROWID;
                CREATE TABLE tonight_artist (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    categories TEXT NOT NULL,    -- ids, comma-separated
                    image_url TEXT,
                    url TEXT
                ) WITHOUT ROWID;
                CREATE TABLE tonight_venue (
                    id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    street TEXT, city TEXT, state TEXT, zip TEXT, image_url TEXT, url TEXT,
                    lat REAL, lon REAL,
                    time_zone TEXT               -- as the feed gave it; NULL: tonight.defaultTimeZone
                ) WITHOUT ROWID;
                CREATE TABLE tonight_event (
                    id TEXT PRIMARY KEY,
                    performers TEXT NOT NULL,    -- artist ids, comma-separated, in the feed's order
                    categories TEXT NOT NULL,
                    venue TEXT NOT NULL,
                    start_local TEXT NOT NULL,   -- venue-local YYYY-MM-DDTHH:MM
                    status TEXT NOT NULL,
                    on_sale TEXT,
                    name TEXT, url TEXT,
                    min_price INTEGER, max_price INTEGER, currency TEXT
                ) WITHOUT ROWID;
                CREATE INDEX tonight_event_venue ON tonight_event (venue);
                """)
        }
        migrator.registerMigration("tonight.v2") { db in
            // The affinity feed: each artist's recommended artists with their scores (0–1).
            try db.execute(sql: """
                CREATE TABLE tonight_affinity (
                    artist TEXT NOT NULL,
                    recommended TEXT NOT NULL,
                    score REAL NOT NULL,
                    PRIMARY KEY (artist, recommended)
                ) WITHOUT ROWID;
                """)
        }
    }
}
