import Realtime
import Routes

/// The intel stream as another domain feeds it named items (the transit domain's alerts): a batch
/// applied in one durable write, then each change pushed to the corridors it concerns, once each.
/// The routes domain provides it as a capability.
public struct NamedIntelFeed: Sendable {
    let hub: IntelHub
    let directory: CorridorDirectory
    let sink: any PushSink

    /// What a batch did.
    public struct Outcome: Sendable, Equatable {
        public var added = 0, changed = 0, ended = 0, unchanged = 0
    }

    /// Applies `batch` (see `IntelHub.apply`) and pushes what changed: `intel.added` where an item
    /// arrives, `intel.updated` where it stays, `intel.expired` where it leaves or ends.
    public func apply(_ batch: [NamedItem], scope: String, ending: NamedEnding, now: Double) async throws(ProtocolError) -> Outcome {
        let (changes, unchanged) = try await hub.apply(batch, scope: scope, ending: ending, now: now)
        var outcome = Outcome(unchanged: unchanged)
        for change in changes {
            switch change {
            case .added(let item):
                outcome.added += 1
                await directory.publish(.added, item, aliases: [:])
            case .revised(let before, let after):
                outcome.changed += 1
                let was = directory.corridors(containing: before.points), now = directory.corridors(containing: after.points)
                let wasIDs = Set(was.map(\.id)), nowIDs = Set(now.map(\.id))
                await directory.publish(.updated, after, aliases: [:], to: now.filter { wasIDs.contains($0.id) })
                await directory.publish(.added, after, aliases: [:], to: now.filter { !wasIDs.contains($0.id) })
                for corridor in was where !nowIDs.contains(corridor.id) { await corridor.publish(.expired, ["item": .string(before.id)]) }
            case .ended(let item):
                outcome.ended += 1
                for corridor in directory.corridors(containing: item.points) { await corridor.publish(.expired, ["item": .string(item.id)]) }
            }
            // One item's pushes at a time: travellers' pushes queued meanwhile go out in between.
            await sink.settle()
        }
        return outcome
    }
}
