import Realtime
import Routes

/// The intel stream as another domain feeds it named items (the transit domain's alerts): a batch
/// applied in one durable write, with each change pushed to the corridors it concerns, once each
/// (see `IntelHub.apply`). The routes domain provides it as a capability.
public struct NamedIntelFeed: Sendable {
    let hub: IntelHub

    /// What a batch did.
    public struct Outcome: Sendable, Equatable {
        public var added = 0, changed = 0, ended = 0, unchanged = 0
    }

    /// Applies `batch` (see `IntelHub.apply`): `intel.added` is pushed where an item arrives,
    /// `intel.updated` where it stays, `intel.expired` where it leaves or ends.
    public func apply(_ batch: [NamedItem], scope: String, ending: NamedEnding, now: Double) async throws(ProtocolError) -> Outcome {
        let (changes, unchanged) = try await hub.apply(batch, scope: scope, ending: ending, now: now)
        var outcome = Outcome(unchanged: unchanged)
        for change in changes {
            switch change {
            case .added: outcome.added += 1
            case .revised: outcome.changed += 1
            case .ended: outcome.ended += 1
            }
        }
        return outcome
    }
}
