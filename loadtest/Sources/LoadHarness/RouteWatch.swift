import Foundation
import Routes

/// What one traveller checks of its corridor's pushes. Each `intel.added` or `intel.updated`
/// must carry an item inside its corridor (the band's geometry, as the server's: distance to the
/// path at most half the width, within `toleranceMeters`); an item the harness posted must not
/// reach it twice while it watches. What it should have received and did not is found at the end
/// of the run by `DeliveryAudit`, from the windows kept here.
public struct RouteWatch: Sendable {
    /// Slack on the band's edge: the server and the harness compute the same distance from the
    /// same numbers, so this only absorbs floating-point noise.
    public static let toleranceMeters = 0.5

    /// One stretch of watching: from the `route.subscribe` reply to the `unsubscribe` sent on leaving.
    public struct Window: Sendable, Equatable {
        public var from: UInt64
        public var to: UInt64?
        /// Indexes (in the `PostLedger`) of the harness's items received in it.
        public var received: Set<Int32> = []

        public init(from: UInt64, to: UInt64? = nil, received: Set<Int32> = []) {
            self.from = from
            self.to = to
            self.received = received
        }
    }

    /// The traveller's route in the `CommutePlan`.
    public let route: Int
    public let corridor: Corridor
    public private(set) var windows: [Window] = []

    public init(route: Int, corridor: Corridor) {
        self.route = route
        self.corridor = corridor
    }

    /// Whether a window is open.
    public var watching: Bool { windows.last.map { $0.to == nil } ?? false }

    /// The `route.subscribe` reply arrived (monotonic nanoseconds): posts sent after this must come.
    public mutating func began(at nanos: UInt64) {
        if watching { ended(at: nanos) }
        windows.append(Window(from: nanos))
    }

    /// The traveller stopped watching (sent `unsubscribe`, or lost its connection): posts
    /// acknowledged after this need not come.
    public mutating func ended(at nanos: UInt64) {
        guard watching else { return }
        windows[windows.count - 1].to = nanos
    }

    /// Whether `point` lies in the corridor, give or take the tolerance.
    public func inside(_ point: GeoPoint) -> Bool {
        corridor.distance(from: point) <= corridor.widthMeters / 2 + Self.toleranceMeters
    }

    /// An `intel.added` of an item at `point`; `post` is its index in the ledger when the harness
    /// posted it (nil: not the harness's, so only its place is checked).
    @discardableResult
    public mutating func added(at point: GeoPoint, post: Int32?) -> Violations {
        var v = Violations()
        if !inside(point) { v.outsideCorridor += 1 }
        // A push after the window closed (the unsubscribe's reply not yet in) still counts in it.
        if let post, !windows.isEmpty, !windows[windows.count - 1].received.insert(post).inserted {
            v.redelivered += 1
        }
        return v
    }

    /// An `intel.updated` (or a listed item): its item must lie in the corridor too.
    public func updated(at point: GeoPoint) -> Violations {
        var v = Violations()
        if !inside(point) { v.outsideCorridor += 1 }
        return v
    }
}

/// After a run: which of the harness's posts each traveller should have received and did not.
/// A traveller should receive, once, every post that lies in its corridor (by at least the
/// tolerance inside the edge), that was sent after its window began (so the server had it
/// subscribed when the post came in) and acknowledged at least `pushLagNanos` before the window
/// ended (a corridor pushes an item once the change is durable: after the post's reply, by the
/// time of its own write; protocol.md "Intel is pushed after its change").
public enum DeliveryAudit {
    /// How long after a post's reply its pushes may come, in nanoseconds (the harness's clock).
    public static let pushLagNanos: UInt64 = 1_000_000_000

    /// The deliveries expected and those of them that did not happen, over every traveller.
    public static func audit(watches: [RouteWatch], posts: [PostRecord], toleranceMeters: Double = RouteWatch.toleranceMeters,
                             pushLagNanos: UInt64 = DeliveryAudit.pushLagNanos) -> (expected: Int, undelivered: Int) {
        var byRoute: [Int: [Int]] = [:]
        for (i, w) in watches.enumerated() where !w.windows.isEmpty { byRoute[w.route, default: []].append(i) }
        let acked = posts.indices.filter { posts[$0].ackedAt != nil }
        var expected = 0, missing = 0
        for (_, members) in byRoute {
            let corridor = watches[members[0]].corridor
            let box = CorridorBox(corridor, marginMeters: toleranceMeters)
            let half = corridor.widthMeters / 2 - toleranceMeters
            let inside = acked.filter { box.contains(posts[$0].point) && corridor.distance(from: posts[$0].point) <= half }
            guard !inside.isEmpty else { continue }
            for m in members {
                for window in watches[m].windows {
                    for p in inside {
                        let post = posts[p]
                        guard post.sentAt > window.from, let ackedAt = post.ackedAt,
                              window.to.map({ ackedAt + pushLagNanos < $0 }) ?? true else { continue }
                        expected += 1
                        if !window.received.contains(Int32(p)) { missing += 1 }
                    }
                }
            }
        }
        return (expected, missing)
    }
}

/// A box of latitude and longitude holding a corridor's band (for a city: it does not cross the
/// antimeridian or a pole): a cheap test before the distance on the sphere.
struct CorridorBox {
    let minLat, maxLat, minLon, maxLon: Double

    init(_ corridor: Corridor, marginMeters: Double) {
        let lats = corridor.path.map(\.lat), lons = corridor.path.map(\.lon)
        let widest = lats.map(abs).max() ?? 0
        // A great-circle segment bows away from the straight line between its ends in degrees,
        // by about length² / 8R × tan(latitude): allowed for generously.
        let longest = zip(corridor.path, corridor.path.dropFirst()).map { $0.distance(to: $1) }.max() ?? 0
        let bow = longest * longest / GeoPoint.earthRadius * max(1, tan(min(widest, 85) * .pi / 180))
        let reach = corridor.widthMeters / 2 + marginMeters + bow + 1
        let dLat = reach / CommutePlan.metresPerDegree
        let dLon = reach / (CommutePlan.metresPerDegree * max(0.01, cos((widest + dLat) * .pi / 180)))
        minLat = lats.min()! - dLat
        maxLat = lats.max()! + dLat
        minLon = lons.min()! - dLon
        maxLon = lons.max()! + dLon
    }

    func contains(_ p: GeoPoint) -> Bool { p.lat >= minLat && p.lat <= maxLat && p.lon >= minLon && p.lon <= maxLon }
}
