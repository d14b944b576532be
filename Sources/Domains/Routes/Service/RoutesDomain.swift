import DomainSeam
import Foundation
import Realtime
import RoomLog
import Routes
import ServiceLifecycle
import Storage

/// Route corridors and the intel stream (seed 003) on the seam: `route:` rooms, the route and
/// intel ops, its tables, its settings, the expiry timer and the sweeper of idle corridors.
///
/// The intel items are split into shards (`IntelShards`), each an actor (`IntelShard`) on the
/// holder of its lease (`intel:<shard>`): ops on an item are forwarded there, and it writes each
/// change once, to its shard's log, and expires its items. Each corridor is a `CorridorActor` on
/// every node where someone watches it, which makes its pushes from those logs (`CorridorHost`):
/// `route:` rooms are local (`RoomPlacement.local`), never written. A shard whose node died is
/// taken by any node that finds it unheld.
public struct RoutesDomain: Domain {
    public static let name = "routes"

    public static let intelTtlSeconds = Setting("routes.intelTtlSeconds", default: 43_200, range: 1...2_592_000,
                                                help: "an intel item expires this long after it was posted or last liked")
    public static let defaultWidthMeters = Setting("routes.defaultWidthMeters", default: 500, range: 10...20_000,
                                                   help: "a corridor's width when route.subscribe gives none")
    public static let maxWidthMeters = Setting("routes.maxWidthMeters", default: 20_000, range: 10...200_000,
                                               help: "the widest corridor route.subscribe accepts")
    public static let maxPathKm = Setting("routes.maxPathKm", default: 500, range: 1...20_000,
                                          help: "the longest path (from, via..., to) a corridor may follow")
    public static let retireAfterSeconds = Setting("routes.retireAfterSeconds", default: 600, range: 1...86_400,
                                                   help: "seconds a corridor nobody watches stays in memory")
    public static let sweepSeconds = Setting("routes.sweepSeconds", default: 30, range: 1...3_600,
                                             help: "seconds between marks of the corridors watched on a node, each node's look at which of its corridors to keep live, and its look for intel shards holding live items that no node holds (it claims them, so their items expire)")
    public static let takeOverSeconds = Setting("routes.takeOverSeconds", default: 2, range: 1...600,
                                                help: "seconds between each node's look for corridors watched there that are not loaded (their intel shard's log began a new epoch): it loads them again")
    public static let shardDegrees = Setting("routes.shardDegrees", default: 0.05, range: 0.001...10.0,
                                             help: "the size of an intel shard's cell, in degrees of latitude (each shard's items are decided by one owner and written to one log)")
    public static let karmaPerItem = Setting("routes.karmaPerItem", default: 1, range: 0...1_000, help: "karma for sharing an item")
    public static let karmaPerLike = Setting("routes.karmaPerLike", default: 2, range: 0...1_000,
                                             help: "karma for each like an item receives")
    public static let karmaPerLink = Setting("routes.karmaPerLink", default: 2, range: 0...1_000,
                                             help: "karma to each linked item's poster (not to whoever links)")
    public static let maxQueryResults = Setting("routes.maxQueryResults", default: 500, range: 1...10_000,
                                                help: "most items intel.query answers (newest first)")
    public static let maxQueryDegrees = Setting("routes.maxQueryDegrees", default: 2.0, range: 0.001...360.0,
                                                help: "the largest box intel.query takes, in degrees of latitude and of longitude")

    public static let maxProviderBodyBytes = Setting("routes.maxProviderBodyBytes", default: 8 << 20, range: 1_024...(1 << 30),
                                                     help: "the largest body POST /api/intel takes (413 beyond it)")
    public static let maxProviderItems = Setting("routes.maxProviderItems", default: 10_000, range: 1...1_000_000,
                                                 help: "the most items one POST /api/intel may carry")

    public static let maxTrackPoints = Setting("routes.maxTrackPoints", default: 5_000, range: 2...100_000,
                                               help: "the most points one recorded path (route.track) holds")
    public static let trackGapSeconds = Setting("routes.trackGapSeconds", default: 1_800, range: 60...86_400,
                                                help: "route.track points this long after the last ones start a new recording")
    public static let trackStartMeters = Setting("routes.trackStartMeters", default: 1_000, range: 10...50_000,
                                                 help: "route.subscribe follows a recorded path from a start this close to the recording's")

