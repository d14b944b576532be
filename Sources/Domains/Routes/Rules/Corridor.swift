import Foundation
import HubbubCrypto

/// A route corridor: the band of `widthMeters` around the path from its first point through the
/// others to its last (a buffered line on the sphere, not a box). Pure value; equal routes — the
/// same points to about ten metres and the same width — have the same `id`, hence one room.
public struct Corridor: Sendable, Equatable {
    /// The path: `from`, each `via`, `to`.
    public let path: [GeoPoint]
    public let widthMeters: Double

    /// Limits on what a corridor may be; every value is configurable.
    public struct Limits: Sendable, Equatable {
        public var minWidthMeters: Double = 10
        public var maxWidthMeters: Double = 20_000
        /// Longest path, in metres.
        public var maxPathMeters: Double = 500_000
        /// Most `via` points.
        public var maxVia = 25

        public init() {}
    }

    /// Why a corridor is refused: `field` names the argument, `message` says what is wrong with it.
    public struct Refusal: Error, Equatable, Sendable {
        public var field: String
        public var message: String
    }

    /// A corridor from `from` through `via` to `to`, checked against `limits`.
    public init(from: GeoPoint, via: [GeoPoint] = [], to: GeoPoint, widthMeters: Double, limits: Limits = .init()) throws(Refusal) {
        guard widthMeters.isFinite, widthMeters >= limits.minWidthMeters, widthMeters <= limits.maxWidthMeters else {
            throw Refusal(field: "widthMeters", message: "must be between \(Int(limits.minWidthMeters)) and \(Int(limits.maxWidthMeters)) metres")
        }
        guard via.count <= limits.maxVia else { throw Refusal(field: "via", message: "at most \(limits.maxVia) points") }
        let path = [from] + via + [to]
        let length = zip(path, path.dropFirst()).reduce(0) { $0 + $1.0.distance(to: $1.1) }
        guard length <= limits.maxPathMeters else {
            throw Refusal(field: "to", message: "the path is \(Int(length / 1000)) km long; at most \(Int(limits.maxPathMeters / 1000)) km")
        }
        self.path = path
        self.widthMeters = widthMeters
    }

    /// A corridor along a recorded path (already checked when it was recorded).
    public init(path: [GeoPoint], widthMeters: Double) {
        precondition(!path.isEmpty)
        self.path = path
        self.widthMeters = widthMeters
    }

    public var from: GeoPoint { path[0] }
    public var to: GeoPoint { path[path.count - 1] }

    /// Distance in metres from `point` to the path.
    public func distance(from point: GeoPoint) -> Double {
        guard path.count > 1 else { return point.distance(to: path[0]) }
        var best = Double.infinity
        for (a, b) in zip(path, path.dropFirst()) { best = min(best, point.distance(toSegmentFrom: a, to: b)) }
        return best
    }

    /// Whether `point` lies in the band: within half the width of the path (edges included).
    public func contains(_ point: GeoPoint) -> Bool { distance(from: point) <= widthMeters / 2 }

    /// The canonical id: the points rounded to 1e-4° (about 11 m of latitude) and the width to the
    /// metre, hashed. Routes that round alike share it.
    public var id: String {
        var text = "c1|\(Int(widthMeters.rounded()))"
        for p in path {
            // -0 and 0, 180 and -180 are the same place.
            let lat = Int((p.lat * 10_000).rounded())
            var lon = Int((p.lon * 10_000).rounded())
            if lon == -1_800_000 { lon = 1_800_000 }
            text += "|\(lat),\(abs(lat) == 900_000 ? 0 : lon)"
        }
        let digest = Digest.sha256(Array(text.utf8)).prefix(12)
        return Base64.encodeURL(Array(digest))
    }
}
