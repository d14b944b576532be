import Foundation

/// Cells of roughly equal size over the whole sphere: bands of `cellDegrees` of latitude, each cut
/// into as many cells of longitude as keep them near square (fewer towards the poles, one at a
/// pole). A cell is named by one integer. Longitude wraps, so the antimeridian is no seam.
public struct GeoGrid: Sendable, Equatable {
    public let cellDegrees: Double
    let bands: Int

    /// `cellDegrees` of latitude per band (0.01°: about 1.1 km).
    public init(cellDegrees: Double = 0.01) {
        precondition(cellDegrees > 0 && cellDegrees <= 10)
        self.cellDegrees = cellDegrees
        bands = Int((180 / cellDegrees).rounded(.up))
    }

    /// Half the diagonal of the cells of `band`, in metres (measured at the band's edge nearer the
    /// equator, where they are widest): no point of such a cell is farther from its centre.
    func cellRadius(band: Int) -> Double {
        let south = -90 + Double(band) * cellDegrees, north = south + cellDegrees
        let widest = south <= 0 && north >= 0 ? 0 : min(abs(south), abs(north))
        let metresPerDegree = .pi / 180 * GeoPoint.earthRadius
        let height = cellDegrees * metresPerDegree
        let width = 360 / Double(cellsInBand(band)) * cos(widest * .pi / 180) * metresPerDegree
        return sqrt(height * height + width * width) / 2
    }

    func band(_ lat: Double) -> Int { min(bands - 1, max(0, Int(((lat + 90) / cellDegrees).rounded(.down)))) }

    /// Cells of longitude in `band`.
    func cellsInBand(_ band: Int) -> Int {
        // Cut at the band's edge nearer the equator, so no cell is narrower than it is tall there.
        let south = -90 + Double(band) * cellDegrees, north = south + cellDegrees
        let widest = south <= 0 && north >= 0 ? 0 : min(abs(south), abs(north))
        return max(1, Int((360 * cos(widest * .pi / 180) / cellDegrees).rounded(.down)))
    }

    func cellIndex(band: Int, lon: Double) -> Int {
        let n = cellsInBand(band)
        let x = Int(((lon + 180) / 360 * Double(n)).rounded(.down))
        return ((x % n) + n) % n
    }

    /// The cell holding `point`.
    public func cell(of point: GeoPoint) -> Int64 {
        let b = band(point.lat)
        return Int64(b) << 32 | Int64(cellIndex(band: b, lon: point.lon))
    }

    /// The centre of a cell.
    func center(of cell: Int64) -> GeoPoint {
        let b = Int(cell >> 32), x = Int(cell & 0xFFFF_FFFF)
        let lat = min(90, -90 + (Double(b) + 0.5) * cellDegrees)
        let lon = -180 + (Double(x) + 0.5) * 360 / Double(cellsInBand(b))
        return GeoPoint(lat: lat, lon: min(180, lon))!
    }

    /// Every cell that may hold a point within `radius` metres of `point` (a superset: the box around it).
    public func cells(near point: GeoPoint, radius: Double) -> [Int64] {
        let dLat = radius / GeoPoint.earthRadius * 180 / .pi
        let south = max(-90, point.lat - dLat), north = min(90, point.lat + dLat)
        var out: [Int64] = []
        for b in band(south)...band(north) {
            let n = cellsInBand(b)
            // The band's latitude nearest a pole bounds how far `radius` reaches in longitude.
            let edge = min(89.999_999, max(abs(-90 + Double(b) * cellDegrees), abs(-90 + Double(b + 1) * cellDegrees)))
            let dLon = dLat / cos(edge * .pi / 180)
            if dLon >= 180 || n == 1 {
                for x in 0..<n { out.append(Int64(b) << 32 | Int64(x)) }
                continue
            }
            let first = Int(((point.lon - dLon + 180) / 360 * Double(n)).rounded(.down))
            let last = Int(((point.lon + dLon + 180) / 360 * Double(n)).rounded(.down))
            let span = min(last - first, n - 1)
            for k in 0...span { out.append(Int64(b) << 32 | Int64((((first + k) % n) + n) % n)) }
        }
        return out
    }

    /// Every cell a corridor's band touches: the cells whose centre lies within half the width plus
    /// the cell's radius of the path. Candidates come from walking each segment in steps of half a
    /// cell: every point of the band is within half the width and half a step of some step.
    public func cells(covering corridor: Corridor) -> [Int64] {
        let halfWidth = corridor.widthMeters / 2
        let step = cellDegrees * .pi / 180 * GeoPoint.earthRadius / 2
        var found = Set<Int64>()
        var candidates = Set<Int64>()
        for (a, b) in zip(corridor.path, corridor.path.dropFirst()) + (corridor.path.count == 1 ? [(corridor.path[0], corridor.path[0])] : []) {
            let length = a.distance(to: b)
            let steps = max(1, Int((length / step).rounded(.up)))
            candidates.removeAll(keepingCapacity: true)
            for i in 0...steps {
                candidates.formUnion(cells(near: a.interpolated(to: b, fraction: Double(i) / Double(steps)), radius: halfWidth + step))
            }
            for cell in candidates where !found.contains(cell) {
                let reach = halfWidth + cellRadius(band: Int(cell >> 32))
                if center(of: cell).distance(toSegmentFrom: a, to: b) <= reach { found.insert(cell) }
            }
        }
        return found.sorted()
    }
}

extension GeoPoint {
    /// The point a `fraction` of the way along the great circle to `other`.
    public func interpolated(to other: GeoPoint, fraction f: Double) -> GeoPoint {
        let d = angle(to: other)
        guard d > 1e-12 else { return self }
        let a = sin((1 - f) * d) / sin(d), b = sin(f * d) / sin(d)
        let x = a * cos(latRadians) * cos(lonRadians) + b * cos(other.latRadians) * cos(other.lonRadians)
        let y = a * cos(latRadians) * sin(lonRadians) + b * cos(other.latRadians) * sin(other.lonRadians)
        let z = a * sin(latRadians) + b * sin(other.latRadians)
        let lat = atan2(z, sqrt(x * x + y * y)) * 180 / .pi
        let lon = atan2(y, x) * 180 / .pi
        return GeoPoint(lat: max(-90, min(90, lat)), lon: max(-180, min(180, lon)))!
    }
}