    public static let commentsShown = Setting("routes.commentsShown", default: 200, range: 1...10_000,
                                              help: "the most comments intel.get returns (the newest; commentsTruncated says when there are more)")
    public static let keepExpiredSeconds = Setting("routes.keepExpiredSeconds", default: 604_800, range: 0...315_360_000,
                                                   help: "seconds an expired item (with its likes, comments, links) stays on disk before it is deleted")
    public static let keepCorridorSeconds = Setting("routes.keepCorridorSeconds", default: 2_592_000, range: 0...315_360_000,
                                                    help: "seconds a corridor nobody watches stays on disk (its room id then answers not_found)")
    public static let pruneSeconds = Setting("routes.pruneSeconds", default: 3_600, range: 1...86_400,
                                             help: "seconds between deletions of old expired items and unused corridors")

    public static var settings: [any AnySetting] {
        [intelTtlSeconds, defaultWidthMeters, maxWidthMeters, maxPathKm, retireAfterSeconds, sweepSeconds, karmaPerItem, karmaPerLike,
         karmaPerLink, takeOverSeconds, shardDegrees, maxQueryResults, maxQueryDegrees, maxProviderBodyBytes, maxProviderItems, maxTrackPoints, trackGapSeconds,
         trackStartMeters, commentsShown, keepExpiredSeconds, keepCorridorSeconds, pruneSeconds]
    }

    public static func migrations(_ migrator: inout SQLMigrations) { RouteSchema.register(&migrator) }

    /// The lease (and log) of the named items' shard, where a provider's named items are decided
    /// (the transit domain's alerts are served on its holder).
    public static let namedHome = CorridorHost.logRoom(IntelShards.named)

    public let hub: IntelHub
    public let directory: CorridorDirectory
    /// The corridors live on this node.
    let host: CorridorHost
    let feed: RoomFeed
    let sweepInterval: Double
    let takeOverInterval: Double
    let maxQueryDegrees: Double
    let capabilities: Capabilities
    let store: Store
    private let provider: ProviderIntel
    let recording: RecordedPaths.Limits
    let commentsShown: Int
    private let pruning: Pruning
    let following: RecordedPath.Rules

    public init(context: DomainContext) throws {
        let capabilities = context.capabilities
        var corridors = CorridorDirectory.Configuration()
        corridors.defaultWidthMeters = Double(context.settings[Self.defaultWidthMeters])
        corridors.limits.maxWidthMeters = Double(context.settings[Self.maxWidthMeters])
        corridors.limits.maxPathMeters = Double(context.settings[Self.maxPathKm]) * 1000
        corridors.retireAfterSeconds = Double(context.settings[Self.retireAfterSeconds])
        directory = CorridorDirectory(store: context.store, configuration: corridors) { users in
            // No accounts domain (tests of this one alone): every user is shown by id.
            guard let names = capabilities.resolve(UserDirectory.self) else { return Dictionary(users.map { ($0, $0) }, uniquingKeysWith: { a, _ in a }) }
            return (try? await names.aliases(of: users)) ?? [:]
        }
        var intel = IntelHub.Configuration()
        intel.ttlSeconds = Double(context.settings[Self.intelTtlSeconds])
        intel.karmaPerItem = context.settings[Self.karmaPerItem]
        intel.karmaPerLike = context.settings[Self.karmaPerLike]
        intel.karmaPerLink = context.settings[Self.karmaPerLink]
        intel.maxQueryResults = context.settings[Self.maxQueryResults]
        intel.shards = IntelShards(degrees: context.settings[Self.shardDegrees])
        hub = IntelHub(store: context.store, configuration: intel,
                       rooms: CorridorPublishing(feed: context.feed, directory: directory, logger: context.logger),
                       owners: LeaseCalls(capabilities: capabilities))
        host = CorridorHost(store: context.store, feed: context.feed, directory: directory, shards: intel.shards, grid: intel.grid,
                            logger: context.logger)
        feed = context.feed
        sweepInterval = Double(context.settings[Self.sweepSeconds])
        takeOverInterval = Double(context.settings[Self.takeOverSeconds])
        maxQueryDegrees = context.settings[Self.maxQueryDegrees]
        self.capabilities = capabilities
        store = context.store
        recording = RecordedPaths.Limits(maxPoints: context.settings[Self.maxTrackPoints],
                                         journeyGapSeconds: Double(context.settings[Self.trackGapSeconds]))
        var following = RecordedPath.Rules()
        following.startMeters = Double(context.settings[Self.trackStartMeters])
        self.following = following
        commentsShown = context.settings[Self.commentsShown]
        let feed = context.feed
        pruning = Pruning(store: context.store, watched: { feed.watched(prefix: RoutePush.roomPrefix) }, interval: Double(context.settings[Self.pruneSeconds]),
                          keepExpiredSeconds: Double(context.settings[Self.keepExpiredSeconds]),
                          keepCorridorSeconds: Double(context.settings[Self.keepCorridorSeconds]), logger: context.logger)
        context.capabilities.provide(NamedIntelFeed.self, NamedIntelFeed(hub: hub))
        if let events = capabilities.resolve(ClusterEvents.self) {
            let host = self.host
            events.subscribe(PrivateCorridorsGone.self) { e in host.dropPrivate(of: e.user, destination: e.destination) }
        }
        provider = ProviderIntel(hub: hub, maxBodyBytes: context.settings[Self.maxProviderBodyBytes],
                                 maxItems: context.settings[Self.maxProviderItems])
    }

