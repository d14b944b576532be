import GRDB
import Realtime
import Tonight

/// How the catalog's records are stored and read back (`tonight.v1`). Lists of ids are joined with
/// the unit separator, which no feed text holds.
enum CatalogRows {
    static let separator = "\u{1F}"

    static func join(_ ids: [String]) -> String { ids.joined(separator: separator) }
    static func split(_ text: String) -> [String] { text.isEmpty ? [] : text.components(separatedBy: separator) }

    /// Writes a record over any of the same id (statements prepared once per connection).
    static func upsert(_ record: FeedRecord, _ db: Database) throws {
        switch record {
        case .category(let c):
            try db.cachedStatement(sql: """
                INSERT INTO tonight_category (id, name, parent) VALUES (?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, parent = excluded.parent
                """)
                .execute(arguments: [c.id, c.name, c.parent])
        case .artist(let a):
            try db.cachedStatement(sql: """
                INSERT INTO tonight_artist (id, name, categories, image_url, url) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, categories = excluded.categories, image_url = excluded.image_url,
                    url = excluded.url
                """)
                .execute(arguments: [a.id, a.name, join(a.categories), a.imageURL, a.url])
        case .venue(let v):
            try db.cachedStatement(sql: """
                INSERT INTO tonight_venue (id, name, street, city, state, zip, image_url, url, lat, lon, time_zone)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, street = excluded.street, city = excluded.city, state = excluded.state,
                    zip = excluded.zip, image_url = excluded.image_url, url = excluded.url, lat = excluded.lat, lon = excluded.lon,
                    time_zone = excluded.time_zone
                """).execute(arguments: [v.id, v.name, v.street, v.city, v.state, v.zip, v.imageURL, v.url, v.latitude, v.longitude, v.timeZone])
        case .event(let e):
            try db.cachedStatement(sql: """
                INSERT INTO tonight_event (id, performers, categories, venue, start_local, status, on_sale, name, url,
                    min_price, max_price, currency) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET performers = excluded.performers, categories = excluded.categories, venue = excluded.venue,
                    start_local = excluded.start_local, status = excluded.status, on_sale = excluded.on_sale, name = excluded.name,
                    url = excluded.url, min_price = excluded.min_price, max_price = excluded.max_price, currency = excluded.currency
                """).execute(arguments: [e.id, join(e.performers), join(e.categories), e.venue, e.start.description, e.status.rawValue,
                                 e.onSale?.description, e.name, e.url, e.minPrice, e.maxPrice, e.currency])
        }
    }

    /// Everything stored, for the catalog at start-up.
    static func all(_ db: Database) throws -> [FeedRecord] {
        var out: [FeedRecord] = []
        for r in try Row.fetchAll(db, sql: "SELECT * FROM tonight_category") {
            out.append(.category(FeedCategory(id: r["id"], name: r["name"], parent: r["parent"])))
        }
        for r in try Row.fetchAll(db, sql: "SELECT * FROM tonight_artist") {
            out.append(.artist(FeedArtist(id: r["id"], name: r["name"], categories: split(r["categories"]), imageURL: r["image_url"], url: r["url"])))
        }
        for r in try Row.fetchAll(db, sql: "SELECT * FROM tonight_venue") {
            out.append(.venue(FeedVenue(id: r["id"], name: r["name"], street: r["street"], city: r["city"], state: r["state"], zip: r["zip"],
                                        imageURL: r["image_url"], url: r["url"], latitude: r["lat"], longitude: r["lon"], timeZone: r["time_zone"])))
        }
        for r in try Row.fetchAll(db, sql: "SELECT * FROM tonight_event") {
            let start: String = r["start_local"]
            guard let when = LocalDateTime(iso: start), let status = EventStatus(rawValue: r["status"]) else { continue }
            out.append(.event(FeedEvent(id: r["id"], performers: split(r["performers"]), categories: split(r["categories"]), venue: r["venue"],
                                        start: when, status: status, onSale: (r["on_sale"] as String?).flatMap { LocalDateTime(iso: $0) },
                                        name: r["name"], url: r["url"], minPrice: r["min_price"], maxPrice: r["max_price"], currency: r["currency"])))
        }
        return out
    }

