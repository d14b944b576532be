import Storage
import Synchronization

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

/// The store's room log, with the rooms of some prefixes read from a domain's own source instead.
final class PrefixedRoomLog: RoomLogSource {
    private let general: any RoomLogSource
    private let byPrefix = Mutex<[String: any RoomLogSource]>([:])

    init(_ general: any RoomLogSource) { self.general = general }

    func use(_ source: any RoomLogSource, for prefix: String) { byPrefix.withLock { $0[prefix] = source } }

    private func source(of room: String) -> any RoomLogSource {
        guard let colon = room.firstIndex(of: ":") else { return general }
        let prefix = String(room[..<colon])
        return byPrefix.withLock { $0[prefix] } ?? general
    }

    func heads(of rooms: [String]) async throws -> [String: RoomHead] {
        // One read per source: rooms grouped by their prefix's source ("" for the general log).
        var groups: [String: (source: any RoomLogSource, rooms: [String])] = [:]
        let special = byPrefix.withLock { $0 }
        for room in rooms {
            let prefix = room.firstIndex(of: ":").map { String(room[..<$0]) } ?? ""
            if let s = special[prefix] {
                groups[prefix, default: (s, [])].rooms.append(room)
            } else {
                groups["", default: (general, [])].rooms.append(room)
            }
        }
        var out: [String: RoomHead] = [:]
        for (_, group) in groups { out.merge(try await group.source.heads(of: group.rooms)) { a, _ in a } }
        return out
    }

    func read(_ room: String, epoch: String, after seq: UInt64, limit: Int) async throws -> [LoggedPush] {
        try await source(of: room).read(room, epoch: epoch, after: seq, limit: limit)
    }
}