    public var endpoints: [HTTPEndpoint] { [provider.endpoint] }

    /// An account deleted: its destinations, recorded paths and the private corridors along them
    /// go in the deletion's transaction, and so does its karma. Its items and comments stay, shown
    /// as a deleted user's.
    public func erase(user: String, _ db: any SQLDatabase) throws {
        try db.execute(sql: "DELETE FROM destination WHERE user = ?", arguments: [user])
        try db.execute(sql: "DELETE FROM recorded_path WHERE user = ?", arguments: [user])
        try db.execute(sql: "DELETE FROM corridor WHERE owner = ?", arguments: [user])
        try db.execute(sql: "DELETE FROM karma WHERE user = ?", arguments: [user])
        try db.execute(sql: "DELETE FROM karma_shard WHERE user = ?", arguments: [user])
    }

    /// Its private corridors leave memory here, and on the other nodes (they may live on any).
    public func erased(user: String) {
        host.dropPrivate(of: user)
        capabilities.resolve(ClusterEvents.self)?.publish(PrivateCorridorsGone(user: user))
    }

    /// A user's account (`erased(user:)`) or one of their destinations (`destination.forget`) went
    /// on another node: the private corridors along them leave this node's memory too.
    struct PrivateCorridorsGone: ClusterEvent {
        static let topic = "routes.erased"
        var user: String
        /// The destination whose corridor went; nil: all the user's.
        var destination: String?
    }

    public var rooms: [any RoomDirectory] {
        [CorridorRooms(host: host, directory: directory, capabilities: capabilities), ShardLogs(hub: hub)]
    }

    public var services: [any Service] {
        let hub = self.hub, host = self.host, directory = self.directory, feed = self.feed, capabilities = self.capabilities
        let pruning = self.pruning, window = directory.configuration.retireAfterSeconds, sweep = sweepInterval
        return [
            Expirer(hub: hub, capabilities: capabilities),
            // A shard holding live items whose owner is gone (or that no node held since a start)
            // is claimed here, so its items expire without waiting for an op to claim it: at
            // start, then every sweep (one read of the shards holding live items).
            Periodic(every: sweepInterval, atStart: {}) { now in await hub.claimUnheld(now: now, rooms: capabilities.resolve(LoggedRooms.self)) },
            // Every node marks the corridors its members watch as used (their `last_used`, which
            // keeps them on disk), and retires its live corridors nobody watched here lately.
            Periodic(every: sweepInterval) { now in
                let watched = feed.watched(prefix: RoutePush.roomPrefix)
                // Marked within half a sweep by another node: left alone (the window is far longer).
                await directory.touch(watched, now: now, freshSeconds: sweep / 2)
                host.retire(now: now, window: window, watched: Set(watched))
            },
            // A corridor watched here and not loaded (its shard's log began a new epoch) is
            // loaded again: its watchers get the new epoch's pushes and take a snapshot.
            Periodic(every: takeOverInterval) { _ in await host.reopen(watched: feed.watched(prefix: RoutePush.roomPrefix)) },
            Periodic(every: pruning.interval) { now in await pruning.run(now: now) },
        ]
    }

