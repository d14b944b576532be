import Synchronization
import Transit

/// The GTFS feeds in force, by name: what alerts are placed in. A feed is swapped whole once its
/// replacement is durable, so a reader sees the old network or the new one, never half of either.
public final class TransitNetworks: Sendable {
    private let networks: Mutex<[String: TransitNetwork]>
    /// Versions being written by uploads, not in force yet (`NetworkRows.dropOrphans` spares them).
    private let inProgress = Mutex<Set<Int64>>([])

    init(_ networks: [String: TransitNetwork]) { self.networks = Mutex(networks) }

    func beginWriting(_ version: Int64) { _ = inProgress.withLock { $0.insert(version) } }
    func endWriting(_ version: Int64) { _ = inProgress.withLock { $0.remove(version) } }
    var writing: Set<Int64> { inProgress.withLock { $0 } }

    /// Feed `name`'s network, if one was loaded.
    public func network(_ name: String) -> TransitNetwork? { networks.withLock { $0[name] } }

    func replace(_ name: String, with network: TransitNetwork) { networks.withLock { $0[name] = network } }

    /// Feeds loaded (metrics, tests).
    public var names: [String] { networks.withLock { Array($0.keys).sorted() } }
}
