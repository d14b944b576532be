import Synchronization

/// The memory that the recovery histories of all rooms share (`rooms.totalHistoryBytes`). A room
/// holds at most its own limit (`rooms.historyBytes`) and at most an equal share of this budget
/// among the rooms that hold any history, never less than `floorBytes`; so thousands of busy rooms
/// (a rush hour's corridors) cost a bounded amount, and a client that was away too long gets a
/// snapshot instead of a replay.
public final class HistoryBudget: Sendable {
    /// The bytes all histories may hold together (give or take `floorBytes` per room).
    public let limitBytes: Int
    /// What a room may always keep, however many rooms share the budget.
    public let floorBytes: Int
    private let held = Atomic<Int>(0)
    private let rooms = Atomic<Int>(0)

    public init(limitBytes: Int, floorBytes: Int = 4_096) {
        self.limitBytes = limitBytes
        self.floorBytes = floorBytes
    }

    /// Bytes held by every room's history now.
    public var heldBytes: Int { held.load(ordering: .relaxed) }
    /// Rooms holding any history now.
    public var roomsHolding: Int { rooms.load(ordering: .relaxed) }

    /// The most one room may hold now.
    var share: Int { max(floorBytes, limitBytes / max(1, rooms.load(ordering: .relaxed))) }

    func change(by delta: Int, roomsBy roomDelta: Int) {
        held.add(delta, ordering: .relaxed)
        if roomDelta != 0 { rooms.add(roomDelta, ordering: .relaxed) }
    }
}

/// One room's bytes as counted in the budget; given back when the room goes (an actor retired
/// with its history still full).
final class HistoryAccount: @unchecked Sendable {
    let budget: HistoryBudget
    /// Changed only by the room's owner (one actor at a time).
    private(set) var bytes = 0

    init(budget: HistoryBudget) { self.budget = budget }

    func add(_ n: Int) {
        budget.change(by: n, roomsBy: bytes == 0 && n > 0 ? 1 : 0)
        bytes += n
    }

    func remove(_ n: Int) {
        bytes -= n
        budget.change(by: -n, roomsBy: bytes == 0 && n > 0 ? -1 : 0)
    }

    deinit { if bytes > 0 { budget.change(by: -bytes, roomsBy: -1) } }
}