    /// Notes a batch's added and changed events (with their earlier values), whose users are still
    /// to be told; returns the note's id.
    static func note(_ changes: some Collection<(old: FeedEvent?, new: FeedEvent)>, _ db: Database) throws -> Int64 {
        func text(_ s: String?) -> JSON { s.map(JSON.string) ?? .null }
        func int(_ n: Int?) -> JSON { n.map(JSON.int) ?? .null }
        let entries = JSON.array(changes.map { old, new in
            .array([.string(new.id), .int(old == nil ? 1 : 0), text(old?.venue), text(old?.start.description), text(old?.status.rawValue),
                    int(old?.minPrice), int(old?.maxPrice), text(old?.currency)])
        })
        try db.execute(sql: "INSERT INTO tonight_feed_note (changes) VALUES (?)", arguments: [entries.encoded])
        return db.lastInsertedRowID
    }

    /// The notes not yet told, oldest first, against the catalog's current events (an event noted
    /// twice keeps its first note's earlier values: the ones its users last heard of).
    static func pendingChanges(_ db: Database, current: (String) -> FeedEvent?) throws -> (changes: [(old: FeedEvent?, new: FeedEvent)], notes: [Int64]) {
        var out: [(old: FeedEvent?, new: FeedEvent)] = [], notes: [Int64] = [], seen = Set<String>()
        for r in try Row.fetchAll(db, sql: "SELECT note, changes FROM tonight_feed_note ORDER BY note") {
            notes.append(r["note"])
            let text: String = r["changes"]
            guard case .array(let entries)? = try? JSONParser.parse(Array(text.utf8)) else { continue }
            for case .array(let f) in entries where f.count == 8 {
                guard case .string(let id) = f[0], seen.insert(id).inserted, let new = current(id) else { continue }
                guard f[1] == .int(0) else { out.append((nil, new)); continue }
                var old = new
                if case .string(let venue) = f[2] { old.venue = venue }
                if case .string(let start) = f[3], let t = LocalDateTime(iso: start) { old.start = t }
                if case .string(let status) = f[4], let s = EventStatus(rawValue: status) { old.status = s }
                func int(_ j: JSON) -> Int? { if case .int(let n) = j { n } else { nil } }
                (old.minPrice, old.maxPrice) = (int(f[5]), int(f[6]))
                old.currency = if case .string(let c) = f[7] { c } else { nil }
                out.append((old, new))
            }
        }
        return (out, notes)
    }

    /// The users of these notes' events have been told.
    static func told(_ notes: [Int64], _ db: Database) throws {
        let delete = try db.cachedStatement(sql: "DELETE FROM tonight_feed_note WHERE note = ?")
        for n in notes { try delete.execute(arguments: [n]) }
    }

    /// Replaces `artist`'s recommendations.
    static func replaceRecommendations(of artist: String, with list: [EventCatalog.Recommendation], _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM tonight_affinity WHERE artist = ?").execute(arguments: [artist])
        let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO tonight_affinity (artist, recommended, score) VALUES (?, ?, ?)")
        for r in list { try insert.execute(arguments: [artist, r.artist, r.score]) }
    }

    /// Every artist's recommendations, for the catalog at start-up.
    static func recommendations(_ db: Database) throws -> [String: [EventCatalog.Recommendation]] {
        var out: [String: [EventCatalog.Recommendation]] = [:]
        for r in try Row.fetchAll(db, sql: "SELECT artist, recommended, score FROM tonight_affinity") {
            out[r["artist"], default: []].append(EventCatalog.Recommendation(artist: r["recommended"], score: r["score"]))
        }
        return out
    }
}
