import Foundation
import Realtime
import RoomLog
import Storage
import Tonight
import WebSocket

/// How event-goers are stored (`tonight.v3`) and read back.
enum GoerRows {
    /// Every goer with preferences, favourites or plans, for the audience index at start-up.
    static func all(_ db: any SQLDatabase) throws -> [EventGoer] {
        var goers: [String: EventGoer] = [:]
        for r in try SQLRow.fetchAll(db, sql: "SELECT user, lat, lon, radius_km, max_price, categories FROM tonight_goer") {
            let user: String = r["user"]
            var g = EventGoer(user: user)
            if let lat: Double = r["lat"], let lon: Double = r["lon"], let km: Double = r["radius_km"] {
                g.prefs = Preferences(location: Place(lat: lat, lon: lon), radiusKm: km, maxPrice: r["max_price"],
                                      categories: Set(CatalogRows.split(r["categories"])))
            }
            goers[user] = g
        }
        for r in try SQLRow.fetchAll(db, sql: "SELECT user, kind, id FROM tonight_favorite") {
            let user: String = r["user"], kind: String = r["kind"], id: String = r["id"]
            if kind == FavoriteKind.artist.rawValue { goers[user, default: EventGoer(user: user)].artists.insert(id) } else {
                goers[user, default: EventGoer(user: user)].categories.insert(id)
            }
        }
        for r in try SQLRow.fetchAll(db, sql: "SELECT user, event, followed, at FROM tonight_plan") {
            let user: String = r["user"], event: String = r["event"]
            if (r["followed"] as Int) == 1 { goers[user, default: EventGoer(user: user)].followed[event] = r["at"] } else {
                goers[user, default: EventGoer(user: user)].dismissed.insert(event)
            }
        }
        return Array(goers.values)
    }

    /// The user's row, made with a fresh epoch if it is their first.
    static func ensure(_ user: String, epoch: String, _ db: any SQLDatabase) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO tonight_goer (user, epoch) VALUES (?, ?)", arguments: [user, epoch])
    }

    static func savePrefs(_ user: String, _ p: Preferences, epoch: String, _ db: any SQLDatabase) throws {
        try ensure(user, epoch: epoch, db)
        try db.execute(sql: "UPDATE tonight_goer SET lat = ?, lon = ?, radius_km = ?, max_price = ?, categories = ? WHERE user = ?",
                       arguments: [p.location.lat, p.location.lon, p.radiusKm, p.maxPrice, CatalogRows.join(p.categories.sorted()), user])
    }

    /// Adds or removes a favourite; returns whether anything changed.
    static func setFavorite(_ user: String, _ kind: FavoriteKind, _ id: String, _ on: Bool, epoch: String, _ db: any SQLDatabase) throws -> Bool {
        try ensure(user, epoch: epoch, db)
        if on {
            return try db.changes(sql: "INSERT OR IGNORE INTO tonight_favorite (user, kind, id) VALUES (?, ?, ?)", arguments: [user, kind.rawValue, id]) > 0
        }
        return try db.changes(sql: "DELETE FROM tonight_favorite WHERE user = ? AND kind = ? AND id = ?", arguments: [user, kind.rawValue, id]) > 0
    }

    /// Follows (with a reminder due at `remindAt`, if any), dismisses, or forgets a plan (`nil`).
    static func setPlan(_ user: String, _ event: String, followed: Bool?, at: Double, remindAt: Double?, epoch: String, _ db: any SQLDatabase) throws {
        try ensure(user, epoch: epoch, db)
        try db.execute(sql: "DELETE FROM tonight_reminder WHERE user = ? AND event = ?", arguments: [user, event])
        guard let followed else {
            try db.execute(sql: "DELETE FROM tonight_plan WHERE user = ? AND event = ?", arguments: [user, event])
            return
        }
        try db.execute(sql: "INSERT OR REPLACE INTO tonight_plan (user, event, followed, at) VALUES (?, ?, ?, ?)",
                       arguments: [user, event, followed ? 1 : 0, at])
        if followed, let remindAt {
            try db.execute(sql: "INSERT INTO tonight_reminder (user, event, due) VALUES (?, ?, ?)", arguments: [user, event, remindAt])
        }
    }

    /// The user: room's head as stored: its epoch and last seq.
    static func head(_ user: String, _ db: any SQLDatabase) throws -> RoomHead? {
        try SQLRow.fetchOne(db, sql: "SELECT epoch, seq FROM tonight_goer WHERE user = ?", arguments: [user]).map {
            RoomHead(seq: UInt64($0["seq"] as Int64), epoch: $0["epoch"])
        }
    }

    /// Reminders due by `now`: (user, event).
    static func dueReminders(by now: Double, limit: Int, _ db: any SQLDatabase) throws -> [(String, String)] {
        try SQLRow.fetchAll(db, sql: "SELECT user, event FROM tonight_reminder WHERE due <= ? ORDER BY due LIMIT ?", arguments: [now, limit])
            .map { ($0["user"], $0["event"]) }
    }

    /// Everything of `user`'s tonight state (account deleted).
    static func erase(_ user: String, _ db: any SQLDatabase) throws {
        for table in ["tonight_goer", "tonight_favorite", "tonight_plan", "tonight_pushed", "tonight_user_push", "tonight_reminder"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE user = ?", arguments: [user])
        }
    }
}

