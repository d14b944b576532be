import Synchronization

/// What a node knows of its link to the shared database, for `/healthz` and `/metrics`.
public final class ClusterHealth: Sendable {
    private let _listening = Atomic<Bool>(false)

    public init() {}

    /// Whether this node hears other nodes' commits now.
    public var listening: Bool { _listening.load(ordering: .relaxed) }

    func setListening(_ value: Bool) { _listening.store(value, ordering: .relaxed) }
}
