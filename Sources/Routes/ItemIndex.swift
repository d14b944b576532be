/// Live items by grid cell, for `intel.query` (a box) and for a new corridor's first list (the
/// cells its band touches, then the exact test). Pure value; ids are the caller's.
public struct ItemIndex: Sendable {
    public let grid: GeoGrid
    private var cells: [Int64: [String: GeoPoint]] = [:]
    private var points: [String: GeoPoint] = [:]

    public init(grid: GeoGrid = GeoGrid()) { self.grid = grid }

    /// Items held.
    public var count: Int { points.count }

    public mutating func insert(_ id: String, at point: GeoPoint) {
        remove(id)
        points[id] = point
        cells[grid.cell(of: point), default: [:]][id] = point
    }

    public mutating func remove(_ id: String) {
        guard let point = points.removeValue(forKey: id) else { return }
        let cell = grid.cell(of: point)
        cells[cell]?[id] = nil
        if cells[cell]?.isEmpty == true { cells[cell] = nil }
    }

    /// The items inside `corridor`'s band.
    public func items(in corridor: Corridor) -> [String] {
        grid.cells(covering: corridor).flatMap { cell in
            (cells[cell] ?? [:]).compactMap { corridor.contains($0.value) ? $0.key : nil }
        }
    }

    /// The items in a box of latitude and longitude; `minLon > maxLon` means a box across the
    /// antimeridian. At most `limit` are returned (and whether more were left out).
    public func items(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double, limit: Int) -> (ids: [String], truncated: Bool) {
        func inBox(_ p: GeoPoint) -> Bool {
            guard p.lat >= minLat && p.lat <= maxLat else { return false }
            return minLon <= maxLon ? (p.lon >= minLon && p.lon <= maxLon) : (p.lon >= minLon || p.lon <= maxLon)
        }
        var out: [String] = []
        let firstBand = grid.band(minLat), lastBand = grid.band(maxLat)
        let lonSpan = minLon <= maxLon ? maxLon - minLon : 360 - (minLon - maxLon)
        for b in firstBand...lastBand {
            let n = grid.cellsInBand(b)
            let first = grid.cellIndex(band: b, lon: minLon)
            let span = min(n - 1, Int((lonSpan / 360 * Double(n)).rounded(.up)) + 1)
            for k in 0...span {
                guard let bucket = cells[Int64(b) << 32 | Int64((first + k) % n)] else { continue }
                for (id, p) in bucket where inBox(p) {
                    if out.count == limit { return (out, true) }
                    out.append(id)
                }
            }
        }
        return (out, false)
    }
}
