import Foundation
import Synchronization

/// What a node knows of its link to the shared database, for `/healthz` and `/metrics`: whether
/// it hears other nodes' commits, and when it last renewed its leases (a write that went through).
public final class ClusterHealth: Sendable {
    private let _listening = Atomic<Bool>(false)
    /// When the last renewal succeeded (`Ownership.now()` seconds; 0: never).
    private let renewedAt = Mutex<Double>(0)
    /// A renewal older than this means the database is not taking this node's writes.
    let staleAfter: Double

    public init(staleAfterSeconds: Double = 6) { staleAfter = staleAfterSeconds }

    /// Whether this node hears other nodes' commits now.
    public var listening: Bool { _listening.load(ordering: .relaxed) }

    func setListening(_ value: Bool) { _listening.store(value, ordering: .relaxed) }

    func renewed() { renewedAt.withLock { $0 = Ownership.now() } }

    /// Whether the database takes this node's writes and it hears the others': what `/healthz`
    /// reports (a load balancer takes a node without it out of rotation).
    public var databaseReachable: Bool {
        let at = renewedAt.withLock { $0 }
        return listening && at > 0 && Ownership.now() - at < staleAfter
    }
}
