import HubbubCrypto
import Storage

/// Tables of accounts and sessions.
public enum AccountSchema {
    public static func register(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("accounts.v1") { db in
            try db.execute(sql: """
                CREATE TABLE user (
                    id TEXT PRIMARY KEY,
                    username TEXT NOT NULL,
                    username_key TEXT NOT NULL UNIQUE,   -- lowercased, for case-insensitive uniqueness
                    email TEXT,
                    email_key TEXT UNIQUE,
                    password_hash BLOB,
                    password_salt BLOB,
                    password_iterations INTEGER,
                    spotify TEXT, facebook TEXT, twitter TEXT,
                    favorite_artists TEXT NOT NULL DEFAULT '[]',
                    favorite_genres TEXT NOT NULL DEFAULT '[]',
                    created_at REAL NOT NULL,
                    deleted_at REAL
                );
                CREATE TABLE revoked_token (
                    token_id TEXT PRIMARY KEY,
                    expires_at REAL NOT NULL
                );
                """)
        }
        migrator.registerMigration("accounts.v2") { db in
            // tokens_valid_after: milliseconds; tokens issued before it are revoked (a password change).
            // privacy_*: who sees the user's check-ins, votes and requests ('everyone' or 'nobody').
            try db.execute(sql: """
                ALTER TABLE user ADD COLUMN tokens_valid_after INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE user ADD COLUMN alias TEXT;
                ALTER TABLE user ADD COLUMN privacy_checkins TEXT NOT NULL DEFAULT 'everyone';
                ALTER TABLE user ADD COLUMN privacy_votes TEXT NOT NULL DEFAULT 'everyone';
                ALTER TABLE user ADD COLUMN privacy_requests TEXT NOT NULL DEFAULT 'everyone';
                """)
        }
        migrator.registerMigration("accounts.v3") { db in
            // The language the user reads (a BCP 47 tag): provider items are shown in it when they have it.
            try db.execute(sql: "ALTER TABLE user ADD COLUMN language TEXT")
        }
        migrator.registerMigration("accounts.v4") { db in
            // The token key every node shares (PostgreSQL; a SQLite install keeps its key file),
            // made once with the schema: nodes starting together migrate in turn, so all get this one.
            try db.execute(sql: "CREATE TABLE account_secret (id INTEGER NOT NULL PRIMARY KEY, secret TEXT NOT NULL)")
            try db.execute(sql: "INSERT INTO account_secret (id, secret) VALUES (1, ?)", arguments: [Base64.encode(Digest.randomBytes(32))])
        }
    }
}
