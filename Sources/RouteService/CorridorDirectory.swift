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

/// The live corridors: their actors by id and the spatial index that finds the ones an item lies
/// in. A plain class behind a lock, like the venue directory: finding a corridor (every post does)
/// never queues behind anything. Corridor definitions are stored, so a room can be found again by
/// its id after the actor was retired or the server restarted.
public final class CorridorDirectory: Sendable {
    public struct Configuration: Sendable {
        public var limits = Corridor.Limits()
        public var defaultWidthMeters = 500.0
        public var history = Room.HistoryLimits()
        /// A corridor nobody watches is retired after this long.
        public var retireAfterSeconds = 600.0
        public var grid = GeoGrid()
        public init() {}
    }

    private struct Live {
        var actors: [String: CorridorActor] = [:]
        var index: CorridorIndex
    }

    let configuration: Configuration
    let hub: IntelHub
    /// The names shown for users (`UserDirectory.aliases`); deleted users are absent.
    let aliases: @Sendable ([String]) async -> [String: String]
    /// The language the reader on a connection set, if any (`ReaderLanguages`).
    let language: @Sendable (ConnectionID) -> String?
    private let store: Store
    private let sink: any PushSink
    private let live: Mutex<Live>

    public init(store: Store, hub: IntelHub, sink: any PushSink, configuration: Configuration,
                language: @escaping @Sendable (ConnectionID) -> String? = { _ in nil },
                aliases: @escaping @Sendable ([String]) async -> [String: String]) {
        self.store = store
        self.language = language
        self.hub = hub
        self.aliases = aliases
        self.sink = sink
        self.configuration = configuration
        live = Mutex(Live(index: CorridorIndex(grid: configuration.grid)))
    }

    /// Corridors live now.
    public var liveCount: Int { live.withLock { $0.actors.count } }
    /// Their ids.
    var liveIDs: [String] { live.withLock { Array($0.actors.keys) } }

    /// The id of `corridor`: its canonical id, or for a private one a different id per owner (so
    /// nobody else's route meets it, and its id says nothing about its path).
    static func id(of corridor: Corridor, owner: CorridorOwner?) -> String {
        guard let owner else { return corridor.id }
        let text = "p1|\(owner.user)|\(owner.destination)|\(corridor.id)"
        return "p" + Base64.encodeURL(Array(Digest.sha256(Array(text.utf8)).prefix(12)))
    }

    /// The actor of `corridor`, made (and its definition stored) on first use.
    func actor(for corridor: Corridor, owner: CorridorOwner? = nil) async throws(ProtocolError) -> CorridorActor {
        let id = Self.id(of: corridor, owner: owner)
        if let existing = live.withLock({ $0.actors[id] }) { return existing }
        let path = corridor.path.map { "\($0.lat),\($0.lon)" }.joined(separator: ";"), width = corridor.widthMeters
        do {
            try await store.write { db in
                let now = Date().timeIntervalSince1970
                try db.execute(sql: """
                    INSERT INTO corridor (id, path, width, created_at, owner, destination, last_used) VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET last_used = excluded.last_used
                    """, arguments: [id, path, width, now, owner?.user, owner?.destination, now])
            }
        } catch {
            throw ProtocolError(.unavailable, "could not save the corridor; try again")
        }
        return adopt(corridor, id: id, owner: owner)
    }

