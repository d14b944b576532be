/// Live corridors by the grid cells their bands touch, so that an item's corridors are found by
/// looking at one cell and testing the few corridors registered there exactly: posting an item
/// costs work for the corridors near it, not for all of them. Pure value.
public struct CorridorIndex: Sendable {
    public let grid: GeoGrid
    /// Corridors by slot; a free slot is nil and listed in `free`.
    private var entries: [Entry?] = []
    private var free: [Int32] = []
    private var slots: [String: Int32] = [:]
    /// cell → the slots of the corridors touching it.
    private var cells: [Int64: [Int32]] = [:]

    struct Entry: Sendable {
        var id: String
        var corridor: Corridor
        var cells: [Int64]
    }

    public init(grid: GeoGrid = GeoGrid()) { self.grid = grid }

    /// Corridors held.
    public var count: Int { slots.count }
    /// Cell registrations held (the index's size: each costs a slot number in a cell's list).
    public var registrations: Int { entries.reduce(0) { $0 + ($1?.cells.count ?? 0) } }

    /// Adds a corridor under `id` (nothing if it is there already).
    public mutating func insert(_ corridor: Corridor, id: String) {
        guard slots[id] == nil else { return }
        let covered = grid.cells(covering: corridor)
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
            entries[Int(slot)] = Entry(id: id, corridor: corridor, cells: covered)
        } else {
            slot = Int32(entries.count)
            entries.append(Entry(id: id, corridor: corridor, cells: covered))
        }
        slots[id] = slot
        for cell in covered { cells[cell, default: []].append(slot) }
    }

    /// Removes a corridor (a retired room).
    public mutating func remove(id: String) {
        guard let slot = slots.removeValue(forKey: id), let entry = entries[Int(slot)] else { return }
        for cell in entry.cells {
            cells[cell]?.removeAll { $0 == slot }
            if cells[cell]?.isEmpty == true { cells[cell] = nil }
        }
        entries[Int(slot)] = nil
        free.append(slot)
    }

    /// The ids of the corridors whose band contains `point`, each once.
    public func corridors(containing point: GeoPoint) -> [String] {
        guard let candidates = cells[grid.cell(of: point)] else { return [] }
        return candidates.compactMap { slot in
            guard let e = entries[Int(slot)], e.corridor.contains(point) else { return nil }
            return e.id
        }
    }

    /// The corridor held under `id`.
    public func corridor(_ id: String) -> Corridor? { slots[id].flatMap { entries[Int($0)]?.corridor } }
}
