import Realtime
import Synchronization

/// What a domain holds in memory for a lease (tonight's catalog and event-goers), loaded on first
/// use and made current again after this node takes the lease: another node may have changed
/// everything meanwhile. A node that never holds the lease never loads it. Taking the lease only
/// marks it stale (`invalidate`, inside the claim: no read there); the first caller after that
/// (op, endpoint, snapshot, timer) reloads it (`ready`), every caller waiting for that one reload.
/// A reload that fails leaves it stale and answers `unavailable` (the next caller tries again),
/// so nobody is served what the store has moved past.
public final class ReloadGate: Sendable {
    private let stale: TakeOverFlag
    /// The reload under way, if any: its outcome (true: memory is current).
    private let running = Mutex<Task<Bool, Never>?>(nil)
    private let reload: @Sendable () async -> Bool
    private let what: String

    /// `reload` reads the store into memory and says whether it could; `stale`: nothing is loaded
    /// yet (the first use loads it); `what` names the memory in the `unavailable` answer.
    public init(_ what: String, stale: Bool, reload: @escaping @Sendable () async -> Bool) {
        self.what = what
        self.stale = TakeOverFlag(set: stale)
        self.reload = reload
    }

    /// This node took the lease: reload before the next use.
    public func invalidate() { stale.set() }

    /// Returns once memory is current; `unavailable` if it could not be reloaded.
    public func ready() async throws(ProtocolError) {
        let task: Task<Bool, Never>? = running.withLock { running in
            if let running { return running }
            guard stale.take() else { return nil }
            let reload = self.reload, stale = self.stale
            let task = Task {
                let done = await reload()
                if !done { stale.set() }
                return done
            }
            running = task
            return task
        }
        guard let task else { return }
        let done = await task.value
        running.withLock { if $0 == task { $0 = nil } }
        if !done { throw ProtocolError(.unavailable, "\(what) could not be loaded; try again") }
    }
}
