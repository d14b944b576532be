import Cluster
import DomainSeam
import Realtime

/// The owners of logged rooms as the core asks for them: a room's name goes to the lease its
/// directory names (`RoomDirectory.lease(of:)`: its own by default, one for all of tonight's
/// rooms), and `Ownership` answers for the lease (local rooms, `RoomPlacement.local`, are never
/// asked for). Ops' homes and the cluster's own requests go
/// through here, so every room under one lease has one owner.
struct RoomLeases: RoomOwners {
    let ownership: Ownership
    let logged: [String: any RoomDirectory]

    /// The lease that owns room (or home) `name`; a name outside the logged prefixes is its own.
    func lease(of name: String) -> String {
        guard let room = RoomName(name), let d = logged[room.prefix] else { return name }
        return d.lease(of: room.id)
    }

    func owner(of room: String) async throws(ProtocolError) -> RoomOwner {
        try await ownership.owner(of: lease(of: room))
    }

    func forget(_ room: String) {
        ownership.forget(lease(of: room))
    }

    func isHere(_ room: String) -> Bool { ownership.isHere(lease(of: room)) }

    func unheld(_ rooms: [String]) async throws(ProtocolError) -> [String] {
        let byLease = Dictionary(grouping: rooms, by: lease(of:))
        return try await ownership.unheld(Array(byLease.keys)).flatMap { byLease[$0] ?? [] }
    }
}
