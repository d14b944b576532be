import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import RoomLog
import Storage
import Synchronization
import Venues

/// All venues: registration, profiles, search, check-ins, and the live actor of each venue
/// (created on first use, retired when idle). A plain class, not an actor: what it keeps is behind
/// a lock, and its queries go straight to the store, so finding a venue (every vote does) never
/// queues behind anything.
public final class VenueDirectory: Sendable {
    /// Settings of the venues domain.
    public struct Configuration: Sendable {
        /// A venue actor with no write in flight is retired after this long without activity
        /// (its subscribers stay with the feed; its state is on disk).
        public var retireAfterSeconds: Double = 600
        public var maxSearchResults = 50
        public init() {}
    }

    let store: Store
    /// Where this node's subscribers of venues' rooms are.
    public let feed: RoomFeed
    let configuration: Configuration
    /// Whether a user hides a list of theirs (`profile.update {privacy}`): their name is then left
    /// out of what the venue shows everyone (pushes' `cause.by`, a track's requester, its voters).
    let hides: @Sendable (PrivateList, String) -> Bool
    private struct Live {
        var actors: [String: VenueActor] = [:]
        /// The last actor retired per venue, while no newer one was made: only it may come back.
        /// Held weakly: once no caller holds it, it cannot come back, and the sweep drops the entry.
        var retired: [String: Retired] = [:]
        /// Venues whose actor failed to commit after a snapshot showed the change: the next one
        /// starts a new epoch.
        var failed: Set<String> = []
    }
    private struct Retired {
        weak var actor: VenueActor?
    }
    private let live = Mutex(Live())

    public init(store: Store, feed: RoomFeed, configuration: Configuration,
                hides: @escaping @Sendable (PrivateList, String) -> Bool = { _, _ in false }) {
        self.store = store
        self.feed = feed
        self.configuration = configuration
        self.hides = hides
    }

    // MARK: Profiles (UC5, UC6, UC16, UC17, UC18)

