import Realtime

/// What a domain tells the other nodes (several nodes on one PostgreSQL; the core provides it only
/// then): small JSON payloads on a topic (`auth.revoked`), delivered to every other node's
/// handlers of that topic, in the order this node published them, within milliseconds. For memory
/// each node keeps in step with the store (revoked tokens, who hides what, guessing limits):
/// a node that was not listening misses events, so `onResync` handlers reload such memory from
/// the store whenever a node starts listening again.
public protocol ClusterEvents: Sendable {
    /// Tells the other nodes (not this one).
    func publish(_ topic: String, _ payload: JSON)
    /// Runs `handler` for each event on `topic` from another node.
    func subscribe(_ topic: String, _ handler: @escaping @Sendable (JSON) -> Void)
    /// Runs `handler` each time this node (re)starts hearing events (it may have missed some).
    func onResync(_ handler: @escaping @Sendable () -> Void)
}
