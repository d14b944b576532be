import Foundation

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
        /// Each segment's box, widened by half the band (nil: the segment is always measured).
        var boxes: [SegmentBox?]

        init(id: String, corridor: Corridor, cells: [Int64]) {
            self.id = id
            self.corridor = corridor
            self.cells = cells
            let path = corridor.path
            boxes = zip(path, path.dropFirst()).map { SegmentBox($0, $1, reach: corridor.widthMeters / 2) }
        }

        /// `Corridor.contains`, measuring only the segments whose box holds `point`, and only until
        /// one is near enough. Corridors converging on a busy hub all pass through its cell: a point
        /// there is near one or two of each one's segments, and the distance on the sphere (some
        /// fifteen trigonometric calls a segment) was half the intel hub's time in rush hour.
        func contains(_ point: GeoPoint) -> Bool {
            let path = corridor.path, half = corridor.widthMeters / 2
            guard path.count > 1 else { return corridor.contains(point) }
            for i in 0..<(path.count - 1) where boxes[i]?.contains(point) ?? true {
                if point.distance(toSegmentFrom: path[i], to: path[i + 1]) <= half { return true }
            }
            return false
        }
    }

    /// A box of latitude and longitude holding every point within `reach` metres of a segment (the
    /// arc between its ends), generously: a point outside it is farther than `reach`.
    struct SegmentBox: Sendable {
        let minLat, maxLat, minLon, maxLon: Double

        /// Nil where a box would not hold: a segment across the antimeridian, or near a pole.
        init?(_ a: GeoPoint, _ b: GeoPoint, reach: Double) {
            guard abs(a.lon - b.lon) <= 180 else { return nil }
            let metresPerDegree = .pi / 180 * GeoPoint.earthRadius
            let widest = max(abs(a.lat), abs(b.lat)), length = a.distance(to: b)
            // An arc bows poleward of the straight line between its ends in degrees, by about
            // length² / 8R × tan(latitude): allowed for eight times over. Its longitude stays
            // between its ends' (an arc shorter than half the globe, through no pole).
            let bow = length * length / GeoPoint.earthRadius * max(1, tan(min(widest, 85) * .pi / 180))
            let r = reach + bow + 1
            let dLat = r / metresPerDegree
            guard widest + dLat < 89 else { return nil }
            let dLon = r / (metresPerDegree * cos((widest + dLat) * .pi / 180))
            minLat = min(a.lat, b.lat) - dLat
            maxLat = max(a.lat, b.lat) + dLat
            minLon = min(a.lon, b.lon) - dLon
            maxLon = max(a.lon, b.lon) + dLon
        }

        /// Whether `p` is inside (the box may reach past ±180°).
        func contains(_ p: GeoPoint) -> Bool {
            guard p.lat >= minLat, p.lat <= maxLat else { return false }
            return (p.lon >= minLon && p.lon <= maxLon) || p.lon + 360 <= maxLon || p.lon - 360 >= minLon
        }
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
        return candidates.compactMap { slot in entries[Int(slot)]?.contains(point) == true ? entries[Int(slot)]?.id : nil }
    }

    /// Whether corridor `id` is held and its band contains `point`.
    public func corridor(_ id: String, contains point: GeoPoint) -> Bool {
        slots[id].flatMap { entries[Int($0)] }?.contains(point) ?? false
    }

    /// The corridor held under `id`.
    public func corridor(_ id: String) -> Corridor? { slots[id].flatMap { entries[Int($0)]?.corridor } }
}
