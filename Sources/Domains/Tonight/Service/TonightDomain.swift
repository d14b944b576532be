import DomainSeam
import Foundation
import Logging
import Realtime
import ServiceLifecycle
import Storage
import Tonight

/// Tonight's events (seeds 000, 004, 002) on the seam: the feeds' ingest into a durable catalog,
/// an actor per event-goer hosting their durable `user:` room, `event:` rooms with providers' live
/// updates, the tonight ops, and the clock that moves events into tonight's window and sends
/// reminders.
///
/// With several nodes, the catalog, every event-goer and the clock are one node's: the holder of
/// the `user:*` lease (`home`; `event:` rooms are under it too). Tonight's ops and feeds are
/// forwarded there; `user:` and `event:` rooms are logged, so their pushes reach watchers on every
/// node; ticks and reminders run there alone, and move with the lease when that node dies.
public struct TonightDomain: Domain {
    public static let name = "tonight"
    /// The lease every `user:` and `event:` room, the catalog and the clock are under.
    public static let home = "\(TonightPush.userRoomPrefix):*"

    /// feeds.md names it `api.maxFeedBytes`.
    public static let maxFeedBytes = Setting("api.maxFeedBytes", default: 512 << 20, range: 1_024...(1 << 36),
                                             help: "the largest feed body POST /api/feeds/... takes (413 beyond it)")
    public static let ingestBatch = Setting("tonight.ingestBatch", default: 2_000, range: 1...100_000,
                                            help: "feed records written per transaction while a feed is ingested")
    public static let nightEndHour = Setting("tonight.nightEndHour", default: 4, range: 0...12,
                                             help: "the venue-local hour tonight ends (events before it, after midnight, are still tonight's)")
    public static let defaultTimeZone = Setting("tonight.defaultTimeZone", default: "UTC",
                                                help: "the time zone of venues the feed gives none for (an IANA name)")
    public static let maxRadiusKm = Setting("tonight.maxRadiusKm", default: 300.0, range: 1...20_000,
                                            help: "the largest radius prefs.set and events.nearby take, in km")
    public static let announceDays = Setting("tonight.announceDays", default: 180, range: 1...3_650,
                                             help: "event.announced covers a favourite artist's new events up to this many days ahead")
    public static let reminderMinutes = Setting("tonight.reminderMinutes", default: 60, range: 1...10_080,
                                                help: "a followed event's event.reminder comes this many minutes before its start")
    public static let userHistoryCount = Setting("tonight.userHistoryCount", default: 200, range: 1...100_000,
                                                 help: "pushes a user: room keeps (durably) for recovery with since")
    public static let userHistoryHours = Setting("tonight.userHistoryHours", default: 168, range: 1...8_760,
                                                 help: "hours a user: room keeps a push for recovery")
    public static let tickSeconds = Setting("tonight.tickSeconds", default: 30, range: 1...3_600,
                                            help: "seconds between looks at the clock (events entering tonight's window, reminders due)")
    public static let idleSeconds = Setting("tonight.idleSeconds", default: 600, range: 1...86_400,
                                            help: "seconds a user: or event: room's writer keeps its head in memory with nothing happening")
    public static let maxResults = Setting("tonight.maxResults", default: 100, range: 1...10_000,
                                           help: "most events events.tonight, events.explore and events.nearby answer")
    public static let maxSearchResults = Setting("tonight.maxSearchResults", default: 50, range: 1...1_000,
                                                 help: "most artists artist.search answers (its limit defaults to 10)")
    public static let maxLiveBytes = Setting("tonight.maxLiveBytes", default: 65_536, range: 256...(16 << 20),
                                             help: "the largest body POST /api/events/<id>/live takes")

    public static var settings: [any AnySetting] {
        [maxFeedBytes, ingestBatch, nightEndHour, defaultTimeZone, maxRadiusKm, announceDays, reminderMinutes, userHistoryCount,
         userHistoryHours, tickSeconds, idleSeconds, maxResults, maxSearchResults, maxLiveBytes]
    }

    public static func migrations(_ migrator: inout SQLMigrations) { TonightSchema.register(&migrator) }

    public let catalog: Catalog
    let goers: EventGoers
    let eventRooms: EventRooms
    private let ingest: EventFeedIngest
    private let affinity: AffinityIngest
    private let settings: SettingValues
    private let capabilities: Capabilities
    /// Set when this node takes tonight's lease: feed changes nobody was told of are told at the next tick.
    private let untold = TakeOverFlag(set: true)
    /// The catalog and event-goers, reloaded before their next use when this node takes the lease.
    private let memory: ReloadGate

