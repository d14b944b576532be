import Foundation
import HubbubCrypto
import Realtime
import Routes
import Storage

/// A traveller's destinations (seed 003 UC1): each `route.subscribe` remembers where it went, with
/// its label and filter, so the app can offer them again, most recent first.
enum Destinations {
    /// A destination's id for one user: its point rounded like a corridor's (about 11 m).
    static func id(of to: GeoPoint) -> String {
        let text = "d1|\(Int((to.lat * 10_000).rounded())),\(Int((to.lon * 10_000).rounded()))"
        return "d" + Base64.encodeURL(Array(Digest.sha256(Array(text.utf8)).prefix(9)))
    }

    /// Remembers (or refreshes) `to` for `user`; a label given replaces the old one.
    static func remember(user: String, to: GeoPoint, label: String?, filter: IntelFilter, now: Double, _ db: any SQLDatabase) throws -> String {
        let id = id(of: to)
        try db.execute(sql: """
            INSERT INTO destination (user, id, to_lat, to_lon, label, filter, last_used) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (user, id) DO UPDATE SET label = COALESCE(excluded.label, destination.label), filter = excluded.filter,
                last_used = excluded.last_used, to_lat = excluded.to_lat, to_lon = excluded.to_lon
            """, arguments: [user, id, to.lat, to.lon, label, filter.json.encoded, now])
        return id
    }

    /// `user`'s destinations, most recently used first.
    static func list(user: String, limit: Int, _ db: any SQLDatabase) throws -> [JSON] {
        try SQLRow.fetchAll(db, sql: """
            SELECT id, to_lat, to_lon, label, filter, last_used FROM destination WHERE user = ? ORDER BY last_used DESC, id LIMIT ?
            """, arguments: [user, limit]).map { row in
            let filterText: String = row["filter"]
            return ["destination": .string(row["id"]), "to": ["lat": .double(row["to_lat"]), "lon": .double(row["to_lon"])],
                    "label": (row["label"] as String?).map { .string($0) } ?? .null,
                    "filter": (try? JSONParser.parse(Array(filterText.utf8))) ?? [:], "lastUsed": .double(row["last_used"])]
        }
    }

    /// Whether `user` has destination `id`.
    static func exists(user: String, id: String, _ db: any SQLDatabase) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM destination WHERE user = ? AND id = ?", arguments: [user, id]) ?? false
    }

    /// Forgets a destination; false when `user` had none of that id.
    static func forget(user: String, id: String, _ db: any SQLDatabase) throws -> Bool {
        try db.changes(sql: "DELETE FROM destination WHERE user = ? AND id = ?", arguments: [user, id]) > 0
    }
}

extension IntelFilter {
    /// As `route.subscribe` takes it: only the lists that are set.
    var json: JSON {
        var fields: [(String, JSON)] = []
        if !kinds.isEmpty { fields.append(("kinds", .array(kinds.map(\.rawValue).sorted().map { .string($0) }))) }
        if !origins.isEmpty { fields.append(("origins", .array(origins.map(\.rawValue).sorted().map { .string($0) }))) }
        if !modes.isEmpty { fields.append(("modes", .array(modes.map(\.rawValue).sorted().map { .string($0) }))) }
        if !tags.isEmpty { fields.append(("tags", .array(tags.sorted().map { .string($0) }))) }
        return .object(fields)
    }
}