    func register(owner: String, fields: VenueFields) async throws(ProtocolError) -> VenueRecord {
        let record = VenueRecord(id: "v" + Digest.randomToken(length: 10), ownerID: owner, fields: fields)
        try await write { db in
            try db.execute(sql: """
                INSERT INTO venue (id, owner_id, name, address, postcode, city, country, lat, lon, search_text, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [record.id, owner, record.name, record.address, record.postcode, record.city, record.country,
                                 record.lat, record.lon, record.searchText, Date().timeIntervalSince1970])
            try db.execute(sql: "INSERT INTO venue_owner (venue_id, user_id) VALUES (?, ?)", arguments: [record.id, owner])
            try db.execute(sql: "INSERT INTO venue_jukebox (venue_id, settings, next_seq) VALUES (?, '{}', 1)", arguments: [record.id])
        }
        return record
    }

    /// A venue that exists and is not removed, or `not_found`.
    func venue(_ id: String) async throws(ProtocolError) -> VenueRecord {
        let found = try await read { db in try VenueDirectory.venue(id, db) }
        guard let found else { throw .notFound("no venue \(id)") }
        return found
    }

    private static func venue(_ id: String, _ db: any SQLDatabase) throws -> VenueRecord? {
        try SQLRow.fetchOne(db, sql: "SELECT * FROM venue WHERE id = ? AND deleted_at IS NULL", arguments: [id]).map(VenueRecord.init(row:))
    }

    private static func isOwner(_ user: String, of venue: String, _ db: any SQLDatabase) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM venue_owner WHERE venue_id = ? AND user_id = ?", arguments: [venue, user]) ?? false
    }

    func isOwner(_ user: String, of venue: String) async throws(ProtocolError) -> Bool {
        try await read { db in try VenueDirectory.isOwner(user, of: venue, db) }
    }

    /// Inside a write: the venue, if it exists and `user` owns it; `not_found` or `forbidden` otherwise.
    private static func owned(_ id: String, by user: String, to action: String, _ db: any SQLDatabase) throws -> VenueRecord {
        guard let v = try venue(id, db) else { throw ProtocolError.notFound("no venue \(id)") }
        guard try isOwner(user, of: id, db) else { throw ProtocolError.forbidden("only an owner can \(action)") }
        return v
    }

    /// Changes the fields given in `args`, keeping the others as they are (the venue's actor
    /// applies it, so concurrent edits of different fields both win and the push takes its place
    /// in the room's log).
    func update(_ id: String, by user: String, args: Args) async throws(ProtocolError) -> VenueRecord {
        try await actor(for: id).update(by: user, args: args)
    }

    /// Adds a co-owner (owners only).
    func addOwner(_ user: String, to venue: String, by owner: String, userExists: Bool) async throws(ProtocolError) {
        try await write { db in
            _ = try VenueDirectory.owned(venue, by: owner, to: "add an owner", db)
            guard userExists else { throw ProtocolError.notFound("no user \(user)") }
            try db.execute(sql: "INSERT OR IGNORE INTO venue_owner (venue_id, user_id) VALUES (?, ?)", arguments: [venue, user])
        }
    }

    /// Soft delete: hidden from every query, data kept.
    func remove(_ id: String, by user: String) async throws(ProtocolError) {
        let actor = try await actor(for: id)
        try await actor.remove(by: user)
        live.withLock { live in
            live.retired[id] = nil // a retired actor must not come back to serve a removed venue
            if live.actors[id] === actor { live.actors[id] = nil }
        }
    }

    /// UC6: venues whose name or address contains the query, case- and accent-insensitively.
    func search(_ q: String) async throws(ProtocolError) -> [VenueRecord] {
        let folded = VenueText.normalized(q) // trimmed already
        guard !folded.isEmpty else { throw .badRequest("field q is empty") }
        let pattern = "%" + folded.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
        let limit = configuration.maxSearchResults
        return try await read { db in
            try SQLRow.fetchAll(db, sql: """
                SELECT * FROM venue WHERE deleted_at IS NULL AND search_text LIKE ? ESCAPE '\\' ORDER BY name LIMIT ?
                """, arguments: [pattern, limit]).map(VenueRecord.init(row:))
        }
    }

    /// UC5: venues inside a bounding box (a box may cross the antimeridian: minLon > maxLon).
    func nearby(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double) async throws(ProtocolError) -> [VenueRecord] {
        guard minLat <= maxLat else { throw .badRequest("minLat must not be greater than maxLat") }
        let limit = configuration.maxSearchResults * 4
        let lonClause = minLon <= maxLon ? "lon BETWEEN ? AND ?" : "(lon >= ? OR lon <= ?)"
        return try await read { db in
            try SQLRow.fetchAll(db, sql: """
                SELECT * FROM venue WHERE deleted_at IS NULL AND lat BETWEEN ? AND ? AND \(lonClause) LIMIT ?
                """, arguments: [minLat, maxLat, minLon, maxLon, limit]).map(VenueRecord.init(row:))
        }
    }

    /// UC7: checks a user in (once per venue); the venue's presence count is pushed.
    func checkin(_ venue: String, user: String) async throws(ProtocolError) -> Int {
        try await actor(for: venue).checkin(user: user)
    }

    /// UC14/UC15: a user's voted or requested tracks, newest first. A request carries its
    /// requester's vote, so it shows among the votes too.
    func trackActions(of user: String, _ kind: ActionKind) async throws(ProtocolError) -> [JSON] {
        let kinds = kind == .vote ? "('vote', 'request')" : "('request')"
        return try await read { db in
            try SQLRow.fetchAll(db, sql: """
                SELECT a.venue_id, a.uri, a.title, a.artist, a.at, v.name FROM track_action a JOIN venue v ON v.id = a.venue_id
                WHERE a.user_id = ? AND a.kind IN \(kinds) ORDER BY a.at DESC, a.id DESC LIMIT 500
                """, arguments: [user]).map { row -> JSON in
                ["venue": .string(row["venue_id"]), "venueName": .string(row["name"]), "uri": .string(row["uri"]),
                 "title": .string(row["title"]), "artist": .string(row["artist"]), "at": .double(row["at"])]
            }
        }
    }

    /// UC13: the venues a user checked in to, newest first.
    func checkins(of user: String) async throws(ProtocolError) -> [JSON] {
        try await read { db in
            try SQLRow.fetchAll(db, sql: """
                SELECT v.id, v.name, v.address, c.at FROM checkin c JOIN venue v ON v.id = c.venue_id
                WHERE c.user_id = ? AND v.deleted_at IS NULL ORDER BY c.at DESC LIMIT 500
                """, arguments: [user]).map { row -> JSON in
                    ["venue": .string(row["id"]), "name": .string(row["name"]), "address": .string(row["address"]),
                     "at": .double(row["at"])]
                }
        }
    }

    func checkinCount(_ venue: String) async throws(ProtocolError) -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM checkin WHERE venue_id = ?", arguments: [venue]) ?? 0 }
    }

    // MARK: Live venues

    /// The venue's actor, created (and its state loaded) on first use.
    public func actor(for id: String) async throws(ProtocolError) -> VenueActor {
        if let a = liveActor(id) { return a }
        let now = Date().timeIntervalSince1970
        let room = VenuePush.room(id)
        let loaded: (VenueRecord, JukeboxRecord, RoomHead?)? = try await read { db in
            guard let record = try VenueDirectory.venue(id, db) else { return nil }
            return (record, try JukeboxRows.load(venue: id, now: now, db), try RoomLogRows.heads(of: [room], db)[room])
        }
        guard let (record, state, stored) = loaded else { throw .notFound("no venue \(id)") }
        // A venue whose last actor failed to commit a change a snapshot showed starts a new epoch;
        // otherwise the lost change's seqs are simply given to the next pushes (no one saw them).
        let renew = live.withLock { $0.failed.remove(id) != nil }
        let head: RoomHead
        if let stored, !renew { head = stored } else {
            head = try await write { db in renew ? try RoomLogRows.renewEpoch(of: room, db) : try RoomLogRows.head(of: room, db) }
        }
        let made = VenueActor(venue: record, jukebox: Jukebox(restoring: state), head: head, directory: self, store: store, feed: feed)
        return live.withLock { live in
            if let other = live.actors[id] { return other } // another call made it while we read
            live.actors[id] = made
            live.retired[id] = nil
            return made
        }
    }

    /// Retired actors that could still come back (a caller holds them), for tests and metrics.
    public var retiredCount: Int { live.withLock { $0.retired.count } }

    /// The venue's actor if it is live (none is made for the asking).
    public func liveActor(_ id: String) -> VenueActor? { live.withLock { $0.actors[id] } }

    /// What a retired (or failed) actor may do when a caller still reaches it.
    enum Revival {
        /// It was the last one retired and nothing replaced it: it serves again (its state is what is stored).
        case revived
        /// Another actor serves the venue now: go there.
        case replacedBy(VenueActor)
        /// Neither: the venue must be loaded afresh by the next caller.
        case stale
    }

    /// A retired actor asks to serve again; see `Revival`.
    func revive(_ actor: VenueActor, id: String) -> Revival {
        live.withLock { live in
            if let current = live.actors[id] { return current === actor ? .revived : .replacedBy(current) }
            guard live.retired[id]?.actor === actor else { return .stale }
            live.retired[id] = nil
            live.actors[id] = actor
            return .revived
        }
    }

    /// Forgets the venue's actor, live or retired (this node just took the venue's room: another
    /// node may have changed it since): the next caller loads what is stored.
    public func drop(_ id: String) {
        live.withLock { live in
            live.actors[id] = nil
            live.retired[id] = nil
        }
    }

    /// Drops an actor whose memory may be ahead of the store (a commit failed): the next caller
    /// loads what is durable, and the actor never comes back.
    func evict(_ actor: VenueActor, id: String, renewEpoch: Bool) {
        live.withLock { live in
            if renewEpoch { live.failed.insert(id) }
            if live.actors[id] === actor { live.actors[id] = nil }
            if live.retired[id]?.actor === actor { live.retired[id] = nil }
        }
    }

    /// Retires venue actors that have been idle
    /// (the sweeper service runs this every `venues.sweepSeconds`).
    public func sweep(now: Double) async {
        for (id, a) in live.withLock({ $0.actors }) where await a.sweep(now: now, retireAfter: configuration.retireAfterSeconds) {
            live.withLock { live in
                if live.actors[id] === a {
                    live.actors[id] = nil
                    live.retired[id] = Retired(actor: a)
                }
            }
        }
        live.withLock { live in live.retired = live.retired.filter { $0.value.actor != nil } }
    }

    // MARK: Storage helpers

    func write<T: Sendable>(_ change: @escaping @Sendable (any SQLDatabase) throws -> T) async throws(ProtocolError) -> T {
        do { return try await store.write(change) } catch let e as ProtocolError { throw e } catch {
            throw ProtocolError(.unavailable, "could not save the change; try again")
        }
    }

    func read<T: Sendable>(_ query: @escaping @Sendable (any SQLDatabase) throws -> T) async throws(ProtocolError) -> T {
        do { return try await store.read(query) } catch { throw ProtocolError(.unavailable, "could not read venues; try again") }
    }
}
