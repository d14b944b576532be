import Synchronization

/// Set from any thread (this node took a lease: what a domain holds may be stale), taken once by
/// whoever acts on it (reloads, tells what was left untold).
public final class TakeOverFlag: Sendable {
    private let flag: Atomic<Bool>
    public init(set: Bool = false) { flag = Atomic(set) }
    public func set() { flag.store(true, ordering: .releasing) }
    /// Whether it was set; clears it.
    public func take() -> Bool { flag.exchange(false, ordering: .acquiringAndReleasing) }
}
