import Foundation
import GRDB
import Realtime
import Storage
import Synchronization
import Venues

/// All venues: registration, profiles, search, check-ins, and the live actor of each venue
/// (created on first use, retired when idle). Generic over how pushes reach members, so this
/// domain never sees the transport.
public actor VenueDirectory<Sink: PushSink> {
    public typealias Member = Sink.Member

    /// Settings of the venues domain.
    public struct Configuration: Sendable {
        public var history = Room<Member>.HistoryLimits()
        /// A venue actor with no subscribers is retired after this long without activity.
        public var retireAfterSeconds: Double = 600
        public var maxSearchResults = 50
        public init() {}
    }

    let store: Store
    let sink: Sink
    let configuration: Configuration
    /// Live venue actors. Behind a lock rather than this actor's isolation so that finding a
    /// venue (every vote does) never queues behind another venue's work on this actor.
    private let liveActors = Mutex<[String: VenueActor<Sink>]>([:])

    public init(store: Store, sink: Sink, configuration: Configuration) {
        self.store = store
        self.sink = sink
        self.configuration = configuration
    }

    // MARK: Profiles (UC5, UC6, UC16, UC17, UC18)

    public func register(owner: String, fields: VenueFields) async throws(ProtocolError) -> VenueRecord {
        let record = VenueRecord(id: "v" + randomID(), ownerID: owner, fields: fields)
        try await write { db in
            try db.execute(sql: """
                INSERT INTO venue (id, owner_id, name, address, postcode, city, country, lat, lon, search_text, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [record.id, owner, record.name, record.address, record.postcode, record.city, record.country,
                                 record.lat, record.lon, record.searchText, Date().timeIntervalSince1970])
            try db.execute(sql: "INSERT INTO venue_owner (venue_id, user_id) VALUES (?, ?)", arguments: [record.id, owner])
        }
        return record
    }

    /// A venue that exists and is not removed, or `not_found`.
    public func venue(_ id: String) async throws(ProtocolError) -> VenueRecord {
        let found = try await read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM venue WHERE id = ? AND deleted_at IS NULL", arguments: [id]).map(VenueRecord.init(row:))
        }
        guard let found else { throw .notFound("no venue \(id)") }
        return found
    }

    public func isOwner(_ user: String, of venue: String) async throws(ProtocolError) -> Bool {
        try await read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM venue_owner WHERE venue_id = ? AND user_id = ?", arguments: [venue, user]) ?? false
        }
    }

    /// Owners only; otherwise `forbidden` naming what was attempted.
    public func requireOwner(_ user: String, of venue: String, to action: String) async throws(ProtocolError) {
        _ = try await self.venue(venue)
        guard try await isOwner(user, of: venue) else { throw .forbidden("only an owner can \(action)") }
    }

    public func update(_ id: String, by user: String, args: Args) async throws(ProtocolError) -> VenueRecord {
        try await requireOwner(user, of: id, to: "edit the venue")
        let current = try await venue(id)
        var updated = VenueRecord(id: id, ownerID: current.ownerID, fields: try VenueFields(args, base: current))
        updated.ownerID = current.ownerID
        let record = updated
        try await write { db in
            try db.execute(sql: """
                UPDATE venue SET name = ?, address = ?, postcode = ?, city = ?, country = ?, lat = ?, lon = ?, search_text = ?
                WHERE id = ?
                """, arguments: [record.name, record.address, record.postcode, record.city, record.country, record.lat, record.lon,
                                 record.searchText, id])
        }
        await liveActor(id)?.updated(record)
        return record
    }

    /// Adds a co-owner (owners only).
    public func addOwner(_ user: String, to venue: String, by owner: String, userExists: @Sendable (String) async -> Bool) async throws(ProtocolError) {
        try await requireOwner(owner, of: venue, to: "add an owner")
        guard await userExists(user) else { throw .notFound("no user \(user)") }
        try await write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO venue_owner (venue_id, user_id) VALUES (?, ?)", arguments: [venue, user])
        }
    }

    /// Soft delete: hidden from every query, data kept.
    public func remove(_ id: String, by user: String) async throws(ProtocolError) {
        try await requireOwner(user, of: id, to: "remove the venue")
        try await write { db in
            try db.execute(sql: "UPDATE venue SET deleted_at = ? WHERE id = ?", arguments: [Date().timeIntervalSince1970, id])
        }
        if let actor = liveActors.withLock({ $0.removeValue(forKey: id) }) { await actor.removed() }
    }

    /// UC6: venues whose name or address contains the query, case- and accent-insensitively.
    public func search(_ q: String) async throws(ProtocolError) -> [VenueRecord] {
        let folded = VenueText.normalized(q) // trimmed already
        guard !folded.isEmpty else { throw .badRequest("field q is empty") }
        let pattern = "%" + folded.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
        let limit = configuration.maxSearchResults
        return try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM venue WHERE deleted_at IS NULL AND search_text LIKE ? ESCAPE '\\' ORDER BY name LIMIT ?
                """, arguments: [pattern, limit]).map(VenueRecord.init(row:))
        }
    }

    /// UC5: venues inside a bounding box (a box may cross the antimeridian: minLon > maxLon).
    public func nearby(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double) async throws(ProtocolError) -> [VenueRecord] {
        guard minLat <= maxLat else { throw .badRequest("minLat must not be greater than maxLat") }
        let limit = configuration.maxSearchResults * 4
        let lonClause = minLon <= maxLon ? "lon BETWEEN ? AND ?" : "(lon >= ? OR lon <= ?)"
        return try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM venue WHERE deleted_at IS NULL AND lat BETWEEN ? AND ? AND \(lonClause) LIMIT ?
                """, arguments: [minLat, maxLat, minLon, maxLon, limit]).map(VenueRecord.init(row:))
        }
    }

    /// UC7: checks a user in (once per venue); the venue's presence count is pushed.
    public func checkin(_ venue: String, user: String) async throws(ProtocolError) -> Int {
        _ = try await self.venue(venue)
        let count: Int = try await write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO checkin (venue_id, user_id, at) VALUES (?, ?, ?)",
                           arguments: [venue, user, Date().timeIntervalSince1970])
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM checkin WHERE venue_id = ?", arguments: [venue]) ?? 0
        }
        await liveActor(venue)?.publish(event: "presence.changed", data: ["checkedIn": .int(count)])
        return count
    }

    /// UC14/UC15: a user's voted or requested tracks, newest first.
    public func trackActions(of user: String, kind: String) async throws(ProtocolError) -> [JSON] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT a.venue_id, a.uri, a.title, a.artist, a.at, v.name FROM track_action a JOIN venue v ON v.id = a.venue_id WHERE a.user_id = ? AND a.kind = ? ORDER BY a.at DESC, a.id DESC LIMIT 500",
                             arguments: [user, kind]).map { row -> JSON in
                ["venue": .string(row["venue_id"]), "venueName": .string(row["name"]), "uri": .string(row["uri"]),
                 "title": .string(row["title"]), "artist": .string(row["artist"]), "at": .double(row["at"])]
            }
        }
    }

    /// UC13: the venues a user checked in to, newest first.
    public func checkins(of user: String) async throws(ProtocolError) -> [JSON] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT v.id, v.name, v.address, c.at FROM checkin c JOIN venue v ON v.id = c.venue_id
                WHERE c.user_id = ? AND v.deleted_at IS NULL ORDER BY c.at DESC LIMIT 500
                """, arguments: [user]).map { row -> JSON in
                    ["venue": .string(row["id"]), "name": .string(row["name"]), "address": .string(row["address"]),
                     "at": .double(row["at"])]
                }
        }
    }

    public func checkinCount(_ venue: String) async throws(ProtocolError) -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM checkin WHERE venue_id = ?", arguments: [venue]) ?? 0 }
    }

    // MARK: Live venues

    /// The venue's actor, created (and its state loaded) on first use.
    public nonisolated func actor(for id: String) async throws(ProtocolError) -> VenueActor<Sink> {
        if let a = liveActor(id) { return a }
        return try await makeActor(id)
    }

    private func makeActor(_ id: String) async throws(ProtocolError) -> VenueActor<Sink> {
        if let a = liveActor(id) { return a }
        let record = try await venue(id)
        let state = try await read { db in
            try String.fetchOne(db, sql: "SELECT state FROM jukebox WHERE venue_id = ?", arguments: [id])
        }
        var jukebox = Jukebox()
        if let state {
            do {
                jukebox = Jukebox(restoring: try JSONDecoder().decode(JukeboxRecord.self, from: Data(state.utf8)))
            } catch {
                throw ProtocolError(.internal, "the stored playlist of \(id) cannot be read")
            }
        }
        if let a = liveActor(id) { return a } // another call made it while we read
        let a = VenueActor<Sink>(venue: record, jukebox: jukebox, directory: self, store: store, sink: sink,
                                 history: configuration.history)
        liveActors.withLock { $0[id] = a }
        return a
    }

    /// The venue's actor if it is live (closing connections use this: no actor is made for them).
    public nonisolated func liveActor(_ id: String) -> VenueActor<Sink>? { liveActors.withLock { $0[id] } }

    /// Retires venue actors with no members that have been idle for a while.
    public func retireIdle(now: Double) async {
        for (id, a) in liveActors.withLock({ $0 }) where await a.retireIfIdle(now: now, after: configuration.retireAfterSeconds) {
            liveActors.withLock { _ = $0.removeValue(forKey: id) }
        }
    }


    // MARK: Storage helpers

    func write<T: Sendable>(_ change: @escaping @Sendable (Database) throws -> T) async throws(ProtocolError) -> T {
        do { return try await store.write(change) } catch let e as ProtocolError { throw e } catch {
            throw ProtocolError(.unavailable, "could not save the change; try again")
        }
    }

    func read<T: Sendable>(_ query: @escaping @Sendable (Database) throws -> T) async throws(ProtocolError) -> T {
        do { return try await store.read(query) } catch { throw ProtocolError(.unavailable, "could not read venues; try again") }
    }

    private func randomID() -> String { randomToken(length: 10) }
}

/// Random lowercase letters and digits, without the easily confused l, 0 and 1.
func randomToken(length: Int) -> String {
    let alphabet = Array("abcdefghijkmnopqrstuvwxyz23456789")
    return String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count)] })
}
