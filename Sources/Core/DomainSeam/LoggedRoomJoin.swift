import Realtime
import RoomLog
import WebSocket

/// Subscriptions to rooms (the core's `subscribe`, and `LoggedRooms.join` for a domain op that
/// subscribes its caller itself): with `since`, recovery from this node's feed or the log, on any
/// node (a local room: this node's feed only); otherwise (or if that is gone) a snapshot from the
/// room's owner, here or forwarded (a local room: here), and the feed from that snapshot's head on.
public struct LoggedRoomJoin: LoggedRooms {
    let logged: [String: any RoomDirectory]
    let feed: RoomFeed
    /// Where rooms' owners are (several nodes); nil: always here.
    let owners: (any RoomOwners)?

    public init(logged: [String: any RoomDirectory], feed: RoomFeed, owners: (any RoomOwners)?) {
        self.logged = logged
        self.feed = feed
        self.owners = owners
    }

    /// The core's `subscribe` of a logged room.
    public func subscribe(_ room: RoomName, since: Since?, user: String, session: any SessionControl, reply: Replier) async throws(ProtocolError) {
        guard let d = logged[room.prefix] else { throw .badRequest("field room: unknown room \(room.name)") }
        let member = session.member
        try await d.authorize(room.id, for: user)
        if let since {
            // The owner hears of it first: it may start pushing to the room again, in a new epoch
            // if it had stopped (so the resume below gives way to a snapshot).
            if d.ownerHearsResumes {
                try await onOwner(room) { peer throws(ProtocolError) in
                    try await peer.resumed(room: room.name)
                } here: { () throws(ProtocolError) in
                    try await d.resumed(room.id)
                }
            }
            if await feed.resume(member, room: room.name, since: since, readsLog: d.placement == .leased, reply: { head in
                reply.success(["room": .string(room.name), "seq": .int(Int(head.seq)), "epoch": .string(head.epoch), "recovered": .bool(true)])
            }) {
                return
            }
        }
        try await subscribeFromSnapshot(room, d, user: user, member: member, reply: reply, view: .object([])) { snapshot in
            var result: [(String, JSON)] = [("room", .string(room.name)), ("seq", .int(Int(snapshot.head.seq))),
                                            ("epoch", .string(snapshot.head.epoch))]
            if since != nil { result.append(("recovered", .bool(false))) }
            result.append(("snapshot", snapshot.data))
            return .object(result)
        }
    }

    public func join(_ room: RoomName, user: String, session: any SessionControl, reply: Replier, view: JSON,
              answer: @escaping @Sendable (RoomSnapshot) -> JSON) async throws(ProtocolError) {
        guard let d = logged[room.prefix] else { throw .badRequest("field room: unknown room \(room.name)") }
        try await session.addSubscription(room.name)
        do throws(ProtocolError) {
            try await d.authorize(room.id, for: user)
            try await subscribeFromSnapshot(room, d, user: user, member: session.member, reply: reply, view: view, answer: answer)
        } catch {
            await session.removeSubscription(room.name)
            throw error
        }
    }

    public func holds(_ lease: String) async -> Bool {
        guard let owners else { return true }
        guard case .here? = try? await owners.owner(of: lease) else { return false }
        return true
    }

    public func holdsNow(_ lease: String) -> Bool { owners?.isHere(lease) ?? true }

    public func claimUnheld(_ rooms: [String]) async -> [String] {
        guard let owners else { return rooms }
        guard let unheld = try? await owners.unheld(rooms) else { return [] }
        var claimed: [String] = []
        for room in unheld { if case .here? = try? await owners.owner(of: room) { claimed.append(room) } }
        return claimed
    }

    public func call(_ op: String, args: JSON, on lease: String) async throws(ProtocolError) -> JSON? {
        guard let owners else { return nil }
        switch try await owners.owner(of: lease) {
        case .here: return nil
        case .peer(let peer):
            do { return try await peer.call(op: op, args: args) } catch {
                if error.code == .unavailable { owners.forget(lease) }
                throw error
            }
        }
    }

    private func subscribeFromSnapshot(_ room: RoomName, _ d: any RoomDirectory, user: String, member: ConnectionID, reply: Replier,
                                       view: JSON, answer: @escaping @Sendable (RoomSnapshot) -> JSON) async throws(ProtocolError) {
        let snapshot = try await onOwner(room) { peer throws(ProtocolError) in
            try await peer.snapshot(room: room.name, for: user, view: view)
        } here: { () throws(ProtocolError) in
            try await d.snapshot(room.id, for: user, view: view)
        }
        let text = answer(snapshot)
        feed.subscribe(member, room: room.name, at: snapshot.head, mark: snapshot.mark) { reply.success(text) }
    }

    /// Runs `here` if this node owns `room` (a local room: always), else `there` with its owner
    /// (forgotten if it cannot be reached).
    private func onOwner<T>(_ room: RoomName, _ there: (any PeerNode) async throws(ProtocolError) -> T,
                            here: () async throws(ProtocolError) -> T) async throws(ProtocolError) -> T {
        if logged[room.prefix]?.placement == .local { return try await here() }
        switch try await owners?.owner(of: room.name) ?? .here {
        case .here: return try await here()
        case .peer(let peer):
            do { return try await there(peer) } catch {
                if error.code == .unavailable { owners?.forget(room.name) }
                throw error
            }
        }
    }
}