    public init(context: DomainContext) throws {
        let s = context.settings
        var rules = EventCatalog.Rules()
        rules.night = NightWindow(endHour: s[Self.nightEndHour])
        guard let zone = TimeZone(identifier: s[Self.defaultTimeZone]) else {
            throw BadSetting(description: "tonight.defaultTimeZone: \(s[Self.defaultTimeZone]) is not a time zone")
        }
        rules.defaultZone = zone
        rules.defaultZoneName = s[Self.defaultTimeZone]
        // Empty until first used on the node holding tonight's lease (`memory`): the others never read it.
        let catalog = Catalog(rules: rules)
        self.catalog = catalog
        var configuration = EventGoers.Configuration()
        configuration.reminderSeconds = Double(s[Self.reminderMinutes]) * 60
        configuration.announceSeconds = Double(s[Self.announceDays]) * 86_400
        configuration.history = Room.HistoryLimits(count: s[Self.userHistoryCount], maxAgeSeconds: Double(s[Self.userHistoryHours]) * 3_600,
                                                   maxBytes: 1 << 20)
        configuration.idleSeconds = Double(s[Self.idleSeconds])
        let goers = EventGoers(catalog: catalog, store: context.store, feed: context.feed, clock: context.clock,
                                   configuration: configuration, logger: context.logger)
        self.goers = goers
        let store = context.store, logger = context.logger
        memory = ReloadGate("tonight's catalog and event-goers", stale: true) {
            do {
                try await catalog.reload(from: store)
                try await goers.reload()
                return true
            } catch {
                logger.error("tonight: could not reload the catalog and event-goers", metadata: ["error": "\(error)"])
                return false
            }
        }
        let rooms = EventRooms(catalog: catalog, store: context.store, feed: context.feed, clock: context.clock,
                               idleSeconds: Double(s[Self.idleSeconds]), memory: memory, logger: context.logger)
        eventRooms = rooms
        var ingest = EventFeedIngest(catalog: catalog, store: context.store, maxBodyBytes: s[Self.maxFeedBytes])
        ingest.batch = s[Self.ingestBatch]
        ingest.onEvents = { updates in await goers.tell(updates, rooms: rooms) }
        self.ingest = ingest
        var affinity = AffinityIngest(catalog: catalog, store: context.store, maxBodyBytes: s[Self.maxFeedBytes])
        affinity.onChange = { artists in await goers.recommendationsChanged(artists) }
        self.affinity = affinity
        settings = s
        capabilities = context.capabilities
        context.capabilities.resolve(ClusterEvents.self)?.subscribe(UserErased.self) { e in goers.forget(e.user) }
    }

    /// Feeds change the catalog and tell users: served by tonight's node.
    public var endpoints: [HTTPEndpoint] {
        [ingest.endpoint, affinity.endpoint].map { $0.homed(Self.home).preceded(by: memory.ready) }
            + [eventRooms.liveEndpoint(maxBodyBytes: settings[Self.maxLiveBytes]).preceded(by: memory.ready)]
    }

    public var rooms: [any RoomDirectory] {
        let goers = self.goers, rooms = eventRooms, untold = self.untold, memory = self.memory
        return [UserRooms(goers: goers, memory: memory) {
                    // This node took tonight's lease: another node may have changed everything meanwhile.
                    memory.invalidate()
                    rooms.dropAll()
                    untold.set()
                },
                eventRooms]
    }

    public var services: [any Service] {
        let goers = self.goers, rooms = eventRooms, capabilities = self.capabilities, untold = self.untold, memory = self.memory
        // Tonight's clock, on the node holding its lease: when it takes the lease (at start, on one
        // node), feed changes nobody was told of before a stop; then a tick (reminders that fell due
        // while no node ran it, events already in tonight's window).
        return [Periodic(every: Double(settings[Self.tickSeconds])) { _ in
                    guard await capabilities.resolve(LoggedRooms.self)?.holds(Self.home) ?? true else { return }
                    do { try await memory.ready() } catch { return }
                    if untold.take() { await goers.tellPending(rooms: rooms) }
                    await goers.tick()
                },
                Periodic(every: 60) { _ in
                    await goers.sweep()
                    await rooms.sweep()
                }]
    }

    /// An account deleted: its preferences, favourites, plans, stream and reminders go.
    public func erase(user: String, _ db: any SQLDatabase) throws {
        try GoerRows.erase(user, db)
    }

    /// Its state leaves memory here, and on the other nodes (tonight's may be another).
    public func erased(user: String) {
        goers.forget(user)
        capabilities.resolve(ClusterEvents.self)?.publish(UserErased(user: user))
    }

    /// An account was deleted on another node (`erased(user:)`): what this node keeps of them (their suggestions) goes too.
    struct UserErased: ClusterEvent {
        static let topic = "tonight.erased"
        var user: String
    }

    /// Every tonight op reads or changes the catalog or an event-goer: run on tonight's node.
    public var ops: [Op] {
        let memory = self.memory
        return TonightOps(catalog: catalog, goers: goers, settings: settings).all.map { $0.homed { _ in Self.home }.preceded(by: memory.ready) }
    }
}

/// A setting the domain cannot work with (beyond its range checks).
struct BadSetting: Error, CustomStringConvertible {
    var description: String
}
