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
/// With several nodes, the intel hub and every live corridor are one node's: the holder of the
/// `route:*` lease (`home`). Intel ops are forwarded there; `route:` rooms are on the room log,
/// so their pushes reach watchers on every node; the expiry timer runs there alone, and moves
/// with the lease when that node dies.
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
                                             help: "seconds between marks of the corridors watched on a node, and the intel hub's look at which to keep live")
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
         karmaPerLink, maxQueryResults, maxQueryDegrees, maxProviderBodyBytes, maxProviderItems, maxTrackPoints, trackGapSeconds,
         trackStartMeters, commentsShown, keepExpiredSeconds, keepCorridorSeconds, pruneSeconds]
    }

    public static func migrations(_ migrator: inout SQLMigrations) { RouteSchema.register(&migrator) }

    /// The lease every `route:` room and the intel hub are under: one owner for all of them.
    public static let home = "\(RoutePush.roomPrefix):*"

    public let hub: IntelHub
    public let directory: CorridorDirectory
    let feed: RoomFeed
    let sweepInterval: Double
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
        hub = try IntelHub(store: context.store, configuration: intel,
                           rooms: CorridorPublishing(feed: context.feed, directory: directory, logger: context.logger))
        feed = context.feed
        sweepInterval = Double(context.settings[Self.sweepSeconds])
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
            let hub = self.hub
            events.subscribe(UserErased.self) { e in Task { await hub.dropPrivate(of: e.user) } }
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
    }

    /// Its private corridors leave memory here, and on the other nodes (the hub's may be another).
    public func erased(user: String) {
        let hub = self.hub
        Task { await hub.dropPrivate(of: user) }
        capabilities.resolve(ClusterEvents.self)?.publish(UserErased(user: user))
    }

    /// An account was deleted on another node (`erased(user:)`): their private corridors leave this node's memory too.
    struct UserErased: ClusterEvent {
        static let topic = "routes.erased"
        var user: String
    }

    public var rooms: [any RoomDirectory] {
        [CorridorRooms(hub: hub, directory: directory, capabilities: capabilities)]
    }

    public var services: [any Service] {
        let hub = self.hub, directory = self.directory, feed = self.feed, capabilities = self.capabilities, pruning = self.pruning
        let window = directory.configuration.retireAfterSeconds
        return [
            Expirer(hub: hub, capabilities: capabilities, window: window),
            // Every node marks the corridors its members watch as used; the owner loads those and
            // retires the ones nobody used.
            Periodic(every: sweepInterval) { now in
                await directory.touch(feed.watched(prefix: RoutePush.roomPrefix), now: now)
                if await capabilities.resolve(LoggedRooms.self)?.holds(Self.home) ?? true { await hub.sweep(now: now, window: window) }
            },
            Periodic(every: pruning.interval) { now in await pruning.run(now: now) },
        ]
    }

    /// `route:<id>`: any logged-in user may watch a corridor that was ever subscribed to (a private
    /// one, only its owner). Every corridor is under the one lease of the intel hub.
    struct CorridorRooms: RoomDirectory {
        let hub: IntelHub
        let directory: CorridorDirectory
        let capabilities: Capabilities
        var prefix: String { RoutePush.roomPrefix }

        func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot {
            try await snapshot(id, for: user, view: .object([]))
        }

        func snapshot(_ id: String, for user: String, view: JSON) async throws(ProtocolError) -> RoomSnapshot {
            try await hub.snapshot(id, for: user, view: try CorridorView(view),
                                   language: capabilities.resolve(UserDirectory.self)?.language(of: user))
        }

        func authorize(_ id: String, for user: String) async throws(ProtocolError) { try await directory.authorize(id, for: user) }
        func lease(of id: String) -> String { RoutesDomain.home }
        func acquired(_ id: String) { hub.invalidate() }
        var ownerHearsResumes: Bool { true }
        func resumed(_ id: String) async throws(ProtocolError) { try await hub.resumed(id) }
    }

    /// Expires items when they fall due, on the routes' owner only: sleeps until the next one (at
    /// most a second, so an earlier one scheduled meanwhile is not late by more). Each node asks
    /// every second whether it holds the lease, so when the owner dies another takes it (and the
    /// timer) within a lease time.
    struct Expirer: Service {
        let hub: IntelHub
        let capabilities: Capabilities
        /// Corridors used this recently are loaded when this node becomes the owner.
        let window: Double

        func run() async throws {
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    var wait = 1.0
                    if await capabilities.resolve(LoggedRooms.self)?.holds(RoutesDomain.home) ?? true {
                        let now = Date().timeIntervalSince1970
                        await hub.refresh(now: now, window: window)
                        _ = await hub.expire(now: now)
                        wait = min(1, max(0.001, (await hub.nextExpiry ?? .infinity) - Date().timeIntervalSince1970))
                    }
                    do { try await Task.sleep(for: .seconds(wait)) } catch { return }
                }
            }
        }
    }
}
