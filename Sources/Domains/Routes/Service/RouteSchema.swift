import Foundation
import Storage

/// Tables of the routes domain: intel items with their likes, links and comments, and karma.
public enum RouteSchema {
    public static func register(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("routes.v1") { db in
            try db.execute(sql: """
                CREATE TABLE intel_item (
                    id TEXT PRIMARY KEY,
                    lat REAL NOT NULL,
                    lon REAL NOT NULL,
                    kind TEXT NOT NULL,
                    author_user TEXT,            -- a traveller's id, or NULL for a provider
                    author_source TEXT,          -- a provider's source name
                    tags TEXT NOT NULL,          -- comma-separated (a tag never holds a comma)
                    modes TEXT NOT NULL,         -- comma-separated
                    body TEXT NOT NULL,
                    at REAL NOT NULL,
                    posted_at REAL NOT NULL,
                    expires_at REAL NOT NULL,
                    comments INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX intel_item_expiry ON intel_item (expires_at);
                CREATE TABLE intel_like (
                    item TEXT NOT NULL,
                    user TEXT NOT NULL,
                    at REAL NOT NULL,
                    PRIMARY KEY (item, user)
                ) WITHOUT ROWID;
                CREATE TABLE intel_link (
                    item TEXT NOT NULL,
                    other TEXT NOT NULL,
                    at REAL NOT NULL,
                    PRIMARY KEY (item, other)
                ) WITHOUT ROWID;
                CREATE TABLE intel_comment (
                    id INTEGER PRIMARY KEY,
                    item TEXT NOT NULL,
                    user TEXT,                   -- NULL once the account is deleted
                    text TEXT NOT NULL,
                    at REAL NOT NULL
                );
                CREATE INDEX intel_comment_item ON intel_comment (item, id);
                -- Corridors clients subscribed to, so `subscribe route:<id>` finds one again after a restart.
                CREATE TABLE corridor (
                    id TEXT PRIMARY KEY,
                    path TEXT NOT NULL,          -- "lat,lon;lat,lon;..."
                    width REAL NOT NULL,
                    created_at REAL NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE karma (
                    user TEXT PRIMARY KEY,
                    points INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("routes.v2") { db in
            // A traveller's destinations (UC1), most recent first.
            try db.execute(sql: """
                CREATE TABLE destination (
                    user TEXT NOT NULL,
                    id TEXT NOT NULL,
                    to_lat REAL NOT NULL,
                    to_lon REAL NOT NULL,
                    label TEXT,
                    filter TEXT NOT NULL,        -- the filter last used, as route.subscribe takes it
                    last_used REAL NOT NULL,
                    PRIMARY KEY (user, id)
                ) WITHOUT ROWID;
                CREATE INDEX destination_recent ON destination (user, last_used);
                """)
        }
        migrator.registerMigration("routes.v3") { db in
            // Recorded paths (route.track): private to their user, deleted with the destination or
            // the account, as are the corridors that follow them (`owner`, `destination`).
            try db.execute(sql: """
                CREATE TABLE recorded_path (
                    user TEXT NOT NULL,
                    destination TEXT NOT NULL,
                    n INTEGER NOT NULL,          -- order of the fix within the recording
                    lat REAL NOT NULL,
                    lon REAL NOT NULL,
                    at REAL NOT NULL,
                    PRIMARY KEY (user, destination, n)
                ) WITHOUT ROWID;
                ALTER TABLE corridor ADD COLUMN owner TEXT;
                ALTER TABLE corridor ADD COLUMN destination TEXT;
                CREATE INDEX corridor_owner ON corridor (owner, destination) WHERE owner IS NOT NULL;
                """)
        }
        migrator.registerMigration("routes.v4") { db in
            // Pruning: corridors unused for routes.keepCorridorDays are deleted.
            try db.execute(sql: """
                ALTER TABLE corridor ADD COLUMN last_used REAL;
                UPDATE corridor SET last_used = created_at;
                CREATE INDEX corridor_last_used ON corridor (last_used);
                -- Pruning deletes the links to an item too.
                CREATE INDEX intel_link_other ON intel_link (other);
                """)
        }
        migrator.registerMigration("routes.v5") { db in
            // Items at several places, in several languages, named by their provider (transit alerts).
            try db.execute(sql: """
                ALTER TABLE intel_item ADD COLUMN points TEXT;        -- "lat,lon;..." when more than one
                ALTER TABLE intel_item ADD COLUMN translations TEXT;  -- {"tag": "text"} as JSON
                ALTER TABLE intel_item ADD COLUMN reference TEXT;     -- "<feed>/<alert id>"
                """)
        }
        migrator.registerMigration("routes.v6") { db in
            // The shard whose log tells of an item's changes (`IntelShards`): a node's copy of a
            // shard reads its live items by it. (routes.v7 puts the items written before in `named`.)
            try db.execute(sql: """
                ALTER TABLE intel_item ADD COLUMN shard TEXT;
                CREATE INDEX intel_item_shard ON intel_item (shard, expires_at);
                """)
        }
        migrator.registerMigration("routes.v7") { db in
            // Karma by the shard that gave it (each row written by one shard's owner); `karma` keeps
            // what was given before. Items found by place and time on any node (`intel.query`).
            // Items written before ids named their shard are in `named` (IntelShards.shard(ofID:)).
            try db.execute(sql: """
                UPDATE intel_item SET shard = 'named';
                CREATE TABLE karma_shard (
                    user TEXT NOT NULL,
                    shard TEXT NOT NULL,
                    points INTEGER NOT NULL,
                    PRIMARY KEY (user, shard)
                ) WITHOUT ROWID;
                CREATE INDEX intel_item_place ON intel_item (lat, lon);
                CREATE INDEX intel_item_at ON intel_item (at);
                """)
        }
        migrator.registerMigration("routes.v8") { db in
            // Whether an item's end (its expiry, or its provider's) is written in its shard's log:
            // one that fell due while no node held its shard is ended when its shard is next read,
            // so every corridor that showed it hears that it ended. Those due already are taken as
            // told (their corridors began new epochs when they were loaded again).
            try db.execute(sql: """
                ALTER TABLE intel_item ADD COLUMN ended INTEGER NOT NULL DEFAULT 0;
                CREATE INDEX intel_item_unended ON intel_item (shard) WHERE ended = 0;
                """)
            try db.execute(sql: "UPDATE intel_item SET ended = 1 WHERE expires_at <= ?", arguments: [Date().timeIntervalSince1970])
        }
    }
}
