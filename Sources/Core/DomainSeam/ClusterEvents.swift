import Realtime

/// What a domain tells the other nodes (several nodes on one PostgreSQL; the core provides it only
/// then): small typed events, delivered to every other node's handlers of that type, in the order
/// this node published them, within milliseconds. For memory each node keeps in step with the
/// store (revoked tokens, who hides what, guessing limits): a node that was not listening misses
/// events, so `onResync` handlers reload such memory from the store whenever a node starts
/// listening again.
public protocol ClusterEvents: Sendable {
    /// Tells the other nodes (not this one).
    func publish<E: ClusterEvent>(_ event: E)
    /// Runs `handler` for each event of type `E` from another node (one that cannot be read as an
    /// `E` is logged and dropped).
    func subscribe<E: ClusterEvent>(_ type: E.Type, _ handler: @escaping @Sendable (E) -> Void)
    /// Runs `handler` each time this node (re)starts hearing events (it may have missed some).
    func onResync(_ handler: @escaping @Sendable () -> Void)
}

/// One kind of event of `ClusterEvents`: its fields are its schema, its topic where it travels.
public protocol ClusterEvent: Codable, Sendable {
    /// Unique among every domain's events (`auth.revoked`): the domain's name, then the event's.
    static var topic: String { get }
}

extension PrivateList: Codable {}
extension Audience: Codable {}
