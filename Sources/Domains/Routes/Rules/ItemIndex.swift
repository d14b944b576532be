/// Live items by grid cell, for `intel.query` (a box, newest first) and for a new corridor's first
/// list (the cells its band touches, then the exact test). Pure value; ids are the caller's.
///
/// Each cell keeps its items newest first (by `at`, then id), so a query merges the box's cells
/// from their newest ends and stops once it has `limit` items that pass: its cost follows the cells
/// of the box and the items it returns, not every item in the box.
public struct ItemIndex: Sendable {
    public let grid: GeoGrid
    /// Each cell's entries, newest first: one per item and point in the cell.
    private var cells: [Int64: [Entry]] = [:]
    /// Each item's places and time, to find its entries again.
    private var placed: [String: (points: [GeoPoint], at: Double)] = [:]

    /// An item at one of its points, as a cell holds it.
    struct Entry: Sendable {
        var id: String
        var point: GeoPoint
        var at: Double

        /// Newest first; ties by id, so the order is total and stable (an item's entries in one cell sit together).
        func precedes(_ other: Entry) -> Bool { at != other.at ? at > other.at : id > other.id }
    }

    public init(grid: GeoGrid = GeoGrid()) { self.grid = grid }

    /// Items held.
    public var count: Int { placed.count }

    /// Adds (or moves) an item at `point`, of time `at` (what queries order by).
    public mutating func insert(_ id: String, at point: GeoPoint, time at: Double) {
        insert(id, at: [point], time: at)
    }

    /// Adds (or moves) an item at each of `points`.
    public mutating func insert(_ id: String, at points: [GeoPoint], time at: Double) {
        remove(id)
        placed[id] = (points, at)
        for point in points {
            let entry = Entry(id: id, point: point, at: at)
            let cell = grid.cell(of: point)
            cells[cell, default: []].insert(entry, at: Self.position(of: entry, in: cells[cell] ?? []))
        }
    }

    public mutating func remove(_ id: String) {
        guard let (points, at) = placed.removeValue(forKey: id) else { return }
        let probe = Entry(id: id, point: points[0], at: at)
        for cell in Set(points.map(grid.cell(of:))) {
            guard var list = cells[cell] else { continue }
            let first = Self.position(of: probe, in: list)
            var end = first
            while end < list.count, list[end].id == id { end += 1 }
            list.removeSubrange(first..<end)
            cells[cell] = list.isEmpty ? nil : list
        }
    }

    /// Where `entry` goes in a newest-first list (binary search): before every entry it precedes.
    private static func position(of entry: Entry, in list: [Entry]) -> Int {
        var low = 0, high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].precedes(entry) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The items inside `corridor`'s band (any of their points), each once.
    public func items(in corridor: Corridor) -> [String] {
        var seen = Set<String>()
        var out: [String] = []
        for cell in grid.cells(covering: corridor) {
            for entry in cells[cell] ?? [] where corridor.contains(entry.point) && seen.insert(entry.id).inserted { out.append(entry.id) }
        }
        return out
    }

    /// The newest items in a box of latitude and longitude (`minLon > maxLon`: a box across the
    /// antimeridian) whose time is within `since...until` and that `accept` takes, newest first: at
    /// most `limit`, and whether more were left out.
    public func newest(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double, since: Double = -.infinity,
                       until: Double = .infinity, limit: Int, accept: (String) -> Bool = { _ in true }) -> (ids: [String], truncated: Bool) {
        func inBox(_ p: GeoPoint) -> Bool {
            guard p.lat >= minLat && p.lat <= maxLat else { return false }
            return minLon <= maxLon ? (p.lon >= minLon && p.lon <= maxLon) : (p.lon >= minLon || p.lon <= maxLon)
        }
        // One cursor per cell of the box, each at its newest entry not after `until`.
        var heap = CursorHeap()
        for key in boxCells(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon) {
            guard let list = cells[key] else { continue }
            let start = until.isFinite ? Self.firstNotAfter(until, in: list) : 0
            if start < list.count { heap.push(Cursor(list: list, index: start)) }
        }
        var out: [String] = []
        var seen = Set<String>() // an item at several points in the box is listed once
        while var cursor = heap.pop() {
            let entry = cursor.entry
            guard entry.at >= since else { break } // the newest left is too old: so is everything else
            if inBox(entry.point), !seen.contains(entry.id), accept(entry.id) {
                seen.insert(entry.id)
                if out.count == limit { return (out, true) }
                out.append(entry.id)
            }
            cursor.index += 1
            if cursor.index < cursor.list.count { heap.push(cursor) }
        }
        return (out, false)
    }

    /// The keys of the cells that a box touches.
    private func boxCells(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double) -> [Int64] {
        var keys: [Int64] = []
        let lonSpan = minLon <= maxLon ? maxLon - minLon : 360 - (minLon - maxLon)
        for b in grid.band(minLat)...grid.band(maxLat) {
            let n = grid.cellsInBand(b)
            let first = grid.cellIndex(band: b, lon: minLon)
            let span = min(n - 1, Int((lonSpan / 360 * Double(n)).rounded(.up)) + 1)
            for k in 0...span { keys.append(Int64(b) << 32 | Int64((first + k) % n)) }
        }
        return keys
    }

    /// The index of the first entry of a newest-first list whose time is not after `until`.
    private static func firstNotAfter(_ until: Double, in list: [Entry]) -> Int {
        var low = 0, high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].at > until { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// A position in one cell's list.
    struct Cursor {
        let list: [Entry]
        var index: Int
        var entry: Entry { list[index] }
    }

    /// A max-heap of cursors by their current entry (newest on top).
    struct CursorHeap {
        private var items: [Cursor] = []

        mutating func push(_ c: Cursor) {
            items.append(c)
            var i = items.count - 1
            while i > 0 {
                let parent = (i - 1) / 2
                guard items[i].entry.precedes(items[parent].entry) else { break }
                items.swapAt(i, parent)
                i = parent
            }
        }

        mutating func pop() -> Cursor? {
            guard !items.isEmpty else { return nil }
            items.swapAt(0, items.count - 1)
            let top = items.removeLast()
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var best = i
                if l < items.count, items[l].entry.precedes(items[best].entry) { best = l }
                if r < items.count, items[r].entry.precedes(items[best].entry) { best = r }
                guard best != i else { return top }
                items.swapAt(i, best)
                i = best
            }
        }
    }
}
