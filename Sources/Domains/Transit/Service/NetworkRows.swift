import Foundation
import Storage
import Transit

/// How GTFS feeds are stored (`transit.v1`): one row per feed naming its current version, and each
/// version's agencies, stops, routes (with the stops each serves) and trips (with their route).
///
/// A new version is written in many short transactions (a city's 200,000 trips would hold the
/// store's one writer for a second), then made current in one: a restart finds the old version or
/// the new one, never half. Older versions are deleted afterwards, in short transactions too.
enum NetworkRows {
    static func register(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("transit.v1") { db in
            try db.execute(sql: """
                CREATE TABLE transit_feed (
                    name TEXT PRIMARY KEY,
                    version INTEGER NOT NULL,    -- the version in force
                    loaded_at REAL NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE transit_agency (
                    feed TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    n INTEGER NOT NULL,          -- order in agency.txt (the first one's language is the feed's)
                    id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    timezone TEXT NOT NULL,
                    language TEXT,
                    PRIMARY KEY (feed, version, n)
                );
                CREATE TABLE transit_stop (
                    feed TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    lat REAL NOT NULL,
                    lon REAL NOT NULL,
                    parent TEXT,
                    PRIMARY KEY (feed, version, id)
                );
                CREATE TABLE transit_route (
                    feed TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    short_name TEXT,
                    long_name TEXT,
                    type INTEGER NOT NULL,
                    agency TEXT,
                    stops TEXT NOT NULL,         -- the stops it serves, ids joined by a newline
                    PRIMARY KEY (feed, version, id)
                );
                CREATE TABLE transit_trip (
                    feed TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    id TEXT NOT NULL,
                    route TEXT NOT NULL,
                    PRIMARY KEY (feed, version, id)
                );
                """)
        }
    }

    /// Writes `network` as `version` of feed `name`, `batch` rows per transaction; not in force yet.
    static func write(_ name: String, version: Int64, _ network: TransitNetwork, batch: Int, to store: Store) async throws {
        var rows: [(String, SQLArguments)] = []
        for (n, a) in network.agencies.enumerated() {
            rows.append(("INSERT INTO transit_agency (feed, version, n, id, name, timezone, language) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [name, version, n, a.id, a.name, a.timeZone, a.language]))
        }
        for s in network.stops.values {
            rows.append(("INSERT INTO transit_stop (feed, version, id, name, lat, lon, parent) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [name, version, s.id, s.name, s.lat, s.lon, s.parent]))
        }
        for r in network.routes.values {
            rows.append(("INSERT INTO transit_route (feed, version, id, short_name, long_name, type, agency, stops) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [name, version, r.id, r.shortName, r.longName, r.type, r.agency, (network.stopsOfRoute[r.id] ?? []).joined(separator: "\n")]))
        }
        for (t, r) in network.trips {
            rows.append(("INSERT INTO transit_trip (feed, version, id, route) VALUES (?, ?, ?, ?)", [name, version, t, r]))
        }
        for start in stride(from: 0, to: rows.count, by: batch) {
            let chunk = Array(rows[start..<min(start + batch, rows.count)])
            try await store.write { db in for (sql, arguments) in chunk { try db.cachedStatement(sql: sql).execute(arguments: arguments) } }
        }
    }

    /// Puts `version` of feed `name` in force (one transaction).
    static func commit(_ name: String, version: Int64, at now: Double, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO transit_feed (name, version, loaded_at) VALUES (?, ?, ?)", arguments: [name, version, now])
    }

    /// The tables a version has rows in, with the column that tells a version's rows apart.
    static let tables = [("transit_agency", "n"), ("transit_stop", "id"), ("transit_route", "id"), ("transit_trip", "id")]

    /// Deletes rows of versions that are neither in force nor being written (`writing`, asked inside
    /// each transaction, so a version an upload starts meanwhile is never taken): a replaced
    /// version, or what an upload cut short by a crash left. `batch` rows per transaction, found by
    /// key (the same SQL in every engine).
    static func dropOrphans(writing: @escaping @Sendable () -> Set<Int64>, batch: Int, in store: Store) async throws -> Int {
        var dropped = 0
        for (table, key) in tables {
            let versions = try await store.read { db in
                try SQLRow.fetchAll(db, sql: """
                    SELECT DISTINCT t.feed, t.version FROM \(table) t
                    WHERE NOT EXISTS (SELECT 1 FROM transit_feed f WHERE f.name = t.feed AND f.version = t.version)
                    """).map { ($0["feed"] as String, $0["version"] as Int64) }
            }
            for (feed, version) in versions {
                while true {
                    let n = try await store.write { db in
                        // Put in force meanwhile, or being written: not an orphan.
                        if writing().contains(version) { return 0 }
                        if try Int.fetchOne(db, sql: "SELECT 1 FROM transit_feed WHERE name = ? AND version = ?", arguments: [feed, version]) != nil {
                            return 0
                        }
                        return try db.changes(sql: """
                            DELETE FROM \(table) WHERE feed = ? AND version = ? AND \(key) IN (
                                SELECT \(key) FROM \(table) WHERE feed = ? AND version = ? LIMIT ?)
                            """, arguments: [feed, version, feed, version, batch])
                    }
                    dropped += n
                    if n < batch { break }
                }
            }
        }
        return dropped
    }

    /// Every stored feed in force, by name, with its version.
    static func all(_ db: any SQLDatabase) throws -> [String: (network: TransitNetwork, version: Int64)] {
        var out: [String: (network: TransitNetwork, version: Int64)] = [:]
        for row in try SQLRow.fetchAll(db, sql: "SELECT name, version FROM transit_feed") {
            let name: String = row["name"], version: Int64 = row["version"]
            if let network = try load(name, version: version, db) { out[name] = (network, version) }
        }
        return out
    }

    /// Version `version` of feed `name`.
    static func load(_ name: String, version: Int64, _ db: any SQLDatabase) throws -> TransitNetwork? {
        let key: SQLArguments = [name, version]
        let agencies = try SQLRow.fetchAll(db, sql: "SELECT * FROM transit_agency WHERE feed = ? AND version = ? ORDER BY n", arguments: key).map {
            TransitAgency(id: $0["id"], name: $0["name"], timeZone: $0["timezone"], language: $0["language"])
        }
        var stops: [String: TransitStop] = [:]
        try db.forEachRow(sql: "SELECT id, name, lat, lon, parent FROM transit_stop WHERE feed = ? AND version = ?", arguments: key) { r in
            stops[r["id"]] = TransitStop(id: r["id"], name: r["name"], lat: r["lat"], lon: r["lon"], parent: r["parent"])
        }
        var routes: [String: TransitRoute] = [:], served: [String: [String]] = [:]
        try db.forEachRow(sql: "SELECT * FROM transit_route WHERE feed = ? AND version = ?", arguments: key) { r in
            let id: String = r["id"], list: String = r["stops"]
            routes[id] = TransitRoute(id: id, shortName: r["short_name"], longName: r["long_name"], type: r["type"], agency: r["agency"])
            if !list.isEmpty { served[id] = list.split(separator: "\n").map(String.init) }
        }
        var trips: [(trip: String, route: String)] = []
        try db.forEachRow(sql: "SELECT id, route FROM transit_trip WHERE feed = ? AND version = ?", arguments: key) { r in
            trips.append((r["id"], r["route"]))
        }
        return TransitNetwork(agencies: agencies, stops: stops, routes: routes, stopsOfRoute: served, tripRoutes: trips)
    }
}