    /// `route:<id>`: any logged-in user may watch a corridor that was ever subscribed to (a private
    /// one, only its owner). Each node makes the corridors its members watch (`local`).
    struct CorridorRooms: RoomDirectory {
        let host: CorridorHost
        let directory: CorridorDirectory
        let capabilities: Capabilities
        var prefix: String { RoutePush.roomPrefix }
        var placement: RoomPlacement { .local }

        func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot {
            try await snapshot(id, for: user, view: .object([]))
        }

        /// A private corridor is `not_found` to everyone but its owner.
        func snapshot(_ id: String, for user: String, view: JSON) async throws(ProtocolError) -> RoomSnapshot {
            let shape = try CorridorView(view)
            let corridor = try await host.open(id)
            guard corridor.owner.map({ $0.user == user }) ?? true else { throw .notFound("no corridor \(id)") }
            return try await corridor.snapshot(view: shape, language: capabilities.resolve(UserDirectory.self)?.language(of: user),
                                               aliases: directory.aliases)
        }

        func authorize(_ id: String, for user: String) async throws(ProtocolError) { try await directory.authorize(id, for: user) }

        var ownerHearsResumes: Bool { true }

        /// A member resumes the corridor (here: its room is local): it is live here from now on (loaded in a new epoch
        /// if it was not, so the resume gives way to a snapshot).
        func resumed(_ id: String) async throws(ProtocolError) {
            try await host.open(id).touch(at: Date().timeIntervalSince1970)
        }
    }

    /// `intel:<shard>`: a shard's log, the server's own (corridors make their pushes from it); no
    /// client watches it. Its lease is the shard's: the node holding it runs the shard's actor.
    struct ShardLogs: RoomDirectory {
        let hub: IntelHub
        var prefix: String { "intel" }

        func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot {
            throw .notFound("no room intel:\(id): a shard's log is the server's; subscribe to a corridor (route.subscribe)")
        }

        func authorize(_ id: String, for user: String) async throws(ProtocolError) {
            throw .notFound("no room intel:\(id): a shard's log is the server's; subscribe to a corridor (route.subscribe)")
        }

        /// This node took the shard's lease: what it held of the shard may be stale.
        func acquired(_ id: String) { hub.invalidate(id) }
    }

    /// Asks the holder of a shard's lease to run a shard op, when that is another node.
    struct LeaseCalls: ShardOwners {
        let capabilities: Capabilities
        func call(_ op: String, args: JSON, on lease: String) async throws(ProtocolError) -> JSON? {
            try await capabilities.resolve(LoggedRooms.self)?.call(op, args: args, on: lease)
        }
    }

    /// Expires items when they fall due, in the shards this node holds (each shard's owner
    /// expires its own): sleeps until the next one (at most a second, so an earlier one scheduled
    /// meanwhile is not late by more). A shard whose lease this node no longer holds goes from it.
    struct Expirer: Service {
        let hub: IntelHub
        let capabilities: Capabilities

        func run() async throws {
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    let rooms = capabilities.resolve(LoggedRooms.self)
                    _ = await hub.expire(now: Date().timeIntervalSince1970) { lease in rooms?.holdsNow(lease) ?? true }
                    let wait = min(1, max(0.001, (await hub.nextExpiry ?? .infinity) - Date().timeIntervalSince1970))
                    do { try await Task.sleep(for: .seconds(wait)) } catch { return }
                }
            }
        }
    }
}
