import Logging
import Realtime
import RoomLog
import ServiceLifecycle
import Storage

/// A domain of Hubbub (accounts, venues, route corridors, tonight's events): everything it adds
/// to the server comes through this one protocol. The core builds each registered domain once at
/// start, in registration order, and from then on only asks it for:
/// - `ops`: the requests it answers (name, rate class, who may call, typed arguments, handler);
/// - `rooms`: for each room prefix it hosts, its snapshots and who may watch (every room is on
///   the room log: the domain writes its pushes through a `RoomWriter`, and the core's feed holds
///   the members, serves recovery from the log and leaves on close);
/// - `services`: its background work, started after the store and before the transport, and
///   stopped in reverse order (swift-service-lifecycle);
/// - `erase(user:_:)`: what it deletes when an account is deleted (private data: the routes'
///   destinations and recorded paths), inside the deletion's own transaction;
/// - `endpoints`: its operator HTTP endpoints under `/api/` (feeds, provider intel), behind the
///   operator key, with the body streamed to them (see `HTTPEndpoint`);
/// - `migrations` and `settings` (static: needed before any domain is built): its tables and its
///   configuration section, each setting with a documented default.
///
/// A domain sees the store, a `PushSink` and `ConnectionID`s; never the transport.
public protocol Domain: Sendable {
    /// The domain's name: its configuration section (`venues.retireAfterSeconds`) and log label.
    static var name: String { get }
    /// The settings of its section, with defaults and ranges (see `Setting`).
    static var settings: [any AnySetting] { get }
    /// Registers its tables' migrations; identifiers start with the domain's name (`venues.v2`).
    static func migrations(_ migrator: inout SQLMigrations)

    /// Builds the domain; `context` gives it the store, the sink, its settings and the others' capabilities.
    init(context: DomainContext) throws

    var ops: [Op] { get }
    /// The room prefixes it hosts (subscriptions through the core's feed).
    var rooms: [any RoomDirectory] { get }
    var services: [any Service] { get }
    var endpoints: [HTTPEndpoint] { get }
    /// Deletes what the domain keeps about `user` that must not outlive their account; runs in
    /// the account deletion's transaction (on the store's writer thread: no waiting here). Rows
    /// only: it may run more than once, and the transaction may still fail (see `Store.write`).
    func erase(user: String, _ db: any SQLDatabase) throws
    /// The deletion is durable: forget what memory holds of `user` (after `erase` committed).
    func erased(user: String)
}

extension Domain {
    public static var settings: [any AnySetting] { [] }
    public var rooms: [any RoomDirectory] { [] }
    public var services: [any Service] { [] }
    public var endpoints: [HTTPEndpoint] { [] }
    public func erase(user: String, _ db: any SQLDatabase) throws {}
    public func erased(user: String) {}
}

/// What the core hands a domain when it builds it.
public struct DomainContext: Sendable {
    /// The durable store (group-committed: SQLite, or PostgreSQL that several nodes share).
    public let store: Store
    /// Where pushes and replies go.
    public let sink: any PushSink
    /// Settings, the domain's own among them (`settings[MyDomain.someSetting]`).
    public let settings: SettingValues
    /// The history limits every room uses unless the domain has reason to differ.
    public let roomHistory: Room.HistoryLimits
    /// Where this node's subscribers get every room's pushes: a room owner's `RoomWriter` delivers
    /// its committed pushes here; other nodes' come through it too.
    public let feed: RoomFeed
    /// What domains offer each other (e.g. `UserDirectory`), resolved when used, not when built.
    public let capabilities: Capabilities
    public let logger: Logger
    /// The server's data directory (for files a domain keeps beside the database).
    public let dataDirectory: String
    /// The time (the system's, except in tests).
    public let clock: WallClock

    public init(store: Store, sink: any PushSink, settings: SettingValues, roomHistory: Room.HistoryLimits,
                capabilities: Capabilities, logger: Logger, dataDirectory: String, clock: WallClock = .system,
                feed: RoomFeed? = nil) {
        self.feed = feed ?? RoomFeed(sink: sink, source: StoreRoomLog(store: store), configuration: .init(history: roomHistory), logger: logger)
        self.dataDirectory = dataDirectory
        self.clock = clock
        self.store = store
        self.sink = sink
        self.settings = settings
        self.roomHistory = roomHistory
        self.capabilities = capabilities
        self.logger = logger
    }
}
