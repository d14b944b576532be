import Cluster
import DomainSeam
import Foundation
import Logging
import Realtime
import RoomLog
import Transport
import WebSocket

/// The serving end of another node's link (`/cluster`, behind the cluster's key): requests that
/// node forwarded to rooms this one owns, each run as the user it names (that node checked the
/// user's token and rate limits). One user's requests run in the order they came; different
/// users' run side by side. Each reply goes back over the link with the link's own request id.
actor LinkSession: SessionControl {
    nonisolated let member: ConnectionID
    nonisolated let address = "cluster"
    private let context: SessionContext
    private let owners: any RoomOwners
    /// The last request still running per user: the next waits for it.
    private var tails: [String: Task<Void, Never>] = [:]

    init(member: ConnectionID, context: SessionContext, owners: any RoomOwners) {
        self.member = member
        self.context = context
        self.owners = owners
    }

    func run(_ messages: AsyncStream<Message>) async {
        for await message in messages { take(message) }
    }

    private func take(_ message: Message) {
        let json: JSON
        do { json = try JSONParser.parse(message.data, limits: .trusted) } catch {
            return context.logger.warning("cluster: a link sent bad JSON")
        }
        guard case .int(let id)? = json["id"], case .string(let op)? = json["op"] else {
            return context.logger.warning("cluster: a link sent a request without id or op")
        }
        let user: String? = if case .string(let u)? = json["as"] { u } else { nil }
        let args = Args(json["args"] ?? .object([]))
        // One user's requests run in order; the cluster's own (snapshots aside, which carry a user)
        // need none, and must not wait behind each other (a large forwarded upload, a resume).
        let key = user ?? (op.hasPrefix("cluster.") ? "\(op)#\(id)" : "")
        let previous = tails[key]
        let task = Task {
            await previous?.value
            await self.handle(id: id, op: op, args: args, user: user)
        }
        tails[key] = task
        Task {
            await task.value
            self.finished(key, task)
        }
    }

    private func finished(_ key: String, _ task: Task<Void, Never>) {
        if tails[key] == task { tails[key] = nil }
    }

    private func handle(id: Int, op name: String, args: Args, user: String?) async {
        let reply = Replier(member: member, requestID: id, sink: context.sink)
        do throws(ProtocolError) {
            if name == ClusterOp.snapshot || name == ClusterOp.resumed {
                let roomName = try args.string("room", maxLength: 200)
                guard let room = RoomName(roomName), let d = context.registry.rooms[room.prefix] else {
                    throw .badRequest("field room: not a logged room: \(roomName)")
                }
                try await requireHere(roomName)
                if name == ClusterOp.resumed {
                    try await d.resumed(room.id)
                    return reply.success(.object([]))
                }
                guard let user else { throw .unauthorized("a snapshot is taken for a user") }
                let s = try await d.snapshot(room.id, for: user, view: args.value["view"] ?? .object([]))
                var answer: [(String, JSON)] = [("seq", .int(Int(s.head.seq))), ("epoch", .string(s.head.epoch)), ("data", s.data)]
                if let mark = s.mark { answer.append(("mark", .string(String(mark)))) }
                return reply.success(.object(answer))
            }
            if name == ClusterOp.http { return reply.success(try await serveHTTP(args)) }
            guard let op = context.registry.ops[name] else { throw .badRequest("unknown op \(name)") }
            if op.access == .user && user == nil { throw .unauthorized("log in or send auth first") }
            if let home = op.home?(args) { try await requireHere(home) }
            switch try await op.run(args, OpCall(requestID: id, user: user, session: self, reply: reply)) {
            case .reply(let result): reply.success(result)
            case .sent: break
            }
        } catch {
            reply.failure(error)
        }
    }

    /// An operator request another node forwarded to an endpoint homed here, served as if it had
    /// come here (that node checked the operator key); its response goes back whole.
    private func serveHTTP(_ args: Args) async throws(ProtocolError) -> JSON {
        let method = try args.string("method", maxLength: 16), target = try args.string("target", maxLength: 8192)
        let (headers, body) = try ForwardedHTTP.request(args)
        let path = String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        guard let (endpoint, parameters) = context.registry.endpoints.lazy.compactMap({ e in e.match(path).map { (e, $0) } })
            .first(where: { $0.0.method == method }) else { throw .notFound("no endpoint \(method) \(path)") }
        if let home = endpoint.home { try await requireHere(home) }
        let request = HTTPRequest(method: method, target: target, parameters: parameters, headers: headers, body: RequestBody(body))
        return ForwardedHTTP.json(await endpoint.handle(request))
    }

    /// A room that moved to another node since the forwarding node looked is refused (it asks again).
    private func requireHere(_ room: String) async throws(ProtocolError) {
        guard case .here = try await owners.owner(of: room) else {
            throw ProtocolError(.unavailable, "the room moved to another node; try again")
        }
    }

    // Forwarded ops never sign in or subscribe on the link.
    func signIn(_ identity: Identity) {}
    func signOut() -> Identity? { nil }
    func addSubscription(_ room: String) {}
    func removeSubscription(_ room: String) {}
}

/// Bridges a `/cluster` connection's loop thread to its `LinkSession`.
final class ClusterLinkHandler: WebSocketHandler {
    private let continuation: AsyncStream<Message>.Continuation

    init(connection: WebSocketConnection, context: SessionContext, owners: any RoomOwners) {
        let (stream, continuation) = AsyncStream<Message>.makeStream(bufferingPolicy: .unbounded)
        self.continuation = continuation
        let session = LinkSession(member: connection.handle.id, context: context, owners: owners)
        Task { await session.run(stream) }
    }

    func onMessage(_ message: Message, connection: WebSocketConnection) { continuation.yield(message) }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) { continuation.finish() }
}
