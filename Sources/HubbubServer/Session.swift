import Accounts
import Foundation
import Logging
import Realtime
import Transport
import WebSocket

/// One connected client on `/ws`: who it is, what it may do, its rate limits. Requests are
/// handled one at a time, in the order they arrived; each gets exactly one reply.
actor Session {
    let handle: ConnectionHandle
    let services: Services
    private(set) var user: AccountService.User?
    private var claims: Tokens.Claims?
    private var limiter: RateLimiter
    /// Rooms this connection is subscribed to.
    private var rooms: Set<String> = []

    init(handle: ConnectionHandle, services: Services) {
        self.handle = handle
        self.services = services
        self.limiter = RateLimiter(budgets: services.configuration.rateBudgets)
    }

    /// Processes messages until the connection ends.
    func run(_ messages: AsyncStream<Message>) async {
        for await message in messages {
            await handle(message)
        }
        await connectionClosed()
    }

    private func connectionClosed() async {
        let left = rooms
        rooms = []
        await services.leave(left, handle)
    }

    func send(_ text: String) { handle.send(OutboundMessage(text: text)) }

    private func handle(_ message: Message) async {
        guard message.kind == .text else {
            return send(Envelope.failure(id: nil, error: .badRequest("messages must be JSON text frames")))
        }
        let request: Request
        switch Request.parse(message.data) {
        case .success(let r): request = r
        case .failure(let rejection): return send(Envelope.failure(id: rejection.id, error: rejection.error))
        }
        guard let op = services.ops[request.op] else {
            return send(Envelope.failure(id: request.id, error: .badRequest("unknown op \(request.op)")))
        }
        if let wait = limiter.take(op.opClass, now: Date().timeIntervalSince1970) {
            send(Envelope.failure(id: request.id, error: ProtocolError(.rateLimited, "too many \(op.opClass.rawValue) requests", retryAfterMs: wait)))
            if limiter.refusedInARow >= services.configuration.abuseThreshold {
                services.logger.notice("closing an abusive connection", metadata: ["user": "\(user?.id ?? "-")"])
                handle.close(code: .abuse, reason: "rate limits far exceeded")
            }
            return
        }
        if op.needsAuth && user == nil {
            return send(Envelope.failure(id: request.id, error: .unauthorized("log in or send auth first")))
        }
        if let claims, claims.expires <= Date().timeIntervalSince1970 {
            // protocol.md: 4002 token expired; the client logs in again and reconnects.
            send(Envelope.failure(id: request.id, error: .unauthorized("token expired")))
            user = nil
            self.claims = nil
            handle.close(code: .tokenExpired, reason: "token expired")
            return
        }
        do {
            if let result = try await op.run(self, request) {
                send(Envelope.success(id: request.id, result: result))
            }
        } catch {
            send(Envelope.failure(id: request.id, error: error))
        }
    }

    // MARK: State changes used by ops

    func authenticated(_ user: AccountService.User, claims: Tokens.Claims?) {
        self.user = user
        self.claims = claims
    }

    func loggedOut() -> Tokens.Claims? {
        let c = claims
        user = nil
        claims = nil
        return c
    }

    func requireUser() throws(ProtocolError) -> AccountService.User {
        guard let user else { throw .unauthorized("log in or send auth first") }
        return user
    }

    /// Records a subscription, within the per-connection limit.
    func addRoom(_ room: String) throws(ProtocolError) {
        guard rooms.count < services.configuration.maxSubscriptions || rooms.contains(room) else {
            throw ProtocolError(.tooLarge, "at most \(services.configuration.maxSubscriptions) subscriptions per connection")
        }
        rooms.insert(room)
    }

    func removeRoom(_ room: String) { rooms.remove(room) }
}

/// Bridges a `/ws` connection's loop thread to its session actor.
final class SessionHandler: WebSocketHandler {
    private let continuation: AsyncStream<Message>.Continuation

    init(connection: WebSocketConnection, services: Services) {
        // Bounded: a client that sends faster than its requests are handled is closed (4003)
        // rather than allowed to queue without limit.
        let (stream, continuation) = AsyncStream<Message>.makeStream(
            bufferingPolicy: .bufferingOldest(services.configuration.maxPendingRequests))
        self.continuation = continuation
        let session = Session(handle: connection.handle, services: services)
        Task { await session.run(stream) }
    }

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        if case .dropped = continuation.yield(message) {
            connection.close(code: .abuse, reason: "too many requests in flight")
        }
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) { continuation.finish() }
}
