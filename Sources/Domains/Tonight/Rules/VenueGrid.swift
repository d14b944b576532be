import Foundation

/// A place on Earth, in degrees.
public struct Place: Sendable, Equatable {
    public var lat: Double
    public var lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }

    /// Great-circle distance in kilometres (haversine).
    public func kilometres(to other: Place) -> Double {
        let r = 6_371.0088, rad = Double.pi / 180
        let dLat = (other.lat - lat) * rad, dLon = (other.lon - lon) * rad
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat * rad) * cos(other.lat * rad) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * r * asin(min(1, a.squareRoot()))
    }
}

/// A fixed grid of cells over the globe (`cellDegrees` on a side), for finding what lies within
/// a radius without looking at everything: venues near a user, users whose radius covers a venue.
public struct PlaceGrid: Sendable {
    /// A cell's key: its row and column packed in one integer.
    public typealias Cell = Int

    public let cellDegrees: Double
    private let columns: Int

    public init(cellDegrees: Double = 0.25) {
        self.cellDegrees = cellDegrees
        columns = Int((360 / cellDegrees).rounded(.up))
    }

    public func cell(of p: Place) -> Cell {
        let row = Int(((p.lat + 90) / cellDegrees).rounded(.down))
        let column = Int(((p.lon + 180) / cellDegrees).rounded(.down)) % columns
        return row * columns + column
    }

    /// Every cell that may hold a point within `km` of `center` (a box around the circle, wrapping
    /// at the antimeridian).
    public func cells(around center: Place, km: Double) -> [Cell] {
        let dLat = km / 111.19
        let minLat = max(-90, center.lat - dLat), maxLat = min(89.9999, center.lat + dLat)
        let widest = max(abs(minLat), abs(maxLat))
        let cosLat = cos(widest * .pi / 180)
        let dLon = cosLat < 0.01 ? 180 : min(180, km / (111.19 * cosLat))
        let firstRow = Int(((minLat + 90) / cellDegrees).rounded(.down)), lastRow = Int(((maxLat + 90) / cellDegrees).rounded(.down))
        let span = min(columns - 1, Int((2 * dLon / cellDegrees).rounded(.up)) + 1)
        let firstColumn = Int(((center.lon - dLon + 180) / cellDegrees).rounded(.down))
        var out: [Cell] = []
        out.reserveCapacity((lastRow - firstRow + 1) * (span + 1))
        for row in firstRow...lastRow {
            for offset in 0...span {
                let column = ((firstColumn + offset) % columns + columns) % columns
                out.append(row * columns + column)
            }
        }
        return out
    }
}

/// Places by grid cell (venues), answering "which are within this radius".
public struct PlaceIndex<ID: Hashable & Sendable>: Sendable {
    public let grid: PlaceGrid
    private var cells: [PlaceGrid.Cell: [ID: Place]] = [:]
    private var places: [ID: Place] = [:]

    public init(grid: PlaceGrid = PlaceGrid()) { self.grid = grid }

    public var count: Int { places.count }

    /// Puts `id` at `place` (moving it if it was elsewhere), or takes it out with nil.
    public mutating func set(_ id: ID, at place: Place?) {
        if let old = places[id] {
            let c = grid.cell(of: old)
            cells[c]?[id] = nil
            if cells[c]?.isEmpty == true { cells[c] = nil }
        }
        places[id] = place
        if let place { cells[grid.cell(of: place), default: [:]][id] = place }
    }

    public func place(of id: ID) -> Place? { places[id] }

    /// Each place within `km` of `center`, with its distance.
    public func within(_ km: Double, of center: Place) -> [(id: ID, km: Double)] {
        var out: [(id: ID, km: Double)] = []
        for c in grid.cells(around: center, km: km) {
            guard let here = cells[c] else { continue }
            for (id, p) in here {
                let d = center.kilometres(to: p)
                if d <= km { out.append((id, d)) }
            }
        }
        return out
    }
}
