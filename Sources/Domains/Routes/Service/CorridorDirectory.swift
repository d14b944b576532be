import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import Routes
import Storage
import Synchronization
import WebSocket

/// A corridor that follows a user's recorded path to one of their destinations: private to them.
struct CorridorOwner: Sendable, Equatable {
    var user: String
    var destination: String
}

/// A corridor as stored: so a room is found again by its id after it was retired, the server
/// restarted or another node took the routes' lease.
struct CorridorDefinition: Sendable {
    var id: String
    var corridor: Corridor
    var owner: CorridorOwner?
}

/// The corridors' definitions (table `corridor`) and what their rooms show: ids, the names of
/// users, the limits of `route.subscribe`. Which corridors are live on a node is its `CorridorHost`'s.
public final class CorridorDirectory: Sendable {
    public struct Configuration: Sendable {
        public var limits = Corridor.Limits()
        public var defaultWidthMeters = 500.0
        /// A corridor nobody watches, on any node, stops being live after this long.
        public var retireAfterSeconds = 600.0
        public init() {}
    }

    let configuration: Configuration
    /// The names shown for users (`UserDirectory.aliases`); deleted users are absent.
    let aliases: @Sendable ([String]) async -> [String: String]
    private let store: Store

    public init(store: Store, configuration: Configuration, aliases: @escaping @Sendable ([String]) async -> [String: String]) {
        self.store = store
        self.aliases = aliases
        self.configuration = configuration
    }

    /// The id of `corridor`: its canonical id, or for a private one a different id per owner (so
    /// nobody else's route meets it, and its id says nothing about its path).
    static func id(of corridor: Corridor, owner: CorridorOwner?) -> String {
        guard let owner else { return corridor.id }
        let text = "p1|\(owner.user)|\(owner.destination)|\(corridor.id)"
        return "p" + Base64.encodeURL(Array(Digest.sha256(Array(text.utf8)).prefix(12)))
    }

    /// Stores `corridor`'s definition, once. Most subscribes name a corridor stored already, found
    /// by a read; a new one is inserted apart from the group transactions (`writeUpkeep`), and a corridor stored
    /// meanwhile by another subscribe is left as it is. Its `last_used` is the sweeper's to move on
    /// (`touch`, while anyone watches it): an upsert of it here, in every subscribe's group
    /// transaction on every node, locked the row of a popular corridor from each node's open
    /// transaction in turn, and three nodes' groups once waited on each other for good.
    func save(_ corridor: Corridor, owner: CorridorOwner?) async throws(ProtocolError) {
        let id = Self.id(of: corridor, owner: owner)
        let path = corridor.path.map { "\($0.lat),\($0.lon)" }.joined(separator: ";"), width = corridor.widthMeters
        do {
            let stored = try await store.read { db in try SQLRow.fetchOne(db, sql: "SELECT 1 AS found FROM corridor WHERE id = ?", arguments: [id]) != nil }
            guard !stored else { return }
            try await store.writeUpkeep { db in
                let now = Date().timeIntervalSince1970
                try db.execute(sql: """
                    INSERT INTO corridor (id, path, width, created_at, owner, destination, last_used) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO NOTHING
                    """, arguments: [id, path, width, now, owner?.user, owner?.destination, now])
            }
        } catch {
            throw ProtocolError(.unavailable, "could not save the corridor; try again")
        }
    }

    /// Checks that `user` may watch corridor `id` (it exists; a private one is its owner's alone,
    /// and `not_found` to everyone else: its existence is not told).
    func authorize(_ id: String, for user: String) async throws(ProtocolError) {
        let owner: String??
        do {
            owner = try await store.read { db in
                try SQLRow.fetchOne(db, sql: "SELECT owner FROM corridor WHERE id = ?", arguments: [id]).map { r -> String? in r["owner"] }
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read corridors")
        }
        guard let owner, owner.map({ $0 == user }) ?? true else { throw .notFound("no corridor \(id)") }
    }

    /// Marks corridors `ids` used now (their rooms have members on this node), so their nodes keep
    /// them live: apart from the group transactions and the leases (`writeUpkeep`), in id order (every node locks them in the
    /// same order), and only the rows not marked within the last `freshSeconds` (another node, or
    /// this one's last sweep, did).
    func touch(_ ids: [String], now: Double, freshSeconds: Double = 0) async {
        guard !ids.isEmpty else { return }
        let sorted = ids.sorted()
        try? await store.writeUpkeep { db in
            for chunk in stride(from: 0, to: sorted.count, by: 500).map({ Array(sorted[$0..<min($0 + 500, sorted.count)]) }) {
                try db.execute(sql: "UPDATE corridor SET last_used = ? WHERE id IN (\(sqlPlaceholders(count: chunk.count))) AND last_used < ?",
                               arguments: [now] + SQLArguments(chunk) + [now - freshSeconds])
            }
        }
    }


    /// The stored definitions of those of `ids` that exist (a damaged one is left out).
    static func definitions(_ ids: [String], _ db: any SQLDatabase) throws -> [CorridorDefinition] {
        var out: [CorridorDefinition] = []
        for chunk in stride(from: 0, to: ids.count, by: 500).map({ Array(ids[$0..<min($0 + 500, ids.count)]) }) {
            let rows = try db.fetchAll(sql: "SELECT id, path, width, owner, destination FROM corridor WHERE id IN (\(sqlPlaceholders(count: chunk.count)))",
                                       arguments: SQLArguments(chunk))
            for r in rows {
                let path: String = r["path"]
                let points = path.split(separator: ";").compactMap { pair -> GeoPoint? in
                    let parts = pair.split(separator: ",")
                    guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]) else { return nil }
                    return GeoPoint(lat: lat, lon: lon)
                }
                guard !points.isEmpty else { continue }
                let owner = (r["owner"] as String?).map { CorridorOwner(user: $0, destination: r["destination"] ?? "") }
                out.append(CorridorDefinition(id: r["id"], corridor: Corridor(path: points, widthMeters: r["width"]), owner: owner))
            }
        }
        return out
    }
}
