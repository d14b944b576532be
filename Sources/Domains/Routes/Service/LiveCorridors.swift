import DomainSeam
import Realtime
import RoomLog
import Routes

/// One corridor live on the routes' owner: its definition (its room `route:<id>` is written by
/// the intel hub's `RoomWriter`).
struct LiveCorridor: Sendable {
    let id: String
    let corridor: Corridor
    /// Whose recorded path it follows, if it does: then only that user may watch it.
    let owner: CorridorOwner?
    /// When someone last subscribed, resumed or was told of it here (seconds since 1970).
    var lastActivity: Double

    /// `{from, to, via, widthMeters, recorded}` as `route.subscribe` and snapshots show it.
    var json: JSON {
        ["from": corridor.from.json, "to": corridor.to.json, "via": .array(corridor.path.dropFirst().dropLast().map(\.json)),
         "widthMeters": .double(corridor.widthMeters), "recorded": .bool(owner != nil)]
    }
}

/// The corridors live on the routes' owner and the spatial index that finds those an item lies
/// in: a value inside the `IntelHub`, so a change decides its item and the corridors it concerns
/// in the same step.
struct LiveCorridors: Sendable {
    private(set) var byID: [String: LiveCorridor] = [:]
    private var index: CorridorIndex

    init(grid: GeoGrid) { index = CorridorIndex(grid: grid) }

    var count: Int { byID.count }

    /// The ids of the live corridors whose band holds any of `points`, each once.
    func containing(_ points: [GeoPoint]) -> [String] {
        guard points.count > 1 else { return points.first.map { index.corridors(containing: $0) } ?? [] }
        var seen = Set<String>()
        return points.flatMap { index.corridors(containing: $0) }.filter { seen.insert($0).inserted }
    }

    mutating func adopt(_ corridor: LiveCorridor) {
        if byID[corridor.id] == nil { index.insert(corridor.corridor, id: corridor.id) }
        byID[corridor.id] = corridor
    }

    mutating func drop(_ id: String) {
        guard byID.removeValue(forKey: id) != nil else { return }
        index.remove(id: id)
    }

    mutating func touch(_ id: String, at now: Double) { byID[id]?.lastActivity = now }
}

extension GeoPoint {
    var json: JSON { ["lat": .double(lat), "lon": .double(lon)] }
}
