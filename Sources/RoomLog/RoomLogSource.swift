import Storage

/// Where a node reads room logs back (catch-up after a gap or a missed notification, recovery of
/// a client whose `since` is older than what this node holds).
public protocol RoomLogSource: Sendable {
    func heads(of rooms: [String]) async throws -> [String: RoomHead]
    func read(_ room: String, epoch: String, after seq: UInt64, limit: Int) async throws -> [LoggedPush]
}

/// The room log in the store (either engine).
public struct StoreRoomLog: RoomLogSource {
    let store: Store
    public init(store: Store) { self.store = store }

    public func heads(of rooms: [String]) async throws -> [String: RoomHead] {
        try await store.read { try RoomLogRows.heads(of: rooms, $0) }
    }

    public func read(_ room: String, epoch: String, after seq: UInt64, limit: Int) async throws -> [LoggedPush] {
        try await store.read { try RoomLogRows.read(room, epoch: epoch, after: seq, limit: limit, $0) }
    }
}
