import DomainSeam
import Foundation
import Logging
import Metrics
import Realtime
import Storage
import Synchronization

/// Which node owns each logged room (a lease in `cluster_lease`, holding while its node's
/// heartbeat `cluster_node.expires` does, on PostgreSQL's clock), as this node knows it. A room
/// nobody holds, or whose holder's heartbeat ran out (the node died or lost the database), is
/// claimed by the first node that needs it. The holder renews all its leases by moving its
/// heartbeat every third of `leaseSeconds` (`renew`), one row whatever the number of rooms. A
/// node that cannot renew stops counting a room as its own a quarter of a lease before the lease
/// runs out, so two nodes never both act as the owner for long; and even then the room head's
/// check (`RoomLogRows.append`) refuses the stale one's writes.
public final class Ownership: RoomOwners {
    public struct Configuration: Sendable {
        /// How long a lease lasts without renewal: a dead node's rooms move after at most this.
        public var leaseSeconds: Double = 6
        public init() {}
    }

    /// A room as this node knows it; `until` on this node's monotonic clock (seconds).
    private enum Entry {
        /// Claimed or last renewed at `since`.
        case mine(until: Double, since: Double)
        case theirs(node: String, address: String, until: Double)
    }

    public let nodeID: String
    private let store: Store
    private let links: PeerLinks
    private let configuration: Configuration
    private let logger: Logger
    private let entries = Mutex<[String: Entry]>([:])
    /// Claims under way, so many requests for one room make one claim.
    private let claims = Mutex<[String: Task<Entry, Error>]>([:])
    /// Called when this node takes a room it did not hold (its memory of the room may be stale).
    private let acquired: @Sendable (String) -> Void
    /// Set while draining: rooms are no longer claimed here.
    private let draining = Atomic<Bool>(false)
    /// What `/healthz` reports of the database.
    public let health: ClusterHealth
    private let owned = Gauge(label: "hubbub_cluster_rooms_owned")
    private let claimed = Counter(label: "hubbub_cluster_room_claims_total")

