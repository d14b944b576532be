import Foundation
import Realtime
import Routes
import Storage

/// How items, likes and links are stored and read back (`routes.v1`, `routes.v5`).
enum IntelRows {
    static func insert(_ item: IntelItem, shard: String, postedAt: Double, karma: Int, _ db: any SQLDatabase) throws {
        try write(item, shard: shard, postedAt: postedAt, verb: "INSERT", db)
        if let user = item.user, karma != 0 { try addKarma(user, karma, shard: shard, db) }
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
                                     points, translations, reference, shard, ended)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
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

    /// An item ended before its time (its provider withdrew it), its end written in its shard's log.
    static func end(_ id: String, at now: Double, _ db: any SQLDatabase) throws {
        try db.execute(sql: "UPDATE intel_item SET expires_at = ?, ended = 1 WHERE id = ?", arguments: [now, id])
    }

    /// Items whose expiry is written in their shard's log (`ended`, see `untold`).
    static func ended(_ ids: [String], _ db: any SQLDatabase) throws {
        for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
            try db.execute(sql: "UPDATE intel_item SET ended = 1 WHERE id IN (\(sqlPlaceholders(count: chunk.count)))", arguments: SQLArguments(chunk))
        }
    }

    /// Items of `shard` due at `now` whose end no entry of the shard's log tells yet (they fell
    /// due while no node held the shard): its owner ends them as it would have.
    static func untold(now: Double, shard: String, _ db: any SQLDatabase) throws -> [IntelItem] {
        try SQLRow.fetchAll(db, sql: "SELECT * FROM intel_item WHERE shard = ? AND ended = 0 AND expires_at <= ?", arguments: [shard, now])
            .compactMap(item)
    }

    /// Every point of an item at several, as "lat,lon;lat,lon" (NULL for one point: lat and lon say it).
    private static func pointsText(_ item: IntelItem) -> String? {
        item.points.count > 1 ? item.points.map { "\($0.lat),\($0.lon)" }.joined(separator: ";") : nil
    }

    private static func translationsText(_ item: IntelItem) -> String? {
        item.translations.isEmpty ? nil : JSON.object(item.translations.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).encoded
    }

    static func like(_ item: IntelItem, by user: String, at: Double, karma: Int, shard: String, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT INTO intel_like (item, user, at) VALUES (?, ?, ?)", arguments: [item.id, user, at])
        try db.execute(sql: "UPDATE intel_item SET expires_at = ? WHERE id = ?", arguments: [item.expiresAt, item.id])
        if case .user(let poster) = item.author, karma != 0 { try addKarma(poster, karma, shard: shard, db) }
    }

    static func comment(_ item: IntelItem, by user: String, text: String, at: Double, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT INTO intel_comment (item, user, text, at) VALUES (?, ?, ?, ?)", arguments: [item.id, user, text, at])
        try db.execute(sql: "UPDATE intel_item SET comments = comments + 1 WHERE id = ?", arguments: [item.id])
    }

    /// One direction of a link (`item` shows `other`), and karma to `item`'s poster unless they
    /// made the link: each half is written by its own item's shard.
    static func linkHalf(_ item: IntelItem, to other: String, by user: String, at: Double, karma: Int, shard: String, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT INTO intel_link (item, other, at) VALUES (?, ?, ?)", arguments: [item.id, other, at])
        if case .user(let poster) = item.author, poster != user, karma != 0 { try addKarma(poster, karma, shard: shard, db) }
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

    /// A user's karma: what every shard gave them (and what was given before shards).
    static func karma(of user: String, _ db: any SQLDatabase) throws -> Int {
        // Cast: a sum of BIGINT is NUMERIC on PostgreSQL.
        let sharded = try Int.fetchOne(db, sql: "SELECT CAST(COALESCE(SUM(points), 0) AS BIGINT) FROM karma_shard WHERE user = ?", arguments: [user]) ?? 0
        return sharded + (try Int.fetchOne(db, sql: "SELECT points FROM karma WHERE user = ?", arguments: [user]) ?? 0)
    }

    /// Karma given by `shard`: a row per user and shard, each written by one shard's owner only, so
    /// two nodes never wait on one row's lock.
    static func addKarma(_ user: String, _ points: Int, shard: String, _ db: any SQLDatabase) throws {
        try db.execute(sql: """
            INSERT INTO karma_shard (user, shard, points) VALUES (?, ?, ?)
            ON CONFLICT (user, shard) DO UPDATE SET points = karma_shard.points + excluded.points
            """, arguments: [user, shard, points])
    }

    /// The shards holding live items at `now`, or items due whose end is not told yet (`untold`:
    /// the shard's owner, once there is one, tells it).
    static func liveShards(now: Double, _ db: any SQLDatabase) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT DISTINCT shard FROM intel_item WHERE (expires_at > ? OR ended = 0) AND shard IS NOT NULL",
                                arguments: [now]))
    }

    /// A box of `intel.query` (`minLon > maxLon`: across the antimeridian).
    struct Box: Sendable {
        var minLat, minLon, maxLat, maxLon: Double

        func contains(_ p: GeoPoint) -> Bool {
            guard p.lat >= minLat && p.lat <= maxLat else { return false }
            return minLon <= maxLon ? (p.lon >= minLon && p.lon <= maxLon) : (p.lon >= minLon || p.lon <= maxLon)
        }
    }

    /// Live items with a point in `box` that happened between `since` and `until` and that
    /// `accept` takes, newest first, at most `limit` (and whether more were left out), with their
    /// likes and links. Items at one point are found by the box; items at several (few: transit
    /// alerts) are read whole and tested point by point.
    static func newest(in box: Box, since: Double?, until: Double?, now: Double, limit: Int, accept: (@Sendable (IntelItem) -> Bool)?,
                       _ db: any SQLDatabase) throws -> (items: [IntelItem], truncated: Bool) {
        let lon = box.minLon <= box.maxLon ? "lon BETWEEN ? AND ?" : "(lon >= ? OR lon <= ?)"
        let when = "expires_at > ? AND at >= ? AND at <= ?"
        let times: [SQLValue] = [now.sqlValue, (since ?? -Double.greatestFiniteMagnitude).sqlValue, (until ?? Double.greatestFiniteMagnitude).sqlValue]
        var found: [IntelItem] = []
        // Pages of the newest, until `limit` pass the filter (without a filter: one page).
        var before = Double.greatestFiniteMagnitude, beforeID = ""
        let page = accept == nil ? limit + 1 : max(200, limit)
        while found.count <= limit {
            let rows = try SQLRow.fetchAll(db, sql: """
                SELECT * FROM intel_item WHERE \(when) AND points IS NULL AND lat BETWEEN ? AND ? AND \(lon)
                  AND (at < ? OR (at = ? AND id < ?)) ORDER BY at DESC, id DESC LIMIT ?
                """, arguments: SQLArguments(times) + [box.minLat, box.maxLat, box.minLon, box.maxLon, before, before, beforeID, page])
            for row in rows { if let item = item(row), accept?(item) ?? true { found.append(item) } }
            guard rows.count == page, let last = rows.last else { break }
            before = last["at"]
            beforeID = last["id"]
        }
        for row in try SQLRow.fetchAll(db, sql: "SELECT * FROM intel_item WHERE \(when) AND points IS NOT NULL",
                                       arguments: SQLArguments(times)) {
            if let item = item(row), item.points.contains(where: box.contains), accept?(item) ?? true { found.append(item) }
        }
        found.sort { $0.at != $1.at ? $0.at > $1.at : $0.id > $1.id }
        let truncated = found.count > limit
        var chosen = Array(found.prefix(limit))
        try restore(&chosen, db)
        return (chosen, truncated)
    }

    /// The items of `ids` live at `now`, with their likes and links.
    static func items(_ ids: [String], now: Double, _ db: any SQLDatabase) throws -> [IntelItem] {
        var found = try SQLRow.fetchAll(db, sql: "SELECT * FROM intel_item WHERE id IN (\(sqlPlaceholders(count: ids.count))) AND expires_at > ?",
                                        arguments: SQLArguments(ids) + [now]).compactMap(item)
        try restore(&found, db)
        return found
    }

    /// Gives `items` their likes and links as stored.
    private static func restore(_ items: inout [IntelItem], _ db: any SQLDatabase) throws {
        guard !items.isEmpty else { return }
        let list = sqlPlaceholders(count: items.count), ids = SQLArguments(items.map(\.id))
        var likes: [String: Set<String>] = [:], links: [String: [String]] = [:]
        for row in try SQLRow.fetchAll(db, sql: "SELECT item, user FROM intel_like WHERE item IN (\(list))", arguments: ids) {
            likes[row["item"], default: []].insert(row["user"])
        }
        for row in try SQLRow.fetchAll(db, sql: "SELECT item, other FROM intel_link WHERE item IN (\(list)) ORDER BY at", arguments: ids) {
            links[row["item"], default: []].append(row["other"])
        }
        for i in items.indices {
            items[i].restore(likedBy: likes[items[i].id] ?? [], links: links[items[i].id] ?? [], expiresAt: items[i].expiresAt)
        }
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
            guard var item = item(row) else { return nil }
            item.restore(likedBy: likes[item.id] ?? [], links: links[item.id] ?? [], expiresAt: item.expiresAt)
            return item
        }
    }

    /// An `intel_item` row as an item, without its likes and links.
    private static func item(_ row: SQLRow) -> IntelItem? {
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
        return item
    }
}
