import DomainSeam
import Foundation
import Logging
import Realtime
import ServiceLifecycle
import Storage
import Venues

/// The venues domain (seed 001, the social jukebox) on the seam: `venue:` rooms, the venue ops,
/// its tables, its settings and the sweeper that retires idle venues.
public struct VenuesDomain: Domain {
    public static let name = "venues"

    /// A venue is retired (its state is on disk, its subscribers stay with the feed) after this long without activity.
    public static let retireAfterSeconds = Setting("venues.retireAfterSeconds", default: 600, range: 1...86_400,
                                                   help: "seconds an inactive venue stays in memory")
    /// How often quiet rooms' histories are trimmed and idle venues retired.
    public static let sweepSeconds = Setting("venues.sweepSeconds", default: 30, range: 1...3_600,
                                             help: "seconds between sweeps of quiet rooms and idle venues")
    public static let maxSearchResults = Setting("venues.maxSearchResults", default: 50, range: 1...1_000,
                                                 help: "most venues venue.search answers (venue.nearby: four times as many)")

    public static var settings: [any AnySetting] { [retireAfterSeconds, sweepSeconds, maxSearchResults] }

    public static func migrations(_ migrator: inout SQLMigrations) { VenueSchema.register(&migrator) }

    public let directory: VenueDirectory
    let capabilities: Capabilities
    private let sweeper: Periodic

    public init(context: DomainContext) {
        var configuration = VenueDirectory.Configuration()
        configuration.retireAfterSeconds = Double(context.settings[Self.retireAfterSeconds])
        configuration.maxSearchResults = context.settings[Self.maxSearchResults]
        let capabilities = context.capabilities
        directory = VenueDirectory(store: context.store, feed: context.feed, configuration: configuration) { list, user in
            capabilities.resolve(UserDirectory.self)?.hides(list, user) ?? false
        }
        self.capabilities = capabilities
        // Retires idle venues.
        let venues = directory
        sweeper = Periodic(every: Double(context.settings[Self.sweepSeconds])) { now in await venues.sweep(now: now) }
    }

    public var ops: [Op] { jukeboxOps + profileOps }
    public var rooms: [any RoomDirectory] { [VenueRooms(directory: directory)] }
    public var services: [any Service] { [sweeper] }

    /// `venue:<id>`: any logged-in user may watch any venue that exists.
    struct VenueRooms: RoomDirectory {
        let directory: VenueDirectory
        var prefix: String { VenuePush.roomPrefix }
        func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot {
            try await directory.actor(for: id).snapshot()
        }
        func authorize(_ id: String, for user: String) async throws(ProtocolError) {}
        func acquired(_ id: String) { directory.drop(id) }
    }
}
