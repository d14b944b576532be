import Realtime
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
