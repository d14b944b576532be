import Synchronization
import Transit

/// The GTFS feeds in force, by name: what alerts are placed in. A feed is swapped whole once its
/// replacement is durable, so a reader sees the old network or the new one, never half of either.
public final class TransitNetworks: Sendable {
    private let networks: Mutex<[String: TransitNetwork]>

    init(_ networks: [String: TransitNetwork]) { self.networks = Mutex(networks) }

    /// Feed `name`'s network, if one was loaded.
    public func network(_ name: String) -> TransitNetwork? { networks.withLock { $0[name] } }

    func replace(_ name: String, with network: TransitNetwork) { networks.withLock { $0[name] = network } }

    /// Feeds loaded (metrics, tests).
    public var names: [String] { networks.withLock { Array($0.keys).sorted() } }
}
