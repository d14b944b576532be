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
    let accounts: AccountService
    let venues: VenueDirectory<LoopSink>
    let logger: Logger
    let ops: [String: Operation]

    init(configuration: Configuration, accounts: AccountService, venues: VenueDirectory<LoopSink>, logger: Logger) {
        self.configuration = configuration
        self.accounts = accounts
        self.venues = venues
        self.logger = logger
        var ops: [String: Operation] = [:]
        for op in AccountOps.all + VenueOps.all(venues) { ops[op.name] = op }
        self.ops = ops
    }

    /// Leaves every room a closed connection was in.
    func leave(_ rooms: Set<String>, _ handle: ConnectionHandle) async {
        for room in rooms {
            if let id = VenueOps.venueID(inRoom: room) { await venues.liveActor(id)?.unsubscribe(handle) }
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
