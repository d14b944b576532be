import DomainSeam
import Foundation
import GRDB
import Realtime
import Routes
import Storage
import Synchronization

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
    private let store: Store
    private let sink: any PushSink
    private let live: Mutex<Live>

    public init(store: Store, hub: IntelHub, sink: any PushSink, configuration: Configuration,
                aliases: @escaping @Sendable ([String]) async -> [String: String]) {
        self.store = store
        self.hub = hub
        self.aliases = aliases
        self.sink = sink
        self.configuration = configuration
        live = Mutex(Live(index: CorridorIndex(grid: configuration.grid)))
    }

    /// Corridors live now.
    public var liveCount: Int { live.withLock { $0.actors.count } }

    /// The actor of `corridor`, made (and its definition stored) on first use.
    func actor(for corridor: Corridor) async throws(ProtocolError) -> CorridorActor {
        let id = corridor.id
        if let existing = live.withLock({ $0.actors[id] }) { return existing }
        let path = corridor.path.map { "\($0.lat),\($0.lon)" }.joined(separator: ";"), width = corridor.widthMeters
        do {
            try await store.write { db in
                try db.execute(sql: "INSERT OR IGNORE INTO corridor (id, path, width, created_at) VALUES (?, ?, ?, ?)",
                               arguments: [id, path, width, Date().timeIntervalSince1970])
            }
        } catch {
            throw ProtocolError(.unavailable, "could not save the corridor; try again")
        }
        return adopt(corridor, id: id)
    }

    /// The host of room `route:<id>`: live, or made again from its stored definition.
    func host(_ id: String) async throws(ProtocolError) -> CorridorActor {
        if let existing = live.withLock({ $0.actors[id] }) { return existing }
        let row: (String, Double)?
        do {
            row = try await store.read { db in
                try Row.fetchOne(db, sql: "SELECT path, width FROM corridor WHERE id = ?", arguments: [id]).map { ($0["path"], $0["width"]) }
            }
        } catch {
            throw ProtocolError(.unavailable, "could not read corridors")
        }
        guard let (path, width) = row else { throw .notFound("no corridor \(id)") }
        let points = path.split(separator: ";").compactMap { pair -> GeoPoint? in
            let parts = pair.split(separator: ",")
            guard parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]) else { return nil }
            return GeoPoint(lat: lat, lon: lon)
        }
        guard !points.isEmpty else { throw ProtocolError(.internal, "corridor \(id) is stored damaged") }
        return adopt(Corridor(path: points, widthMeters: width), id: id)
    }

    func liveHost(_ id: String) -> CorridorActor? { live.withLock { $0.actors[id] } }

    /// The live corridors whose band contains `point`.
    func corridors(containing point: GeoPoint) -> [CorridorActor] {
        live.withLock { l in l.index.corridors(containing: point).compactMap { l.actors[$0] } }
    }

    private func adopt(_ corridor: Corridor, id: String) -> CorridorActor {
        live.withLock { l in
            if let existing = l.actors[id] { return existing }
            let made = CorridorActor(id: id, corridor: corridor, directory: self, hub: hub, sink: sink, history: configuration.history)
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

    /// A sweep retires `actor` (from inside it, so no join comes in between).
    func forget(_ actor: CorridorActor) {
        live.withLock { l in
            guard l.actors[actor.id] === actor else { return }
            l.actors[actor.id] = nil
            l.index.remove(id: actor.id)
        }
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
