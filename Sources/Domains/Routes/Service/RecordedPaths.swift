import Realtime
import Routes
import Storage

/// Recorded paths as stored (`routes.v3`): the fixes of each user's latest journey to each of
/// their destinations, in order. Private: read only for their user's own `route.subscribe`.
enum RecordedPaths {
    /// Limits of recording.
    struct Limits: Sendable {
        /// Fixes one recording holds at most.
        var maxPoints = 5_000
        /// A batch starting this long after the recording's last fix begins a new journey (the old one is replaced).
        var journeyGapSeconds = 1_800.0
    }

    /// Appends `fixes` (in time order, checked) to `user`'s recording for `destination`; returns
    /// how many fixes the recording now holds.
    static func append(user: String, destination: String, fixes: [RecordedPath.Fix], limits: Limits, _ db: any SQLDatabase) throws -> Int {
        let last = try SQLRow.fetchOne(db, sql: "SELECT n, at FROM recorded_path WHERE user = ? AND destination = ? ORDER BY n DESC LIMIT 1",
                                    arguments: [user, destination])
        var next = 0
        if let last, let first = fixes.first {
            let lastAt: Double = last["at"]
            if first.at - lastAt > limits.journeyGapSeconds {
                // A new journey: the old recording goes (corridors already following it stay until retired).
                try db.execute(sql: "DELETE FROM recorded_path WHERE user = ? AND destination = ?", arguments: [user, destination])
            } else {
                guard first.at >= lastAt else {
                    throw ProtocolError.badRequest("field points[0].at is before the last point recorded for this destination")
                }
                next = (last["n"] as Int) + 1
            }
        }
        guard next + fixes.count <= limits.maxPoints else {
            throw ProtocolError(.tooLarge, "a recorded path holds at most \(limits.maxPoints) points (routes.maxTrackPoints); this one has \(next)")
        }
        let insert = try db.cachedStatement(sql: "INSERT INTO recorded_path (user, destination, n, lat, lon, at) VALUES (?, ?, ?, ?, ?, ?)")
        for (i, fix) in fixes.enumerated() {
            try insert.execute(arguments: [user, destination, next + i, fix.point.lat, fix.point.lon, fix.at])
        }
        return next + fixes.count
    }

    /// `user`'s recording for `destination`, oldest fix first (empty when there is none).
    static func path(user: String, destination: String, _ db: any SQLDatabase) throws -> [GeoPoint] {
        try SQLRow.fetchAll(db, sql: "SELECT lat, lon FROM recorded_path WHERE user = ? AND destination = ? ORDER BY n",
                         arguments: [user, destination]).map { GeoPoint($0["lat"], $0["lon"]) }
    }

    /// Deletes the recording and the private corridors that followed it.
    static func forget(user: String, destination: String, _ db: any SQLDatabase) throws {
        try db.execute(sql: "DELETE FROM recorded_path WHERE user = ? AND destination = ?", arguments: [user, destination])
        try db.execute(sql: "DELETE FROM corridor WHERE owner = ? AND destination = ?", arguments: [user, destination])
    }
}
