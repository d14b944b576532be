import Storage
import Synchronization
import Transit

/// The GTFS feeds in force, by name: what alerts are placed in. A feed is swapped whole once its
/// replacement is durable, so a reader sees the old network or the new one, never half of either.
///
/// With several nodes, an upload and an alert may land on different nodes (an alert is placed on
/// the node that receives it): `current(_:store:)` reloads a feed whose stored version is not the
/// one held here.
public final class TransitNetworks: Sendable {
    private let networks: Mutex<[String: (network: TransitNetwork, version: Int64)]>
    /// Versions being written by uploads, not in force yet (`NetworkRows.dropOrphans` spares them).
    private let inProgress = Mutex<Set<Int64>>([])

    init(_ networks: [String: (network: TransitNetwork, version: Int64)]) { self.networks = Mutex(networks) }

    func beginWriting(_ version: Int64) { _ = inProgress.withLock { $0.insert(version) } }
    func endWriting(_ version: Int64) { _ = inProgress.withLock { $0.remove(version) } }
    var writing: Set<Int64> { inProgress.withLock { $0 } }

    /// Feed `name`'s network, if one was loaded.
    public func network(_ name: String) -> TransitNetwork? { networks.withLock { $0[name]?.network } }

    func replace(_ name: String, with network: TransitNetwork, version: Int64) { networks.withLock { $0[name] = (network, version) } }

    /// Feed `name`'s network in force in the store: the one held here, or loaded again if another
    /// node put a newer version in force since.
    func current(_ name: String, store: Store) async throws -> TransitNetwork? {
        let held = networks.withLock { $0[name] }
        let stored = try await store.read { db in try Int64.fetchOne(db, sql: "SELECT version FROM transit_feed WHERE name = ?", arguments: [name]) }
        guard let stored else { return nil }
        if let held, held.version == stored { return held.network }
        guard let loaded = try await store.read({ db in try NetworkRows.load(name, version: stored, db) }) else { return nil }
        networks.withLock { current in
            if current[name].map({ $0.version < stored }) ?? true { current[name] = (loaded, stored) }
        }
        return loaded
    }

    /// Feeds loaded (metrics, tests).
    public var names: [String] { networks.withLock { Array($0.keys).sorted() } }
}
