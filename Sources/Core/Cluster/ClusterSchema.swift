import Storage

/// The cluster's tables (used on PostgreSQL; created on either engine so a database moves freely):
/// - `cluster_node`: each running node, its address for forwarding (`host:port`), when it was
///   last seen, and until when its leases hold (`expires`, PostgreSQL's clock: its heartbeat);
/// - `cluster_lease`: which node owns each logged room (while that node's heartbeat holds; the
///   row's own `expires` is no longer read, since `cluster.v2`);
/// - `cluster_secret`: the key nodes present to each other on their links (made by the first node).
public enum ClusterSchema {
    public static func migrations(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("cluster.v1") { db in
            try db.execute(sql: """
                CREATE TABLE cluster_node (id TEXT NOT NULL PRIMARY KEY, address TEXT NOT NULL, started REAL NOT NULL,
                                           seen REAL NOT NULL, draining INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE cluster_lease (shard TEXT NOT NULL PRIMARY KEY, node TEXT NOT NULL, expires REAL NOT NULL);
                CREATE INDEX cluster_lease_node ON cluster_lease (node);
                CREATE TABLE cluster_secret (id INTEGER NOT NULL PRIMARY KEY, secret TEXT NOT NULL)
                """)
        }
        // A lease holds while its node's heartbeat does: a renewal moves one row per node, not one
        // per room (a node of 1,400 corridors rewrote 1,400 rows every 2 s). Nodes of before and
        // after this migration read leases differently: stop them all to upgrade.
        migrator.registerMigration("cluster.v2") { db in
            try db.execute(sql: "ALTER TABLE cluster_node ADD COLUMN expires REAL NOT NULL DEFAULT 0")
        }
    }
}
