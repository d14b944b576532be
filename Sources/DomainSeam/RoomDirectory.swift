import Realtime
import RoomLog
import WebSocket

/// The rooms of one prefix (`venue`, `route`, `user`, `event`): how a room's id finds the actor
/// hosting it. The core's `subscribe`, `unsubscribe` and leave-on-close go through it, for every
/// prefix alike.
public protocol RoomDirectory: Sendable {
    /// The prefix before the colon of the room's name (`venue` for `venue:v12`).
    var prefix: String { get }
    /// The host of room `id`, created or loaded if need be, after checking that `user` may
    /// subscribe to it (`forbidden` or `not_found` otherwise).
    func host(_ id: String, for user: String) async throws(ProtocolError) -> any RoomHost
    /// The host of room `id` only if it is live: leaving a room never loads it.
    func liveHost(_ id: String) -> (any RoomHost)?
}

/// The rooms of one prefix whose pushes are on the room log (`StagedRoom`, `RoomFeed`): the core
/// subscribes members to the node's feed itself, and asks the directory only for a snapshot (on the
/// room's owner node, forwarded there from the others) and whether a user may watch.
public protocol LoggedRoomDirectory: Sendable {
    /// The prefix before the colon of the room's name (`venue` for `venue:v12`).
    var prefix: String { get }
    /// The room as it is now and the head of its log at that point (pushes staged included), after
    /// checking that `user` may subscribe (`forbidden` or `not_found` otherwise).
    func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot
    /// Checks that `user` may watch room `id`, without loading it (a recovery from the log).
    func authorize(_ id: String, for user: String) async throws(ProtocolError)
    /// This node just took room `id` (several nodes): whatever it held of the room in memory may
    /// be stale (another node owned it meanwhile) and must be loaded afresh.
    func acquired(_ id: String)
}

extension LoggedRoomDirectory {
    public func acquired(_ id: String) {}
}

/// A logged room's state for a new subscriber, and where its log stood then.
public struct RoomSnapshot: Sendable {
    public var head: RoomHead
    public var data: JSON
    /// The `PushMark` of the push at `head.seq` when it may not be durable yet (see `PushMark`).
    public var mark: UInt64?
    public init(head: RoomHead, data: JSON, mark: UInt64? = nil) {
        self.head = head
        self.data = data
        self.mark = mark
    }
}

/// An actor hosting a room (a venue, a corridor, a user's stream).
public protocol RoomHost: Actor {
    /// Adds `reply.member` to the room and answers the subscribe request through `reply`
    /// (usually with `Room.subscribe`: the reply, then replayed pushes or a snapshot).
    /// Throws (and subscribes nobody) when the room cannot take subscribers any more.
    func subscribe(reply: Replier, since: Since?) async throws(ProtocolError)
    /// Removes a member (nothing if absent).
    func unsubscribe(_ member: ConnectionID)
}

/// A room's name split at its first colon: `venue:v12` → prefix `venue`, id `v12`.
public struct RoomName: Sendable, Equatable {
    public var prefix: String
    public var id: String
    /// The whole name, `prefix:id`.
    public var name: String { "\(prefix):\(id)" }

    public init?(_ name: String) {
        guard let colon = name.firstIndex(of: ":") else { return nil }
        prefix = String(name[..<colon])
        id = String(name[name.index(after: colon)...])
        guard !prefix.isEmpty, !id.isEmpty else { return nil }
    }
}
