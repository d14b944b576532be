import Foundation
import Realtime
import Routes
import Storage

/// How items, likes and links are stored and read back (`routes.v1`, `routes.v5`).
enum IntelRows {
    static func insert(_ item: IntelItem, shard: String, postedAt: Double, karma: Int, _ db: any SQLDatabase) throws {
        try write(item, shard: shard, postedAt: postedAt, verb: "INSERT", db)
        if let user = item.user, karma != 0 { try addKarma(user, karma, db) }
    }

    /// A named item added (or back after it ended): whatever its id held before goes.
    static func replace(_ item: IntelItem, shard: String, postedAt: Double, _ db: any SQLDatabase) throws {
        for table in ["intel_like", "intel_comment", "intel_link"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE item = ?", arguments: [item.id])
        }
        try db.execute(sql: "DELETE FROM intel_link WHERE other = ?", arguments: [item.id])
        try write(item, shard: shard, postedAt: postedAt, verb: "INSERT OR REPLACE", db)
    }

    private static func write(_ item: IntelItem, shard: String, postedAt: Double, verb: String, _ db: any SQLDatabase) throws {
        var source: String?
        if case .provider(let s) = item.author { source = s }
        try db.execute(sql: """
            \(verb) INTO intel_item (id, lat, lon, kind, author_user, author_source, tags, modes, body, at, posted_at, expires_at,
                                     points, translations, reference, shard)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [item.id, item.point.lat, item.point.lon, item.kind.rawValue, item.user, source,
                             item.tags.joined(separator: ","), item.modes.map(\.rawValue).joined(separator: ","),
                             item.body, item.at, postedAt, item.expiresAt, pointsText(item), translationsText(item), item.reference, shard])
    }

    /// A named item revised by its provider: places, text, tags, modes, end.
    static func revise(_ item: IntelItem, _ db: any SQLDatabase) throws {
        try db.execute(sql: """
            UPDATE intel_item SET lat = ?, lon = ?, points = ?, body = ?, translations = ?, tags = ?, modes = ?, expires_at = ? WHERE id = ?
            """, arguments: [item.point.lat, item.point.lon, pointsText(item), item.body, translationsText(item),
                             item.tags.joined(separator: ","), item.modes.map(\.rawValue).joined(separator: ","), item.expiresAt, item.id])
    }

    /// An item ended before its time (its provider withdrew it).
    static func end(_ id: String, at now: Double, _ db: any SQLDatabase) throws {
        try db.execute(sql: "UPDATE intel_item SET expires_at = ? WHERE id = ?", arguments: [now, id])
    }

    /// Every point of an item at several, as "lat,lon;lat,lon" (NULL for one point: lat and lon say it).
    private static func pointsText(_ item: IntelItem) -> String? {
        item.points.count > 1 ? item.points.map { "\($0.lat),\($0.lon)" }.joined(separator: ";") : nil
    }

    private static func translationsText(_ item: IntelItem) -> String? {
        item.translations.isEmpty ? nil : JSON.object(item.translations.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).encoded
    }

    static func like(_ item: IntelItem, by user: String, at: Double, karma: Int, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT INTO intel_like (item, user, at) VALUES (?, ?, ?)", arguments: [item.id, user, at])
        try db.execute(sql: "UPDATE intel_item SET expires_at = ? WHERE id = ?", arguments: [item.expiresAt, item.id])
        if case .user(let poster) = item.author, karma != 0 { try addKarma(poster, karma, db) }
    }

    static func comment(_ item: IntelItem, by user: String, text: String, at: Double, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT INTO intel_comment (item, user, text, at) VALUES (?, ?, ?, ?)", arguments: [item.id, user, text, at])
        try db.execute(sql: "UPDATE intel_item SET comments = comments + 1 WHERE id = ?", arguments: [item.id])
    }

    /// Both directions of a link, and karma to each item's poster but the one who linked.
    static func link(_ a: IntelItem, _ b: IntelItem, by user: String, at: Double, karma: Int, _ db: any SQLDatabase) throws {
        for (x, y) in [(a.id, b.id), (b.id, a.id)] {
            try db.execute(sql: "INSERT INTO intel_link (item, other, at) VALUES (?, ?, ?)", arguments: [x, y, at])
        }
        guard karma != 0 else { return }
        for item in [a, b] {
            if case .user(let poster) = item.author, poster != user { try addKarma(poster, karma, db) }
        }
    }

    /// An item's newest `limit` comments, oldest first, and whether there are older ones.
    static func comments(of item: String, limit: Int, _ db: any SQLDatabase) throws -> (comments: [IntelHub.Comment], truncated: Bool) {
        let newest = try SQLRow.fetchAll(db, sql: "SELECT user, text, at FROM intel_comment WHERE item = ? ORDER BY id DESC LIMIT ?",
                                      arguments: [item, limit + 1]).map { IntelHub.Comment(user: $0["user"], text: $0["text"], at: $0["at"]) }
        return (Array(newest.prefix(limit).reversed()), newest.count > limit)
    }

    /// Deletes up to `batch` items that expired before `cutoff`, with their likes, links and
    /// comments; returns how many items went.
    static func prune(expiredBefore cutoff: Double, batch: Int, _ db: any SQLDatabase) throws -> Int {
        let ids = try String.fetchAll(db, sql: "SELECT id FROM intel_item WHERE expires_at < ? LIMIT ?", arguments: [cutoff, batch])
        guard !ids.isEmpty else { return 0 }
        let list = sqlPlaceholders(count: ids.count)
        let arguments = SQLArguments(ids)
        try db.execute(sql: "DELETE FROM intel_like WHERE item IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_comment WHERE item IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_link WHERE item IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_link WHERE other IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_item WHERE id IN (\(list))", arguments: arguments)
        return ids.count
    }

    static func karma(of user: String, _ db: any SQLDatabase) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT points FROM karma WHERE user = ?", arguments: [user]) ?? 0
    }

    static func addKarma(_ user: String, _ points: Int, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT INTO karma (user, points) VALUES (?, ?) ON CONFLICT (user) DO UPDATE SET points = karma.points + excluded.points",
                       arguments: [user, points])
    }

    /// Where a live item is stored, and in which shard.
    struct Placed: Sendable {
        var id: String
        var point: GeoPoint
        var named: Bool
        var shard: String?
    }

    /// Every item live at `now`, where it is, and the shard it is stored in.
    static func shards(now: Double, _ db: any SQLDatabase) throws -> [Placed] {
        try SQLRow.fetchAll(db, sql: "SELECT id, lat, lon, reference, shard FROM intel_item WHERE expires_at > ?", arguments: [now]).compactMap { row in
            guard let point = GeoPoint(lat: row["lat"], lon: row["lon"]) else { return nil }
            return Placed(id: row["id"], point: point, named: (row["reference"] as String?) != nil, shard: row["shard"])
        }
    }

    /// Gives live items stored without their shard (written before shards, or under another
    /// `routes.shardDegrees`) the one they belong to; returns how many moved. Inside a write.
    static func place(in shards: IntelShards, now: Double, _ db: any SQLDatabase) throws -> Int {
        let misplaced = try Self.shards(now: now, db).filter { shards.shard(ofStored: $0) != $0.shard }
        for m in misplaced { try db.execute(sql: "UPDATE intel_item SET shard = ? WHERE id = ?", arguments: [shards.shard(ofStored: m), m.id]) }
        return misplaced.count
    }

    /// Every item still live at `now` (in `shard` only, if given), with its likes and links.
    static func live(now: Double, shard: String? = nil, _ db: any SQLDatabase) throws -> [IntelItem] {
        let inShard = shard == nil ? "" : " AND i.shard = ?"
        let arguments: SQLArguments = shard.map { [now, $0] } ?? [now]
        var likes: [String: Set<String>] = [:]
        for row in try SQLRow.fetchAll(db, sql: """
            SELECT l.item, l.user FROM intel_like l JOIN intel_item i ON i.id = l.item WHERE i.expires_at > ?\(inShard)
            """, arguments: arguments) {
            likes[row["item"], default: []].insert(row["user"])
        }
        var links: [String: [String]] = [:]
        for row in try SQLRow.fetchAll(db, sql: """
            SELECT l.item, l.other FROM intel_link l JOIN intel_item i ON i.id = l.item WHERE i.expires_at > ?\(inShard) ORDER BY l.at
            """, arguments: arguments) {
            links[row["item"], default: []].append(row["other"])
        }
        return try SQLRow.fetchAll(db, sql: "SELECT * FROM intel_item i WHERE expires_at > ?\(inShard)", arguments: arguments).compactMap { row in
            guard let point = GeoPoint(lat: row["lat"], lon: row["lon"]), let kind = IntelKind(rawValue: row["kind"]) else { return nil }
            let user: String? = row["author_user"]
            let author: IntelItem.Author = user.map { .user($0) } ?? .provider(source: row["author_source"] ?? "")
            let tags: String = row["tags"], modes: String = row["modes"]
            var points = [point]
            if let text: String = row["points"] {
                let more = text.split(separator: ";").compactMap { pair -> GeoPoint? in
                    let parts = pair.split(separator: ",")
                    guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]) else { return nil }
                    return GeoPoint(lat: lat, lon: lon)
                }
                if !more.isEmpty { points = more }
            }
            var item = IntelItem(id: row["id"], points: points, kind: kind, author: author,
                                 tags: tags.isEmpty ? [] : tags.split(separator: ",").map(String.init),
                                 modes: modes.split(separator: ",").compactMap { TravelMode(rawValue: String($0)) },
                                 body: row["body"], at: row["at"], expiresAt: row["expires_at"])
            item.comments = row["comments"]
            item.reference = row["reference"]
            if let text: String = row["translations"], case .object(let fields)? = try? JSONParser.parse(Array(text.utf8)) {
                for (tag, value) in fields { if case .string(let t) = value { item.translations[tag] = t } }
            }
            item.restore(likedBy: likes[item.id] ?? [], links: links[item.id] ?? [], expiresAt: row["expires_at"])
            return item
        }
    }
}

extension IntelShards {
    /// The shard an item stored at `placed` belongs to.
    func shard(ofStored placed: IntelRows.Placed) -> String { placed.named ? Self.named : shard(of: placed.point) }
}
