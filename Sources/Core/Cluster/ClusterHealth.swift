import Foundation
import Synchronization

/// What a node knows of its link to the shared database, for `/healthz` and `/metrics`: whether
/// it hears other nodes' commits and events, and when it last renewed its leases (a write that
/// went through).
public final class ClusterHealth: Sendable {
    private let hearsCommits = Atomic<Bool>(false)
    private let hearsEvents = Atomic<Bool>(false)
    /// When the last renewal succeeded (`Ownership.now()` seconds; 0: never).
    private let renewedAt = Mutex<Double>(0)
    /// A renewal older than this means the database is not taking this node's writes.
    let staleAfter: Double

    public init(staleAfterSeconds: Double = 6) { staleAfter = staleAfterSeconds }

    /// Whether this node hears other nodes' commits and events now. (Until it does, what they
    /// count across nodes, such as guessing failures and sign-ups, is not counted here.)
    public var listening: Bool { hearsCommits.load(ordering: .relaxed) && hearsEvents.load(ordering: .relaxed) }

    /// The room log's notifications (`RoomLogFollower`).
    func setListening(_ value: Bool) { hearsCommits.store(value, ordering: .relaxed) }

    /// The cluster's events (`ClusterEventBus`).
    func setHearingEvents(_ value: Bool) { hearsEvents.store(value, ordering: .relaxed) }

    func renewed() { renewedAt.withLock { $0 = Ownership.now() } }

    /// Whether the database takes this node's writes and it hears the others': what `/healthz`
    /// reports (a load balancer takes a node without it out of rotation).
    public var databaseReachable: Bool {
        let at = renewedAt.withLock { $0 }
        return listening && at > 0 && Ownership.now() - at < staleAfter
    }
}
