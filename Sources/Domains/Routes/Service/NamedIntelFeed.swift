import Realtime
import Routes

/// The intel stream as another domain feeds it named items (the transit domain's alerts), on
/// whichever node received them: the batch goes to the owner of the `named` shard in parts of
/// at most `maxPoints` points (one durable write and one message each), and each
/// change is pushed to the corridors it concerns, once each (see `IntelHub.apply`). The routes
/// domain provides it as a capability.
public struct NamedIntelFeed: Sendable {
    let hub: IntelHub
    /// The most points in one part (one write, one message to the owner).
    let maxPoints: Int

    /// At most this many points per part by default (an item of more is a part of its own): some
    /// hundreds of kB a message.
    public static let defaultMaxPoints = 20_000

    public init(hub: IntelHub, maxPoints: Int = defaultMaxPoints) {
        self.hub = hub
        self.maxPoints = maxPoints
    }

    /// What a batch did.
    public struct Outcome: Sendable, Equatable {
        public var added = 0, changed = 0, ended = 0, unchanged = 0

        public init(added: Int = 0, changed: Int = 0, ended: Int = 0, unchanged: Int = 0) {
            self.added = added
            self.changed = changed
            self.ended = ended
            self.unchanged = unchanged
        }

        static func += (a: inout Outcome, b: Outcome) {
            a.added += b.added; a.changed += b.changed; a.ended += b.ended; a.unchanged += b.unchanged
        }
    }

    /// Applies `batch` (see `IntelHub.apply`): `intel.added` is pushed where an item arrives,
    /// `intel.updated` where it stays, `intel.expired` where it leaves or ends. The parts are
    /// applied in order and `ending` with the last, so a full dataset ends nothing its earlier
    /// parts named. A part that fails stops the batch (`unavailable`): the parts before it stay
    /// applied, and sending the batch again completes it (an item applied twice is unchanged).
    public func apply(_ batch: [NamedItem], scope: String, ending: NamedEnding, now: Double) async throws(ProtocolError) -> Outcome {
        let parts = Self.parts(batch, maxPoints: maxPoints)
        var outcome = Outcome()
        for (index, part) in parts.enumerated() {
            let last = index == parts.count - 1
            let partEnding: NamedEnding = switch ending {
            case _ where !last: .listed([])
            case .allOthers where parts.count > 1: .allOthersBut(parts.dropLast().flatMap { $0.map(\.name) })
            default: ending
            }
            do throws(ProtocolError) {
                outcome += try await hub.applyOnOwner(part, scope: scope, ending: partEnding, now: now)
            } catch {
                guard index > 0 else { throw error }
                throw ProtocolError(error.code, "\(error.message) (\(index) of the message's \(parts.count) parts were applied; send it again to complete it)",
                                    retryAfterMs: error.retryAfterMs)
            }
        }
        return outcome
    }

    /// `batch` cut in order into parts of at most `maxPoints` points (an item of more is a part of
    /// its own); never no part, so an empty batch still carries its ending.
    static func parts(_ batch: [NamedItem], maxPoints: Int) -> [[NamedItem]] {
        var parts: [[NamedItem]] = [[]], points = 0
        for item in batch {
            if points + item.points.count > maxPoints, !parts[parts.count - 1].isEmpty {
                parts.append([])
                points = 0
            }
            parts[parts.count - 1].append(item)
            points += item.points.count
        }
        return parts
    }
}

extension NamedIntelFeed.Outcome {
    init(_ changes: [NamedChange], unchanged: Int) {
        self.init(unchanged: unchanged)
        for change in changes {
            switch change {
            case .added: added += 1
            case .revised: changed += 1
            case .ended: ended += 1
            }
        }
    }
}
