import Cluster
import DomainSeam
import Logging
import Realtime
import RoomLog
import ServiceLifecycle
import WebSocket

/// The domains, built, and what the core looks up in them: ops by name, room directories by
/// prefix, background services. The core's own ops (`subscribe`, `unsubscribe`) join the domains'.
final class DomainRegistry: Sendable {
    let ops: [String: Op]
    /// Every room prefix's directory (all rooms are on the room log).
    let rooms: [String: any RoomDirectory]
    let services: [any Service]
    let endpoints: [HTTPEndpoint]
    /// Where this node's members of every room are.
    let feed: RoomFeed

    /// - owners: where rooms' owners are (several nodes); nil: always here.
    init(domains: [any Domain], feed: RoomFeed, owners: (any RoomOwners)? = nil) throws {
        self.feed = feed
        var rooms: [String: any RoomDirectory] = [:]
        for d in domains {
            for r in d.rooms {
                guard rooms[r.prefix] == nil else { throw ConfigurationError(key: "domains", problem: "two domains host rooms \(r.prefix):") }
                rooms[r.prefix] = r
            }
        }
        self.rooms = rooms
        var ops: [String: Op] = [:]
        for op in domains.flatMap(\.ops) + RoomOps.all(rooms, feed: feed, owners: owners) {
            guard ops[op.name] == nil else { throw ConfigurationError(key: "domains", problem: "two domains define op \(op.name)") }
            ops[op.name] = op
        }
        self.ops = ops
        services = domains.flatMap(\.services)
        endpoints = domains.flatMap(\.endpoints)
    }

    /// Leaves every room a closed connection was in (nothing is loaded for it).
    func leave(_ names: Set<String>, _ member: ConnectionID) {
        for name in names { feed.leave(member, room: name) }
    }
}

/// `subscribe` and `unsubscribe`: the same for every room prefix, through the feed and the prefix's `RoomDirectory`.
enum RoomOps {
    struct SubscribeArgs: OpArguments {
        var room: RoomName
        var since: Since?
        init(_ a: Args) throws(ProtocolError) {
            room = try RoomOps.roomName(a)
            since = try Since(a)
        }
    }

    struct UnsubscribeArgs: OpArguments {
        var room: RoomName
        init(_ a: Args) throws(ProtocolError) { room = try RoomOps.roomName(a) }
    }

    static func roomName(_ a: Args) throws(ProtocolError) -> RoomName {
        let name = try a.string("room", maxLength: 200)
        guard let room = RoomName(name) else { throw .badRequest("field room: \(name) is not a room name (prefix:id)") }
        return room
    }

    static func all(_ rooms: [String: any RoomDirectory], feed: RoomFeed, owners: (any RoomOwners)?) -> [Op] {
        let join = LoggedRoomJoin(logged: rooms, feed: feed, owners: owners)
        return [
            .user("subscribe", .read, SubscribeArgs.self) { c throws(ProtocolError) in
                let name = c.args.room.name
                try await c.session.addSubscription(name)
                do throws(ProtocolError) {
                    try await join.subscribe(c.args.room, since: c.args.since, user: c.user, session: c.session, reply: c.reply)
                } catch {
                    await c.session.removeSubscription(name)
                    throw error
                }
                return .sent // the answer went out ahead of any push
            },
            .user("unsubscribe", .read, UnsubscribeArgs.self) { c throws(ProtocolError) in
                let room = c.args.room
                guard rooms[room.prefix] != nil else { throw .badRequest("field room: unknown room \(room.name)") }
                await c.session.removeSubscription(room.name)
                feed.leave(c.session.member, room: room.name)
                return .reply(["room": .string(room.name)])
            },
        ]
    }
}
