import Storage

/// The cluster's tables (used on PostgreSQL; created on either engine so a database moves freely):
/// - `cluster_node`: each running node, its address for forwarding (`host:port`) and when it was
///   last seen (a heartbeat with its lease renewals);
/// - `cluster_lease`: which node owns each logged room, until when (PostgreSQL's clock);
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
    }
}