    /// The host of room `route:<id>` for `user`: live, or made again from its stored definition.
    /// A private corridor is `not_found` to everyone but its owner (its existence is not told).
    func host(_ id: String, for user: String) async throws(ProtocolError) -> CorridorActor {
        if let existing = live.withLock({ $0.actors[id] }) {
            guard existing.owner.map({ $0.user == user }) ?? true else { throw .notFound("no corridor \(id)") }
            return existing
        }
        let row: (String, Double, CorridorOwner?)?
        do {
            row = try await store.read { db in
                try SQLRow.fetchOne(db, sql: "SELECT path, width, owner, destination FROM corridor WHERE id = ?", arguments: [id]).map { r in
                    let owner = (r["owner"] as String?).map { CorridorOwner(user: $0, destination: r["destination"] ?? "") }
                    return (r["path"], r["width"], owner)
                }
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read corridors")
        }
        guard let (path, width, owner) = row, owner.map({ $0.user == user }) ?? true else { throw .notFound("no corridor \(id)") }
        let points = path.split(separator: ";").compactMap { pair -> GeoPoint? in
            let parts = pair.split(separator: ",")
            guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]) else { return nil }
            return GeoPoint(lat: lat, lon: lon)
        }
        guard !points.isEmpty else { throw ProtocolError(.internal, "corridor \(id) is stored damaged") }
        return adopt(Corridor(path: points, widthMeters: width), id: id, owner: owner)
    }

    func liveHost(_ id: String) -> CorridorActor? { live.withLock { $0.actors[id] } }

    /// The live corridors whose band contains any of `points`, each once.
    func corridors(containing points: [GeoPoint]) -> [CorridorActor] {
        live.withLock { l in
            guard points.count > 1 else { return points.first.map { l.index.corridors(containing: $0).compactMap { l.actors[$0] } } ?? [] }
            var seen = Set<String>()
            return points.flatMap { l.index.corridors(containing: $0) }.filter { seen.insert($0).inserted }.compactMap { l.actors[$0] }
        }
    }

    /// Pushes `event` about `item` to `corridors` (by default every live corridor containing it),
    /// the item encoded once for all of them.
    func publish(_ event: RouteEvent, _ item: IntelItem, aliases: [String: String], to corridors: [CorridorActor]? = nil) async {
        let targets = corridors ?? self.corridors(containing: item.points)
        guard !targets.isEmpty else { return }
        let encoded = EncodedItem(item, aliases: aliases)
        for corridor in targets { await corridor.publish(event, item: item, encoded: encoded) }
    }

    private func adopt(_ corridor: Corridor, id: String, owner: CorridorOwner?) -> CorridorActor {
        live.withLock { l in
            if let existing = l.actors[id] { return existing }
            let made = CorridorActor(id: id, corridor: corridor, owner: owner, directory: self, hub: hub, sink: sink,
                                     history: configuration.history)
            l.actors[id] = made
            l.index.insert(corridor, id: id)
            return made
        }
    }

    /// Trims quiet rooms and retires corridors nobody watched for `retireAfterSeconds`.
    public func sweep(now: Double) async {
        for actor in live.withLock({ Array($0.actors.values) }) {
            await actor.sweep(now: now, retireAfter: configuration.retireAfterSeconds)
        }
    }

    /// Drops the live private corridors of `user` (to `destination`, or all): their recording or
    /// account is gone. Their members, if any, get no more pushes from them.
    func dropPrivate(of user: String, destination: String? = nil) {
        live.withLock { l in
            for (id, actor) in l.actors {
                guard let owner = actor.owner, owner.user == user, destination.map({ $0 == owner.destination }) ?? true else { continue }
                l.actors[id] = nil
                l.index.remove(id: id)
            }
        }
    }

    /// A sweep retires `actor` (from inside it, so no join comes in between). Its row records
    /// when it was last in use, which pruning goes by.
    func forget(_ actor: CorridorActor) {
        let removed = live.withLock { l in
            guard l.actors[actor.id] === actor else { return false }
            l.actors[actor.id] = nil
            l.index.remove(id: actor.id)
            return true
        }
        guard removed else { return }
        let id = actor.id, now = Date().timeIntervalSince1970
        store.submit({ db in try db.execute(sql: "UPDATE corridor SET last_used = ? WHERE id = ?", arguments: [now, id]) }) { _ in }
    }

    /// A retired actor someone joins: back in the directory, unless another took its place.
    func reinstate(_ actor: CorridorActor) -> CorridorActor {
        live.withLock { l in
            if let current = l.actors[actor.id] { return current }
            l.actors[actor.id] = actor
            l.index.insert(actor.corridor, id: actor.id)
            return actor
        }
    }
}
