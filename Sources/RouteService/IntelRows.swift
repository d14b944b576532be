import Foundation
import GRDB
import Routes

/// How items, likes and links are stored and read back (`routes.v1`).
enum IntelRows {
    static func insert(_ item: IntelItem, postedAt: Double, karma: Int, _ db: Database) throws {
        var user: String?, source: String?
        switch item.author {
        case .user(let u): user = u
        case .provider(let s): source = s
        }
        try db.execute(sql: """
            INSERT INTO intel_item (id, lat, lon, kind, author_user, author_source, tags, modes, body, at, posted_at, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [item.id, item.point.lat, item.point.lon, item.kind.rawValue, user, source,
                             item.tags.joined(separator: ","), item.modes.map(\.rawValue).joined(separator: ","),
                             item.body, item.at, postedAt, item.expiresAt])
        if let user, karma != 0 { try addKarma(user, karma, db) }
    }

    static func like(_ item: IntelItem, by user: String, at: Double, karma: Int, _ db: Database) throws {
        try db.execute(sql: "INSERT INTO intel_like (item, user, at) VALUES (?, ?, ?)", arguments: [item.id, user, at])
        try db.execute(sql: "UPDATE intel_item SET expires_at = ? WHERE id = ?", arguments: [item.expiresAt, item.id])
        if case .user(let poster) = item.author, karma != 0 { try addKarma(poster, karma, db) }
    }

    static func comment(_ item: IntelItem, by user: String, text: String, at: Double, _ db: Database) throws {
        try db.execute(sql: "INSERT INTO intel_comment (item, user, text, at) VALUES (?, ?, ?, ?)", arguments: [item.id, user, text, at])
        try db.execute(sql: "UPDATE intel_item SET comments = comments + 1 WHERE id = ?", arguments: [item.id])
    }

    /// Both directions of a link, and karma to each item's poster but the one who linked.
    static func link(_ a: IntelItem, _ b: IntelItem, by user: String, at: Double, karma: Int, _ db: Database) throws {
        for (x, y) in [(a.id, b.id), (b.id, a.id)] {
            try db.execute(sql: "INSERT INTO intel_link (item, other, at) VALUES (?, ?, ?)", arguments: [x, y, at])
        }
        guard karma != 0 else { return }
        for item in [a, b] {
            if case .user(let poster) = item.author, poster != user { try addKarma(poster, karma, db) }
        }
    }

    /// An item's newest `limit` comments, oldest first, and whether there are older ones.
    static func comments(of item: String, limit: Int, _ db: Database) throws -> (comments: [IntelHub.Comment], truncated: Bool) {
        let newest = try Row.fetchAll(db, sql: "SELECT user, text, at FROM intel_comment WHERE item = ? ORDER BY id DESC LIMIT ?",
                                      arguments: [item, limit + 1]).map { IntelHub.Comment(user: $0["user"], text: $0["text"], at: $0["at"]) }
        return (Array(newest.prefix(limit).reversed()), newest.count > limit)
    }

    /// Deletes up to `batch` items that expired before `cutoff`, with their likes, links and
    /// comments; returns how many items went.
    static func prune(expiredBefore cutoff: Double, batch: Int, _ db: Database) throws -> Int {
        let ids = try String.fetchAll(db, sql: "SELECT id FROM intel_item WHERE expires_at < ? LIMIT ?", arguments: [cutoff, batch])
        guard !ids.isEmpty else { return 0 }
        let list = databaseQuestionMarks(count: ids.count)
        let arguments = StatementArguments(ids)
        try db.execute(sql: "DELETE FROM intel_like WHERE item IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_comment WHERE item IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_link WHERE item IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_link WHERE other IN (\(list))", arguments: arguments)
        try db.execute(sql: "DELETE FROM intel_item WHERE id IN (\(list))", arguments: arguments)
        return ids.count
    }

    static func karma(of user: String, _ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT points FROM karma WHERE user = ?", arguments: [user]) ?? 0
    }

    static func addKarma(_ user: String, _ points: Int, _ db: Database) throws {
        try db.execute(sql: "INSERT INTO karma (user, points) VALUES (?, ?) ON CONFLICT (user) DO UPDATE SET points = points + excluded.points",
                       arguments: [user, points])
    }

    /// Every item still live at `now`, with its likes and links.
    static func live(now: Double, _ db: Database) throws -> [IntelItem] {
        var likes: [String: Set<String>] = [:]
        for row in try Row.fetchAll(db, sql: """
            SELECT l.item, l.user FROM intel_like l JOIN intel_item i ON i.id = l.item WHERE i.expires_at > ?
            """, arguments: [now]) {
            likes[row["item"], default: []].insert(row["user"])
        }
        var links: [String: [String]] = [:]
        for row in try Row.fetchAll(db, sql: """
            SELECT l.item, l.other FROM intel_link l JOIN intel_item i ON i.id = l.item WHERE i.expires_at > ? ORDER BY l.at
            """, arguments: [now]) {
            links[row["item"], default: []].append(row["other"])
        }
        return try Row.fetchAll(db, sql: "SELECT * FROM intel_item WHERE expires_at > ?", arguments: [now]).compactMap { row in
            guard let point = GeoPoint(lat: row["lat"], lon: row["lon"]), let kind = IntelKind(rawValue: row["kind"]) else { return nil }
            let user: String? = row["author_user"]
            let author: IntelItem.Author = user.map { .user($0) } ?? .provider(source: row["author_source"] ?? "")
            let tags: String = row["tags"], modes: String = row["modes"]
            var item = IntelItem(id: row["id"], point: point, kind: kind, author: author,
                                 tags: tags.isEmpty ? [] : tags.split(separator: ",").map(String.init),
                                 modes: modes.split(separator: ",").compactMap { TravelMode(rawValue: String($0)) },
                                 body: row["body"], at: row["at"], expiresAt: row["expires_at"])
            item.comments = row["comments"]
            item.restore(likedBy: likes[item.id] ?? [], links: links[item.id] ?? [], expiresAt: row["expires_at"])
            return item
        }
    }
}
