import Cluster
import DomainSeam
import Foundation
import Logging
import Metrics
import Realtime
import Transport
import WebSocket

/// What every session shares: the domains' ops and rooms, the sink, the limits.
struct SessionContext: Sendable {
    struct Limits: Sendable {
        var rateBudgets: [RateClass: RateLimiter.Budget]
        var abuseThreshold: Int
        var maxPendingRequests: Int
        var maxSubscriptions: Int
        /// `limits.maxMessageBytesBeforeLogin`: a larger message before log-in closes the connection (1009).
        var maxMessageBytesBeforeLogin: Int
        /// What one request may hold (`limits.maxJson*`).
        var json: JSONParser.Limits
    }

    let registry: DomainRegistry
    /// Where logged rooms' owners are (several nodes on PostgreSQL); nil: always here.
    let owners: (any RoomOwners)?
    let signedIn: SignedInSessions
    let sink: any PushSink
    let limits: Limits
    let logger: Logger
}

/// One connected client on `/ws`: who it is, what it may do, its rate limits. Requests are
/// taken one at a time, in the order they arrived; each gets exactly one reply. An op that hands
/// its request on (a vote, answered once durable) lets the session take the next request at once.
actor Session: SessionControl {
    nonisolated let member: ConnectionID
    nonisolated let address: String
    private let context: SessionContext
    private var identity: Identity? {
        didSet {
            // The connection refuses a large message before log-in on its frame header (1009), so
            // what a client without an account can make the server read and parse stays small.
            if (identity == nil) != (oldValue == nil) { messageLimit(identity == nil) }
        }
    }
    /// Sets the connection's message limit: the one before log-in (true) or the endpoint's.
    private let messageLimit: @Sendable (_ beforeLogIn: Bool) -> Void
    private var limiter: RateLimiter
    /// Rooms this connection is subscribed to.
    private var rooms: Set<String> = []

    init(member: ConnectionID, address: String, context: SessionContext,
         messageLimit: @escaping @Sendable (_ beforeLogIn: Bool) -> Void) {
        self.member = member
        self.address = address
        self.context = context
        self.messageLimit = messageLimit
        self.limiter = RateLimiter(budgets: context.limits.rateBudgets)
    }

    /// Processes messages until the connection ends.
    func run(_ messages: AsyncStream<Message>) async {
        for await message in messages {
            await handle(message)
            // A large message took a while; other sessions' requests go first before the next
            // (queued messages are handed over without suspending, so without this one client's
            // backlog would hold a thread of the pool).
            if message.data.count > Self.yieldAfterBytes { await Task.yield() }
        }
        if let identity { context.signedIn.remove(self, user: identity.user) }
        identity = nil
        let left = rooms
        rooms = []
        context.registry.leave(left, member)
    }

    private static let yieldAfterBytes = 4096

    private func handle(_ message: Message) async {
        guard message.kind == .text else { return refuse(id: nil, .badRequest("messages must be JSON text frames")) }
        let request: Request
        switch Request.parse(message.data, limits: context.limits.json) {
        case .success(let r): request = r
        case .failure(let rejection): return refuse(id: rejection.id, rejection.error)
        }
        let reply = Replier(member: member, requestID: request.id, sink: context.sink)
        guard let op = context.registry.ops[request.op], op.access != .node else {
            reply.failure(.badRequest("unknown op \(request.op)"))
            return countRefusal()
        }
        let now = Date().timeIntervalSince1970
        if let wait = limiter.take(op.rateClass, now: now) {
            reply.failure(ProtocolError(.rateLimited, "too many \(op.rateClass.rawValue) requests", retryAfterMs: wait))
            return closeIfAbusive()
        }
        if op.access == .user && identity == nil {
            reply.failure(.unauthorized("log in or send auth first"))
            return countRefusal()
        }
        // An op anyone may call (log-in, auth) signs the connection in afresh: an expired token is no reason to refuse it.
        if op.access == .user, let expires = identity?.expires, expires <= now {
            // protocol.md: 4002 token expired; the client logs in again and reconnects.
            reply.failure(.unauthorized("token expired"))
            _ = signOut()
            context.sink.close(member, code: .tokenExpired, reason: "token expired")
            return
        }
        do throws(ProtocolError) {
            if let owners = context.owners, let home = op.home?(request.args), case .peer(let peer) = try await owners.owner(of: home) {
                return try await forward(request, to: peer, home: home, owners: owners)
            }
            switch try await op.run(request.args, OpCall(requestID: request.id, user: identity?.user, session: self, reply: reply)) {
            case .reply(let result): reply.success(result)
            case .sent: break
            }
        } catch {
            reply.failure(error)
        }
    }

    /// Hands the request to the node that owns its room and returns once it is sent (the session
    /// takes the next request); the owner's reply goes to the client under the client's own id.
    private func forward(_ request: Request, to peer: any PeerNode, home: String, owners: any RoomOwners) async throws(ProtocolError) {
        let member = self.member, sink = context.sink, id = request.id
        let reply = Replier(member: member, requestID: id, sink: sink)
        do throws(ProtocolError) {
            try await peer.forward(op: request.op, args: request.args.value, user: identity?.user, address: address) { outcome in
                Self.forwarded(outcome)
                switch outcome {
                case .success(let text):
                    guard let answer = ReplyID.replace(text, with: id) else {
                        return reply.failure(ProtocolError(.internal, "the room's node answered oddly"))
                    }
                    sink.deliver(OutboundMessage(kind: .text, payload: answer), to: member)
                case .failure(let error):
                    owners.forget(home)
                    reply.failure(error)
                }
            }
        } catch {
            owners.forget(home)
            throw error
        }
    }

    private static let forwardedOK = Counter(label: "hubbub_cluster_forwarded_total", dimensions: [("result", "ok")])
    private static let forwardedFailed = Counter(label: "hubbub_cluster_forwarded_total", dimensions: [("result", "failed")])

    private static func forwarded(_ outcome: Result<[UInt8], ProtocolError>) {
        if case .success = outcome { forwardedOK.increment() } else { forwardedFailed.increment() }
    }

    /// Answers a message that is not a request (`"id": null` when its id could not be read).
    private func refuse(id: Int?, _ error: ProtocolError) {
        context.sink.deliver(OutboundMessage(text: Envelope.failure(id: id, error: error)), to: member)
        countRefusal()
    }

    /// A request refused before any op ran (not JSON, unknown op, not logged in) counts like a
    /// rate-limited one: a client that sends nothing else is closed, not served forever.
    private func countRefusal() {
        limiter.refused()
        closeIfAbusive()
    }

    private func closeIfAbusive() {
        guard limiter.refusedInARow >= context.limits.abuseThreshold else { return }
        context.logger.notice("closing an abusive connection", metadata: ["user": "\(identity?.user ?? "-")", "address": "\(address)"])
        context.sink.close(member, code: .abuse, reason: "rate limits far exceeded")
    }

    // MARK: SessionControl

    func signIn(_ identity: Identity) {
        if let old = self.identity, old.user != identity.user { context.signedIn.remove(self, user: old.user) }
        self.identity = identity
        context.signedIn.add(self, identity)
    }

    func signOut() -> Identity? {
        defer { identity = nil }
        if let identity { context.signedIn.remove(self, user: identity.user) }
        return identity
    }

    /// Ends this connection (1008) if it is still signed in as `user` with a token `revoked` matches:
    /// requests still queued behind this call find it signed out.
    func revoke(user: String, reason: String, _ revoked: @Sendable (String?) -> Bool) {
        guard let identity, identity.user == user, revoked(identity.tokenID) else { return }
        _ = signOut()
        context.sink.close(member, code: .policyViolation, reason: reason)
    }

    func addSubscription(_ room: String) throws(ProtocolError) {
        let limit = context.limits.maxSubscriptions
        guard rooms.count < limit || rooms.contains(room) else {
            throw ProtocolError(.tooLarge, "at most \(limit) subscriptions per connection")
        }
        rooms.insert(room)
    }

    func removeSubscription(_ room: String) { rooms.remove(room) }
}

/// Bridges a `/ws` connection's loop thread to its session actor.
final class SessionHandler: WebSocketHandler {
    private let continuation: AsyncStream<Message>.Continuation

    init(connection: WebSocketConnection, context: SessionContext) {
        let beforeLogIn = context.limits.maxMessageBytesBeforeLogin, full = connection.maxMessageSize
        connection.maxMessageSize = beforeLogIn
        // Bounded: a client that sends faster than its requests are handled is closed (4003)
        // rather than allowed to queue without limit.
        let (stream, continuation) = AsyncStream<Message>.makeStream(
            bufferingPolicy: .bufferingOldest(context.limits.maxPendingRequests))
        self.continuation = continuation
        let handle = connection.handle
        let session = Session(member: handle.id, address: connection.remoteAddress, context: context) { before in
            handle.setMaxMessageSize(before ? beforeLogIn : full)
        }
        Task { await session.run(stream) }
    }

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        if case .dropped = continuation.yield(message) {
            connection.close(code: .abuse, reason: "too many requests in flight")
        }
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) { continuation.finish() }
}
