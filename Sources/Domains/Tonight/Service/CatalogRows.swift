import Realtime
import Storage
import Tonight

/// How the catalog's records are stored and read back (`tonight.v1`). Lists of ids are joined with
/// the unit separator, which no feed text holds.
enum CatalogRows {
    static let separator = "\u{1F}"

    static func join(_ ids: [String]) -> String { ids.joined(separator: separator) }
    static func split(_ text: String) -> [String] { text.isEmpty ? [] : text.components(separatedBy: separator) }

    /// Writes a record to its row (`EventCatalog.row(for:)`), over what the row held (statements
    /// prepared once per connection, values bound through SQLite's C API: a feed writes a hundred
    /// thousand of these in a second).
    static func upsert(_ record: FeedRecord, row: Int64, _ db: any SQLDatabase) throws {
        switch record {
        case .category(let c):
            try run(db, "INSERT OR REPLACE INTO tonight_category (row, id, name, parent) VALUES (?, ?, ?, ?)") { b in
                b.integer(row); b.text(c.id); b.text(c.name); b.text(c.parent)
            }
        case .artist(let a):
            try run(db, "INSERT OR REPLACE INTO tonight_artist (row, id, name, categories, image_url, url) VALUES (?, ?, ?, ?, ?, ?)") { b in
                b.integer(row); b.text(a.id); b.text(a.name); b.text(join(a.categories)); b.text(a.imageURL); b.text(a.url)
            }
        case .venue(let v):
            try run(db, """
                INSERT OR REPLACE INTO tonight_venue (row, id, name, street, city, state, zip, image_url, url, lat, lon, time_zone)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """) { b in
                b.integer(row); b.text(v.id); b.text(v.name); b.text(v.street); b.text(v.city); b.text(v.state); b.text(v.zip); b.text(v.imageURL)
                b.text(v.url); b.double(v.latitude); b.double(v.longitude); b.text(v.timeZone)
            }
        case .event(let e):
            try run(db, """
                INSERT OR REPLACE INTO tonight_event (row, id, performers, categories, venue, start_local, status, on_sale, name, url,
                    min_price, max_price, currency) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """) { b in
                b.integer(row); b.text(e.id); b.text(join(e.performers)); b.text(join(e.categories)); b.text(e.venue); b.text(e.start.description)
                b.text(e.status.rawValue); b.text(e.onSale?.description); b.text(e.name); b.text(e.url); b.integer(e.minPrice); b.integer(e.maxPrice)
                b.text(e.currency)
            }
        }
    }

    /// Runs a cached statement once with the values `bind` gives it (no array of values per row:
    /// the ingest's hot loop).
    private static func run(_ db: any SQLDatabase, _ sql: String, _ bind: (inout any SQLBinder) -> Void) throws {
        try db.cachedStatement(sql: sql).run(bind)
    }

    /// Everything stored with its row, for the catalog at start-up.
    static func all(_ db: any SQLDatabase) throws -> [(row: Int64, record: FeedRecord)] {
        var out: [(row: Int64, record: FeedRecord)] = []
        for r in try SQLRow.fetchAll(db, sql: "SELECT * FROM tonight_category") {
            out.append((r["row"], .category(FeedCategory(id: r["id"], name: r["name"], parent: r["parent"]))))
        }
        for r in try SQLRow.fetchAll(db, sql: "SELECT * FROM tonight_artist") {
            out.append((r["row"], .artist(FeedArtist(id: r["id"], name: r["name"], categories: split(r["categories"]), imageURL: r["image_url"],
                                                     url: r["url"]))))
        }
        for r in try SQLRow.fetchAll(db, sql: "SELECT * FROM tonight_venue") {
            out.append((r["row"], .venue(FeedVenue(id: r["id"], name: r["name"], street: r["street"], city: r["city"], state: r["state"],
                                                   zip: r["zip"], imageURL: r["image_url"], url: r["url"], latitude: r["lat"], longitude: r["lon"],
                                                   timeZone: r["time_zone"]))))
        }
        for r in try SQLRow.fetchAll(db, sql: "SELECT * FROM tonight_event") {
            let start: String = r["start_local"]
            guard let when = LocalDateTime(iso: start), let status = EventStatus(rawValue: r["status"]) else { continue }
            out.append((r["row"], .event(FeedEvent(id: r["id"], performers: split(r["performers"]), categories: split(r["categories"]), venue: r["venue"],
                                                   start: when, status: status, onSale: (r["on_sale"] as String?).flatMap { LocalDateTime(iso: $0) },
                                                   name: r["name"], url: r["url"], minPrice: r["min_price"], maxPrice: r["max_price"],
                                                   currency: r["currency"]))))
        }
        return out
    }

