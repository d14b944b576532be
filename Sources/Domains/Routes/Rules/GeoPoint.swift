import Foundation

/// A point on the Earth, in degrees (WGS84 latitude and longitude, on a sphere of the mean radius).
public struct GeoPoint: Sendable, Hashable, CustomStringConvertible {
    public var lat: Double
    public var lon: Double

    /// The mean Earth radius (IUGG), in metres: distances are on this sphere.
    public static let earthRadius = 6_371_008.8

    /// A point, or nil when the coordinates are not finite or out of range (lat −90…90, lon −180…180).
    public init?(lat: Double, lon: Double) {
        guard lat.isFinite, lon.isFinite, (-90...90).contains(lat), (-180...180).contains(lon) else { return nil }
        self.lat = lat
        self.lon = lon
    }

    /// A point known to be valid (constants, tests).
    public init(_ lat: Double, _ lon: Double) {
        precondition(GeoPoint(lat: lat, lon: lon) != nil, "invalid point \(lat), \(lon)")
        self.lat = lat
        self.lon = lon
    }

    public var description: String { "(\(lat), \(lon))" }

    var latRadians: Double { lat * .pi / 180 }
    var lonRadians: Double { lon * .pi / 180 }

    /// Great-circle distance in metres (haversine: exact on the sphere, stable for short distances).
    public func distance(to other: GeoPoint) -> Double {
        GeoPoint.earthRadius * angle(to: other)
    }

    /// The central angle to `other`, in radians.
    func angle(to other: GeoPoint) -> Double {
        let dLat = other.latRadians - latRadians
        let dLon = other.lonRadians - lonRadians
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(latRadians) * cos(other.latRadians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * atan2(sqrt(a), sqrt(max(0, 1 - a)))
    }

    /// Initial bearing towards `other`, in radians clockwise from north.
    func bearing(to other: GeoPoint) -> Double {
        let dLon = other.lonRadians - lonRadians
        let y = sin(dLon) * cos(other.latRadians)
        let x = cos(latRadians) * sin(other.latRadians) - sin(latRadians) * cos(other.latRadians) * cos(dLon)
        return atan2(y, x)
    }

    /// Distance in metres to the great-circle segment from `a` to `b` (to its nearer end when the
    /// point lies beyond either end). Works across the antimeridian and near the poles.
    public func distance(toSegmentFrom a: GeoPoint, to b: GeoPoint) -> Double {
        let d13 = a.angle(to: self)
        let d12 = a.angle(to: b)
        guard d12 > 1e-12, d13 > 1e-12 else { return GeoPoint.earthRadius * (d12 > 1e-12 ? 0 : d13) }
        let theta = bearing(from: a) - a.bearing(to: b)
        let crossTrack = asin(max(-1, min(1, sin(d13) * sin(theta))))
        // Along-track angle from a, signed: negative when the point is behind a.
        let alongTrack = atan2(sin(d13) * cos(theta), cos(d13)) // = atan2 form of acos(cos d13 / cos dxt), keeps the sign
        if alongTrack < 0 { return GeoPoint.earthRadius * d13 }
        if alongTrack > d12 { return distance(to: b) }
        return GeoPoint.earthRadius * abs(crossTrack)
    }

    private func bearing(from a: GeoPoint) -> Double { a.bearing(to: self) }
}
