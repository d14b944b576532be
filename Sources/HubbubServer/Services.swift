import Accounts
import Logging
import Realtime
import Storage
import Transport
import VenueService

/// Everything a session's operations use, built once at start.
final class Services: Sendable {
    struct Configuration: Sendable {
        var rateBudgets: [RateLimiter.OpClass: RateLimiter.Budget]
        var abuseThreshold: Int
        var maxPendingRequests: Int
        var maxSubscriptions: Int
    }

    let configuration: Configuration
    let store: Store
    let accounts: AccountService
    let subscriptions: Subscriptions
    let venues: VenueDirectory<LoopSink>
    let logger: Logger
    let ops: [String: Operation]

    init(configuration: Configuration, store: Store, accounts: AccountService, venues: VenueDirectory<LoopSink>, logger: Logger) {
        self.configuration = configuration
        self.store = store
        self.accounts = accounts
        self.venues = venues
        self.subscriptions = Subscriptions(maxPerConnection: configuration.maxSubscriptions)
        self.logger = logger
        var ops: [String: Operation] = [:]
        for op in AccountOps.all + VenueOps.all(venues) { ops[op.name] = op }
        self.ops = ops
    }

    /// Leaves every room a closed connection was in.
    func connectionClosed(_ handle: ConnectionHandle) async {
        for room in await subscriptions.dropAll(for: handle) where room.hasPrefix("venue:") {
            await venues.liveActor(String(room.dropFirst("venue:".count)))?.unsubscribe(handle)
        }
    }
}

/// One op of protocol.md: its name, rate class, whether it needs a logged-in user, and what it
/// does. Returning nil means the op sent its reply itself (subscribe does, to order it before pushes).
struct Operation: Sendable {
    var name: String
    var opClass: RateLimiter.OpClass
    var needsAuth: Bool
    var run: @Sendable (Session, Request) async throws(ProtocolError) -> JSON?
}

/// Which rooms each connection is in, so they can be left when it goes.
actor Subscriptions {
    private var rooms: [ConnectionHandle: Set<String>] = [:]
    let maxPerConnection: Int

    init(maxPerConnection: Int) { self.maxPerConnection = maxPerConnection }

    func add(_ room: String, for handle: ConnectionHandle) throws(ProtocolError) {
        var set = rooms[handle, default: []]
        guard set.count < maxPerConnection || set.contains(room) else {
            throw ProtocolError(.tooLarge, "at most \(maxPerConnection) subscriptions per connection")
        }
        set.insert(room)
        rooms[handle] = set
    }

    func remove(_ room: String, for handle: ConnectionHandle) { rooms[handle]?.remove(room) }

    func dropAll(for handle: ConnectionHandle) -> Set<String> { rooms.removeValue(forKey: handle) ?? [] }

    func rooms(of handle: ConnectionHandle) -> Set<String> { rooms[handle] ?? [] }
}