    /// Notes a batch's added and changed events (with their earlier values), whose users are still
    /// to be told; returns the note's id.
    static func note(_ changes: some Collection<(old: FeedEvent?, new: FeedEvent)>, _ db: any SQLDatabase) throws -> Int64 {
        func text(_ s: String?) -> JSON { s.map(JSON.string) ?? .null }
        func int(_ n: Int?) -> JSON { n.map(JSON.int) ?? .null }
        let entries = JSON.array(changes.map { old, new in
            guard let old else { return .string(new.id) } // added
            return .array([.string(new.id), .int(0), text(old.venue), text(old.start.description), text(old.status.rawValue),
                           int(old.minPrice), int(old.maxPrice), text(old.currency)])
        })
        return try db.insert(sql: "INSERT INTO tonight_feed_note (changes) VALUES (?)", arguments: [entries.encoded], returning: "note")
    }

    /// The notes not yet told, oldest first, against the catalog's current events (an event noted
    /// twice keeps its first note's earlier values: the ones its users last heard of).
    static func pendingChanges(_ db: any SQLDatabase, current: (String) -> FeedEvent?) throws -> (changes: [(old: FeedEvent?, new: FeedEvent)], notes: [Int64]) {
        var out: [(old: FeedEvent?, new: FeedEvent)] = [], notes: [Int64] = [], seen = Set<String>()
        for r in try SQLRow.fetchAll(db, sql: "SELECT note, changes FROM tonight_feed_note ORDER BY note") {
            notes.append(r["note"])
            let text: String = r["changes"]
            guard case .array(let entries)? = try? JSONParser.parse(Array(text.utf8)) else { continue }
            for entry in entries {
                if case .string(let id) = entry { // added
                    if seen.insert(id).inserted, let new = current(id) { out.append((nil, new)) }
                    continue
                }
                guard case .array(let f) = entry, f.count == 8, case .string(let id) = f[0], seen.insert(id).inserted, let new = current(id) else { continue }
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
    static func told(_ notes: [Int64], _ db: any SQLDatabase) throws {
        let delete = try db.cachedStatement(sql: "DELETE FROM tonight_feed_note WHERE note = ?")
        for n in notes { try delete.execute(arguments: [n]) }
    }

    /// Replaces `artist`'s recommendations.
    static func replaceRecommendations(of artist: String, with list: [EventCatalog.Recommendation], _ db: any SQLDatabase) throws {
        try db.cachedStatement(sql: "DELETE FROM tonight_affinity WHERE artist = ?").execute(arguments: [artist])
        let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO tonight_affinity (artist, recommended, score) VALUES (?, ?, ?)")
        for r in list { try insert.execute(arguments: [artist, r.artist, r.score]) }
    }

    /// Every artist's recommendations, for the catalog at start-up.
    static func recommendations(_ db: any SQLDatabase) throws -> [String: [EventCatalog.Recommendation]] {
        var out: [String: [EventCatalog.Recommendation]] = [:]
        for r in try SQLRow.fetchAll(db, sql: "SELECT artist, recommended, score FROM tonight_affinity") {
            out[r["artist"], default: []].append(EventCatalog.Recommendation(artist: r["recommended"], score: r["score"]))
        }
        return out
    }
}
