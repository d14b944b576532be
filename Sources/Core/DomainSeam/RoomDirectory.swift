import Realtime
import RoomLog
import WebSocket

/// The rooms of one prefix (`venue`, `route`, `user`, `event`), each placed as `placement` says:
/// on the room log (their owner writes their pushes through a `RoomWriter`) or made on each node
/// that watches them (`LocalRoom`). The core subscribes members to the node's `RoomFeed` itself
/// (`subscribe`, recovery, `unsubscribe`, leave-on-close), and asks the directory only for a
/// snapshot (on the room's owner node, forwarded there from the others, or here for a local room)
/// and whether a user may watch.
public protocol RoomDirectory: Sendable {
    /// The prefix before the colon of the room's name (`venue` for `venue:v12`).
    var prefix: String { get }
    /// Where the rooms live (`leased` unless a domain says otherwise).
    var placement: RoomPlacement { get }
    /// The room as it is now and the head of its log at that point (pushes staged included), after
    /// checking that `user` may subscribe (`forbidden` or `not_found` otherwise).
    func snapshot(_ id: String, for user: String) async throws(ProtocolError) -> RoomSnapshot
    /// The same, shaped by `view`: a domain op's own arguments for the subscriber's first look
    /// (`route.subscribe`'s filter and order; see `LoggedRooms.join`). The core's `subscribe`
    /// passes an empty object.
    func snapshot(_ id: String, for user: String, view: JSON) async throws(ProtocolError) -> RoomSnapshot
    /// Checks that `user` may watch room `id`, without loading it (a recovery from the log).
    func authorize(_ id: String, for user: String) async throws(ProtocolError)
    /// The lease whose holder owns room `id` (several nodes): by default the room's own name.
    /// Rooms whose pushes one owner decides together (tonight's users and events, from one
    /// catalog) name one lease for all of them, so they have one owner.
    func lease(of id: String) -> String
    /// This node just took `lease` (several nodes): whatever it held in memory of the rooms under
    /// it may be stale (another node owned them meanwhile) and must be loaded afresh. `id` is the
    /// part of the lease after the prefix (a room's id, for rooms with leases of their own).
    func acquired(_ id: String)
    /// Whether the owner must hear of a member resuming the room from the log on any node
    /// (`resumed`): true for rooms whose owner pushes only while it knows someone watches.
    var ownerHearsResumes: Bool { get }
    /// On the owner: a member resumed room `id` from the log, on this node or another.
    func resumed(_ id: String) async throws(ProtocolError)
    /// Where the rooms' pushes are read back when not from the store's room log (nil): a domain
    /// that keeps them longer than the log's retention, in a table of its own (`user:` streams).
    var source: (any RoomLogSource)? { get }
}

/// Where a prefix's rooms live.
public enum RoomPlacement: Sendable {
    /// One owner at a time, under a lease (several nodes), writing every push to the room log
    /// before it is delivered: `seq` and `epoch` are the same on every node and survive restarts,
    /// and `since` recovers from the log on any node.
    case leased
    /// Made on every node that has members, each its own copy, from logs that are durable already
    /// (a corridor's pushes, from its intel shards' logs): no lease, no write, no notification.
    /// Its epoch is new at each load on each node; `since` recovers from that node's history
    /// within the load, and anything else is answered with a snapshot. Its owner is always this
    /// node (`lease(of:)` and `source` do not apply; `resumed`, if `ownerHearsResumes`, runs here).
    case local
}

extension RoomDirectory {
    public var placement: RoomPlacement { .leased }
    public func snapshot(_ id: String, for user: String, view: JSON) async throws(ProtocolError) -> RoomSnapshot {
        try await snapshot(id, for: user)
    }
    public func lease(of id: String) -> String { "\(prefix):\(id)" }
    public func acquired(_ id: String) {}
    public var ownerHearsResumes: Bool { false }
    public func resumed(_ id: String) async throws(ProtocolError) {}
    public var source: (any RoomLogSource)? { nil }
}

/// What the core offers a domain about its logged rooms beyond the `subscribe` op (it provides
/// this capability): a domain op that subscribes its caller itself (`route.subscribe`), and
/// background work that must run on one node only (a shard's expiry), node ops on a lease's holder.
public protocol LoggedRooms: Sendable {
    /// Subscribes the caller's connection to `room` as the core's `subscribe` does (the
    /// subscription counted against the connection's limit), from a snapshot its owner takes with
    /// `view`, here or on another node; `reply` answers with `answer(snapshot)` ahead of any push.
    func join(_ room: RoomName, user: String, session: any SessionControl, reply: Replier, view: JSON,
              answer: @escaping @Sendable (RoomSnapshot) -> JSON) async throws(ProtocolError)
    /// Whether this node holds `lease` now, claiming it if nobody does (one node: always).
    func holds(_ lease: String) async -> Bool
    /// Whether this node holds `lease` now, by what it knows: no claim, no read (one node: always).
    func holdsNow(_ lease: String) -> Bool
    /// Those of `rooms` (watched here) whose owner is gone, now claimed by this node, in one look
    /// for all of them (one node: every one). A room another node took first is left to it.
    func claimUnheld(_ rooms: [String]) async -> [String]
    /// Runs node op `op` (`Op.node`) on the holder of `lease` when that is another node, and
    /// returns its result; nil when this node holds it (claiming it if nobody does; one node:
    /// always), so the caller runs the op's work here.
    func call(_ op: String, args: JSON, on lease: String) async throws(ProtocolError) -> JSON?
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

/// A room's name split at its first colon: `venue:v12` → prefix `venue`, id `v12`.
public struct RoomName: Sendable, Equatable {
    public var prefix: String
    public var id: String
    /// The whole name, `prefix:id`.
    public var name: String { "\(prefix):\(id)" }

    public init(prefix: String, id: String) {
        self.prefix = prefix
        self.id = id
    }

    public init?(_ name: String) {
        guard let colon = name.firstIndex(of: ":") else { return nil }
        prefix = String(name[..<colon])
        id = String(name[name.index(after: colon)...])
        guard !prefix.isEmpty, !id.isEmpty else { return nil }
    }
}
