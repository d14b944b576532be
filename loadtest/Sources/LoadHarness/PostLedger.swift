import Routes
import Synchronization

/// One item the harness posted (a traveller's `intel.post` or one of a provider's burst).
public struct PostRecord: Sendable, Equatable {
    /// `nameHash` of its body: every body the harness posts is unique, and a push carries it, so
    /// a push is matched to its post even when it arrives before the post's reply.
    public var key: UInt64
    public var point: GeoPoint
    /// When it was sent (monotonic nanoseconds).
    public var sentAt: UInt64
    /// When its `ok` reply came back; nil while unanswered, or when refused.
    public var ackedAt: UInt64?
    /// Posted by the provider (`POST /api/intel`), not by a traveller.
    public var byProvider: Bool

    public init(key: UInt64, point: GeoPoint, sentAt: UInt64, ackedAt: UInt64? = nil, byProvider: Bool = false) {
        self.key = key
        self.point = point
        self.sentAt = sentAt
        self.ackedAt = ackedAt
        self.byProvider = byProvider
    }
}

/// Every item posted during a run, shared by all client loops and the provider's thread: a push is
/// looked up here (for its latency and to know which post it delivers), and the delivery audit
/// reads it at the end.
public final class PostLedger: Sendable {
    private struct State {
        var posts: [PostRecord] = []
        var byKey: [UInt64: Int32] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Records a post about to be sent; returns its index.
    @discardableResult
    public func sent(key: UInt64, point: GeoPoint, at nanos: UInt64, byProvider: Bool = false) -> Int32 {
        state.withLock { s in
            let i = Int32(s.posts.count)
            s.posts.append(PostRecord(key: key, point: point, sentAt: nanos, byProvider: byProvider))
            s.byKey[key] = i
            return i
        }
    }

    /// The post was acknowledged `ok`.
    public func acked(_ index: Int32, at nanos: UInt64) {
        state.withLock { $0.posts[Int(index)].ackedAt = nanos }
    }

    /// The post whose body hashes to `key`: its index, when it was sent and whether a provider sent it.
    public func lookup(_ key: UInt64) -> (index: Int32, sentAt: UInt64, byProvider: Bool)? {
        state.withLock { s in
            guard let i = s.byKey[key] else { return nil }
            return (i, s.posts[Int(i)].sentAt, s.posts[Int(i)].byProvider)
        }
    }

    /// Every post so far.
    public var posts: [PostRecord] { state.withLock { $0.posts } }
}
