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
    let rooms: [String: any RoomDirectory]
    let services: [any Service]
    let endpoints: [HTTPEndpoint]
    /// Where members of logged rooms are (leaving goes there whether or not the room's actor is live).
    let feed: RoomFeed

    /// Directories of rooms on the room log, by prefix.
    let loggedRooms: [String: any LoggedRoomDirectory]

    /// - owners: where logged rooms' owners are (several nodes); nil: always here.
    init(domains: [any Domain], feed: RoomFeed, owners: (any RoomOwners)? = nil) throws {
        self.feed = feed
        var rooms: [String: any RoomDirectory] = [:]
        var logged: [String: any LoggedRoomDirectory] = [:]
        for d in domains {
            for prefix in d.rooms.map(\.prefix) + d.loggedRooms.map(\.prefix) where rooms[prefix] != nil || logged[prefix] != nil {
                throw ConfigurationError(key: "domains", problem: "two domains host rooms \(prefix):")
            }
            for r in d.rooms { rooms[r.prefix] = r }
            for r in d.loggedRooms { logged[r.prefix] = r }
        }
        self.rooms = rooms
        loggedRooms = logged
        var ops: [String: Op] = [:]
        for op in domains.flatMap(\.ops) + RoomOps.all(rooms, logged: logged, feed: feed, owners: owners) {
            guard ops[op.name] == nil else { throw ConfigurationError(key: "domains", problem: "two domains define op \(op.name)") }
            ops[op.name] = op
        }
        self.ops = ops
        services = domains.flatMap(\.services)
        endpoints = domains.flatMap(\.endpoints)
    }

    /// Leaves every room a closed connection was in (live rooms only: nothing is loaded for it).
    func leave(_ names: Set<String>, _ member: ConnectionID) async {
        for name in names {
            feed.leave(member, room: name)
            guard let room = RoomName(name), let host = rooms[room.prefix]?.liveHost(room.id) else { continue }
            await host.unsubscribe(member)
        }
    }
}

/// `subscribe` and `unsubscribe`: the same for every room prefix, through its `RoomDirectory`.
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

    static func all(_ rooms: [String: any RoomDirectory], logged: [String: any LoggedRoomDirectory], feed: RoomFeed,
                    owners: (any RoomOwners)?) -> [Op] {
        @Sendable func directory(_ room: RoomName) throws(ProtocolError) -> any RoomDirectory {
            guard let d = rooms[room.prefix] else { throw .badRequest("field room: unknown room \(room.name)") }
            return d
        }
        let join = LoggedRoomJoin(logged: logged, feed: feed, owners: owners)
        return [
            .user("subscribe", .read, SubscribeArgs.self) { c throws(ProtocolError) in
                let name = c.args.room.name
                try await c.session.addSubscription(name)
                do throws(ProtocolError) {
                    if logged[c.args.room.prefix] != nil {
                        try await join.subscribe(c.args.room, since: c.args.since, user: c.user, session: c.session, reply: c.reply)
                    } else {
                        let host = try await directory(c.args.room).host(c.args.room.id, for: c.user)
                        try await host.subscribe(reply: c.reply, since: c.args.since)
                    }
                } catch {
                    await c.session.removeSubscription(name)
                    throw error
                }
                return .sent // the answer went out ahead of any push
            },
            .user("unsubscribe", .read, UnsubscribeArgs.self) { c throws(ProtocolError) in
                let room = c.args.room
                let kept = logged[room.prefix] == nil ? try directory(room) : nil
                await c.session.removeSubscription(room.name)
                feed.leave(c.session.member, room: room.name)
                await kept?.liveHost(room.id)?.unsubscribe(c.session.member)
                return .reply(["room": .string(room.name)])
            },
        ]
    }
}