    public init(nodeID: String, store: Store, links: PeerLinks, health: ClusterHealth, configuration: Configuration = .init(),
                logger: Logger, acquired: @escaping @Sendable (String) -> Void) {
        self.nodeID = nodeID
        self.health = health
        self.store = store
        self.links = links
        self.configuration = configuration
        self.logger = logger
        self.acquired = acquired
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// How long before its lease runs out a node stops counting a room as its own.
    private var margin: Double { configuration.leaseSeconds / 4 }

    public func owner(of room: String) async throws(ProtocolError) -> RoomOwner {
        let now = Self.now()
        switch entries.withLock({ $0[room] }) {
        case .mine(let until, _)? where until > now: return .here
        case .theirs(_, let address, let until)? where until > now: return .peer(links.peer(at: address))
        default: break
        }
        let entry: Entry
        do { entry = try await claim(room) } catch let e as ProtocolError { throw e } catch {
            logger.warning("cluster: could not claim a room", metadata: ["room": "\(room)", "error": "\(error)"])
            throw ProtocolError(.unavailable, "the room's owner cannot be found; try again")
        }
        switch entry {
        case .mine: return .here
        case .theirs(_, let address, _): return .peer(links.peer(at: address))
        }
    }

    /// Forgets who owns `room` (its owner could not be reached): the next request asks again.
    public func forget(_ room: String) {
        entries.withLock { entries in
            if case .theirs? = entries[room] { entries[room] = nil }
        }
    }

    /// Whether this node counts `room` as its own now (a quarter of a lease before its lease could
    /// run out, it stops): no claim, no read.
    public func isHere(_ room: String) -> Bool {
        guard case .mine(let until, _)? = entries.withLock({ $0[room] }) else { return false }
        return until > Self.now()
    }

    /// Those of `rooms` whose lease no node holds now (never taken, or run out), read in one go.
    public func unheld(_ rooms: [String]) async throws(ProtocolError) -> [String] {
        guard !rooms.isEmpty else { return [] }
        do {
            let held = try await store.read { db in
                var held = Set<String>()
                for start in stride(from: 0, to: rooms.count, by: 500) {
                    let chunk = Array(rooms[start..<min(start + 500, rooms.count)])
                    for row in try db.fetchAll(sql: """
                        SELECT l.shard FROM cluster_lease l JOIN cluster_node n ON n.id = l.node
                        WHERE l.shard IN (\(sqlPlaceholders(count: chunk.count))) AND n.expires > EXTRACT(EPOCH FROM clock_timestamp())
                        """, arguments: SQLArguments(chunk)) { held.insert(row["shard"]) }
                }
                return held
            }
            return rooms.filter { !held.contains($0) }
        } catch {
            throw ProtocolError(.unavailable, "could not read the rooms' leases")
        }
    }

    /// Takes the lease if it is free (or already this node's), else learns its holder. One claim
    /// per room at a time.
    private func claim(_ room: String) async throws -> Entry {
        let task = claims.withLock { claims -> Task<Entry, Error> in
            if let running = claims[room] { return running }
            let task = Task { try await self.claimNow(room) }
            claims[room] = task
            return task
        }
        defer { claims.withLock { $0[room] = nil } }
        return try await task.value
    }

    private func claimNow(_ room: String) async throws -> Entry {
        let me = nodeID, ttl = configuration.leaseSeconds, draining = self.draining.load(ordering: .relaxed)
        let asked = Self.now()
        // Most rooms are held by a live node: a read finds it without a write.
        let held = try await store.read { db in try Self.holder(of: room, db) }
        let row: (node: String, address: String?, remaining: Double)
        if let held, held.node != me, held.remaining > 0 { row = held } else {
            row = try await store.writeApart { db in
                if !draining {
                // A heartbeat that ran out (this node could not renew) is moved first: the lease
                // taken must hold. Matches no row, and locks none, while the heartbeat holds.
                try db.execute(sql: Self.moveHeartbeat + " AND expires <= EXTRACT(EPOCH FROM clock_timestamp())", arguments: [ttl, me])
                try db.execute(sql: """
                    INSERT INTO cluster_lease (shard, node, expires) VALUES (?, ?, 0)
                    ON CONFLICT (shard) DO UPDATE SET node = EXCLUDED.node
                    WHERE cluster_lease.node = EXCLUDED.node OR NOT EXISTS (
                        SELECT 1 FROM cluster_node n WHERE n.id = cluster_lease.node AND n.expires > EXTRACT(EPOCH FROM clock_timestamp()))
                    """, arguments: [room, me])
                }
                guard let r = try Self.holder(of: room, db) else {
                    throw ProtocolError(.unavailable, "no node can take the room now (this one is stopping); try again")
                }
                return r
            }
        }
        let entry: Entry
        if row.node == me {
            entry = .mine(until: asked + row.remaining - margin, since: asked)
        } else {
            guard let address = row.address else { throw ProtocolError(.unavailable, "the room's owner is not reachable yet; try again") }
            // Another node's until its lease would run out, or until it cannot be reached (`forget`).
            entry = .theirs(node: row.node, address: address, until: asked + max(0.5, row.remaining - margin))
        }
        // Still this node's without a gap, its memory of the room is current: its local entry says
        // so, or the database does (the lease was this node's and had not run out when read, so no
        // other node can have taken it; a busy node's entry may lapse a little before its renewal
        // comes). A lapsed lease may have let another node write the room meanwhile.
        let heldThroughout = held.map { $0.node == me && $0.remaining > 0 } ?? false
        let wasMine = heldThroughout || entries.withLock { entries -> Bool in
            if case .mine(let until, _)? = entries[room], until > Self.now() { return true }
            return false
        }
        if case .mine = entry, !wasMine {
            // Before the entry says so: a request that finds the room not yet this node's joins
            // this claim and waits, so none runs on memory the owner has not reloaded yet.
            claimed.increment()
            acquired(room)
            logger.debug("cluster: took a room", metadata: ["room": "\(room)"])
        }
        entries.withLock { $0[room] = entry }
        return entry
    }

    /// Moves node `?2`'s heartbeat (its leases with it) to `?1` seconds from now.
    private static let moveHeartbeat = """
        UPDATE cluster_node SET seen = EXTRACT(EPOCH FROM clock_timestamp()), expires = EXTRACT(EPOCH FROM clock_timestamp()) + ? WHERE id = ?
        """

    /// The lease's holder, its address and the seconds left on it (its node's heartbeat, on
    /// PostgreSQL's clock; a node forgotten has none left).
    private static func holder(of room: String, _ db: any SQLDatabase) throws -> (node: String, address: String?, remaining: Double)? {
        try db.fetchOne(sql: """
            SELECT l.node, n.address, COALESCE(n.expires, 0) - EXTRACT(EPOCH FROM clock_timestamp()) AS remaining
            FROM cluster_lease l LEFT JOIN cluster_node n ON n.id = l.node WHERE l.shard = ?
            """, arguments: [room]).map { ($0["node"], $0["address"], $0["remaining"]) }
    }

    /// Renews every lease this node holds by moving its heartbeat (one row); rooms whose lease
    /// another node took are forgotten (and their memory dropped through `acquired`'s counterpart,
    /// the next claim).
    public func renew() async {
        let me = nodeID, ttl = configuration.leaseSeconds
        let asked = Self.now()
        do {
            let held: Set<String> = try await store.writeApart { db in
                try db.execute(sql: Self.moveHeartbeat, arguments: [ttl, me])
                return Set(try db.fetchAll(sql: "SELECT shard FROM cluster_lease WHERE node = ?", arguments: [me]).map { $0["shard"] as String })
            }
            let until = asked + ttl - margin
            entries.withLock { entries in
                for (room, entry) in entries {
                    // A room claimed while this renewal ran is this node's even if the renewal's
                    // read came too early to see it.
                    guard case .mine(_, let since) = entry, since < asked else { continue }
                    entries[room] = held.contains(room) ? .mine(until: until, since: asked) : nil
                }
            }
            health.renewed()
            owned.record(held.count)
        } catch {
            logger.warning("cluster: could not renew this node's leases", metadata: ["error": "\(error)"])
        }
    }

    /// Registers this node (its address for forwarding) and makes the cluster's link key if none
    /// exists yet; returns the key.
    public func register(address: String) async throws -> String {
        let me = nodeID, ttl = configuration.leaseSeconds
        return try await store.writeApart { db in
            try db.execute(sql: """
                INSERT INTO cluster_node (id, address, started, seen, expires)
                VALUES (?, ?, EXTRACT(EPOCH FROM clock_timestamp()), EXTRACT(EPOCH FROM clock_timestamp()), EXTRACT(EPOCH FROM clock_timestamp()) + ?)
                """, arguments: [me, address, ttl])
            // Nodes gone for an hour are forgotten.
            try db.execute(sql: "DELETE FROM cluster_node WHERE seen < EXTRACT(EPOCH FROM clock_timestamp()) - 3600")
            try db.execute(sql: "INSERT OR IGNORE INTO cluster_secret (id, secret) VALUES (1, ?)", arguments: [PeerLinks.newSecret()])
            guard let secret = try String.fetchOne(db, sql: "SELECT secret FROM cluster_secret WHERE id = 1") else {
                throw ProtocolError(.internal, "no cluster secret")
            }
            return secret
        }
    }

    /// Stops taking rooms and gives back every lease this node holds, so the other nodes take its
    /// rooms at once rather than after a lease (a graceful stop).
    public func release() async {
        draining.store(true, ordering: .relaxed)
        let me = nodeID
        entries.withLock { $0 = [:] }
        do {
            try await store.writeApart { db in
                try db.execute(sql: "DELETE FROM cluster_lease WHERE node = ?", arguments: [me])
                try db.execute(sql: "UPDATE cluster_node SET draining = 1, expires = 0 WHERE id = ?", arguments: [me])
            }
        } catch {
            logger.warning("cluster: could not give back this node's leases (they run out by themselves)", metadata: ["error": "\(error)"])
        }
    }
}
