import Realtime

/// Where a logged room's owner is, as the core asks before it runs an op homed in that room
/// (`Op.homed`) or takes a snapshot of it: here, or another node to forward to.
public protocol RoomOwners: Sendable {
    func owner(of room: String) async throws(ProtocolError) -> RoomOwner
    /// The owner given for `room` could not be reached: ask again next time.
    func forget(_ room: String)
    /// Whether this node holds `room`'s lease now, by what it knows (no claim, no read): a room
    /// owner that keeps writing without being asked (a corridor fed by logs) stops once this is
    /// false, before another node can take the lease.
    func isHere(_ room: String) -> Bool
    /// Those of `rooms` whose owner is gone (no live node holds their lease), in one look: rooms
    /// watched here that nobody pushes to any more.
    func unheld(_ rooms: [String]) async throws(ProtocolError) -> [String]
}

/// A room's owner, seen from this node.
public enum RoomOwner: Sendable {
    /// This node: run the op here.
    case here
    /// Another node: forward to it.
    case peer(any PeerNode)
}

/// Another node, as this one forwards to it.
public protocol PeerNode: Sendable {
    /// Sends request `op` with `args` there, as `user` (from `address`), in call order, and returns
    /// once it is sent; `completion` gets its reply's text (`{"id":…,"ok":…}`, with the id the link
    /// gave it), or the error that kept it from coming.
    func forward(op: String, args: JSON, user: String?, address: String,
                 completion: @escaping @Sendable (Result<[UInt8], ProtocolError>) -> Void) async throws(ProtocolError)
    /// The room's snapshot, taken there, for `user`, shaped by `view` (see `RoomDirectory`).
    func snapshot(room: String, for user: String, view: JSON) async throws(ProtocolError) -> RoomSnapshot
    /// Runs a node op (`Op.node`) there, as no user, and returns its result (its error, thrown).
    func call(op: String, args: JSON) async throws(ProtocolError) -> JSON
    /// Tells the room's owner that a member resumed it from the log (`RoomDirectory.resumed`).
    func resumed(room: String) async throws(ProtocolError)
    /// Serves an operator request to a homed endpoint there (`HTTPEndpoint.home`), its body whole.
    func http(method: String, target: String, headers: [(name: String, value: String)], body: [UInt8]) async throws(ProtocolError) -> HTTPResponse
}
