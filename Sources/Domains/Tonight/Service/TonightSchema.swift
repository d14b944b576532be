import Storage

/// Tables of the tonight domain: the event feed's catalog (categories, artists, venues, events), the
/// affinity feed, and event-goers' state and streams.
public enum TonightSchema {
    /// The catalog's tables and their columns after `row` and `id` (unchanged since tonight.v1).
    static let catalogColumns = [
        ("tonight_category", "name TEXT NOT NULL, parent TEXT"),
        ("tonight_artist", "name TEXT NOT NULL, categories TEXT NOT NULL, image_url TEXT, url TEXT"),
        ("tonight_venue", "name TEXT NOT NULL, street TEXT, city TEXT, state TEXT, zip TEXT, image_url TEXT, url TEXT, lat REAL, lon REAL, time_zone TEXT"),
        ("tonight_event", "performers TEXT NOT NULL, categories TEXT NOT NULL, venue TEXT NOT NULL, start_local TEXT NOT NULL, status TEXT NOT NULL, on_sale TEXT, name TEXT, url TEXT, min_price INTEGER, max_price INTEGER, currency TEXT"),
    ]

    public static func register(_ migrator: inout SQLMigrations) {
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
        migrator.registerMigration("tonight.v3") { db in
            // Event-goers: preferences and their user: room's epoch and last seq, favourites, plans
            // (followed or dismissed), the record of what was pushed once, the user: room's durable
            // history, the reminders' timer queue, and the live state of event: rooms.
            try db.execute(sql: """
                CREATE TABLE tonight_goer (
                    user TEXT PRIMARY KEY,
                    lat REAL, lon REAL, radius_km REAL,      -- NULL until prefs.set
                    max_price REAL,
                    categories TEXT NOT NULL DEFAULT '',     -- chosen category ids, joined
                    epoch TEXT NOT NULL,
                    seq INTEGER NOT NULL DEFAULT 0
                ) WITHOUT ROWID;
                CREATE TABLE tonight_favorite (
                    user TEXT NOT NULL,
                    kind TEXT NOT NULL,                      -- artist | category
                    id TEXT NOT NULL,
                    PRIMARY KEY (user, kind, id)
                ) WITHOUT ROWID;
                CREATE TABLE tonight_plan (
                    user TEXT NOT NULL,
                    event TEXT NOT NULL,
                    followed INTEGER NOT NULL,               -- 1 followed, 0 dismissed
                    at REAL NOT NULL,
                    PRIMARY KEY (user, event)
                ) WITHOUT ROWID;
                CREATE INDEX tonight_plan_event ON tonight_plan (event);
                CREATE TABLE tonight_pushed (
                    user TEXT NOT NULL,
                    event TEXT NOT NULL,
                    kind TEXT NOT NULL,                      -- tonight.suggested | event.announced
                    at REAL NOT NULL,
                    PRIMARY KEY (user, event, kind)
                ) WITHOUT ROWID;
                CREATE TABLE tonight_user_push (
                    user TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    at REAL NOT NULL,
                    payload BLOB NOT NULL,                   -- the push as sent (room, seq, epoch, event, data)
                    PRIMARY KEY (user, seq)
                ) WITHOUT ROWID;
                CREATE TABLE tonight_reminder (
                    user TEXT NOT NULL,
                    event TEXT NOT NULL,
                    due REAL NOT NULL,
                    PRIMARY KEY (user, event)
                ) WITHOUT ROWID;
                CREATE INDEX tonight_reminder_due ON tonight_reminder (due);
                CREATE INDEX tonight_reminder_event ON tonight_reminder (event);
                CREATE TABLE tonight_live (
                    event TEXT PRIMARY KEY,
                    state TEXT NOT NULL,                     -- the latest event.live data, JSON
                    at REAL NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("tonight.v4") { db in
            // The catalog's tables with rowids and a unique index on the feed's ID, instead of
            // WITHOUT ROWID tables keyed by it: a feed's IDs come in no order, and inserting rows of
            // ~300 bytes at random places in a B-tree rewrote most of its pages in every ingest
            // transaction (1 GB written for a 30 MB catalog). Rows are now appended; only the small
            // index takes random inserts.
            for (table, columns) in catalogColumns {
                try db.execute(sql: """
                    CREATE TABLE \(table)_v4 (row INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, \(columns));
                    INSERT INTO \(table)_v4 SELECT NULL, * FROM \(table);
                    DROP TABLE \(table);
                    ALTER TABLE \(table)_v4 RENAME TO \(table);
                    """)
            }
            // No index by venue: the catalog is read whole at start-up and queried in memory.
        }
        migrator.registerMigration("tonight.v5") { db in
            // Events a feed added or changed whose users were not told yet: one note per batch of the
            // feed, written with its events, deleted once the pushes are durable, and told at start-up
            // if the server stopped between.
            try db.execute(sql: """
                CREATE TABLE tonight_feed_note (
                    note INTEGER PRIMARY KEY,
                    changes TEXT NOT NULL   -- JSON: [[event, added (1) or changed (0), venue, start, status, min, max, currency]...], earlier values
                );
                """)
        }
        migrator.registerMigration("tonight.v6") { db in
            // The catalog gives each record its row (`RecordTable`): the tables lose the unique index
            // on the feed's ID, which took a random insert for every new record (half of an ingest's
            // writing). The catalog reads them whole at start-up, so nothing looks rows up by ID.
            // (tonight_feed_note's entries may now also be a bare event ID: an event added.)
            for (table, columns) in catalogColumns {
                try db.execute(sql: """
                    CREATE TABLE \(table)_v6 (row INTEGER PRIMARY KEY, id TEXT NOT NULL, \(columns));
                    INSERT INTO \(table)_v6 SELECT * FROM \(table);
                    DROP TABLE \(table);
                    ALTER TABLE \(table)_v6 RENAME TO \(table);
                    """)
            }
        }
    }
}