/// The `user:` rooms' log, for the feed: each user's head in `tonight_goer`, their pushes in
/// `tonight_user_push`, kept `tonight.userHistoryCount` / `tonight.userHistoryHours` (much longer
/// than the room log's retention: a notification made while the user was away is still there).
struct GoerStreamLog: RoomLogSource, RoomLogTable {
    let store: Store
    /// How many pushes, and how old, each stream keeps (`append` trims past it).
    var keep = EventGoers.Configuration().history

    /// Writes each user's pushes, moves their head on (fenced: only from the seq and epoch the
    /// pushes follow) and trims what is past `keep`, then tells the other nodes once committed.
    func append(rooms: [[LoggedPush]], _ db: any SQLDatabase) throws {
        let prefix = TonightPush.userRoom("")
        for pushes in rooms {
            guard let first = pushes.first, let last = pushes.last, first.room.hasPrefix(prefix) else { continue }
            let user = String(first.room.dropFirst(prefix.count))
            for p in pushes {
                try db.execute(sql: "INSERT INTO tonight_user_push (user, seq, at, payload) VALUES (?, ?, ?, ?)",
                               arguments: [user, Int64(p.seq), p.at, p.message.payload])
            }
            guard try db.changes(sql: "UPDATE tonight_goer SET seq = ? WHERE user = ? AND seq = ? AND epoch = ?",
                                 arguments: [Int64(last.seq), user, Int64(first.seq - 1), first.epoch]) == 1 else {
                throw RoomLogError.fenced(room: first.room, expected: RoomHead(seq: first.seq - 1, epoch: first.epoch))
            }
            try db.execute(sql: "DELETE FROM tonight_user_push WHERE user = ? AND (seq <= ? OR at < ?)",
                           arguments: [user, Int64(last.seq) - Int64(keep.count), last.at - keep.maxAgeSeconds])
            try RoomLogRows.notify(pushes, db)
        }
    }

    func heads(of rooms: [String]) async throws -> [String: RoomHead] {
        let prefix = TonightPush.userRoom("")
        let users = rooms.compactMap { $0.hasPrefix(prefix) ? String($0.dropFirst(prefix.count)) : nil }
        guard !users.isEmpty else { return [:] }
        return try await store.read { db in
            var out: [String: RoomHead] = [:]
            for chunk in stride(from: 0, to: users.count, by: 500).map({ Array(users[$0..<min($0 + 500, users.count)]) }) {
                for r in try SQLRow.fetchAll(db, sql: "SELECT user, epoch, seq FROM tonight_goer WHERE user IN (\(sqlPlaceholders(count: chunk.count)))",
                                             arguments: SQLArguments(chunk)) {
                    out[TonightPush.userRoom(r["user"] as String)] = RoomHead(seq: UInt64(r["seq"] as Int64), epoch: r["epoch"])
                }
            }
            return out
        }
    }

    func read(_ room: String, epoch: String, after seq: UInt64, limit: Int) async throws -> [LoggedPush] {
        let user = String(room.dropFirst(5))
        return try await store.read { db in
            guard try GoerRows.head(user, db)?.epoch == epoch else { return [] }
            return try SQLRow.fetchAll(db, sql: "SELECT seq, payload, at FROM tonight_user_push WHERE user = ? AND seq > ? ORDER BY seq LIMIT ?",
                                       arguments: [user, Int64(seq), limit]).map { r in
                LoggedPush(room: room, epoch: epoch, seq: UInt64(r["seq"] as Int64), at: r["at"],
                           message: OutboundMessage(kind: .text, payload: r["payload"]))
            }
        }
    }
}

/// What a user may favour.
enum FavoriteKind: String, Sendable {
    case artist, category
}
