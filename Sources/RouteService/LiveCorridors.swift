import DomainSeam
import Realtime
import RoomLog
import Routes

/// One corridor live on the routes' owner: its definition and its room's log (`route:<id>`) as
/// the intel hub writes it.
struct LiveCorridor: Sendable {
    let id: String
    let corridor: Corridor
    /// Whose recorded path it follows, if it does: then only that user may watch it.
    let owner: CorridorOwner?
    var room: StagedRoom
    /// When someone last subscribed, resumed or was told of it here (seconds since 1970).
    var lastActivity: Double

    /// `{from, to, via, widthMeters, recorded}` as `route.subscribe` and snapshots show it.
    var json: JSON {
        ["from": corridor.from.json, "to": corridor.to.json, "via": .array(corridor.path.dropFirst().dropLast().map(\.json)),
         "widthMeters": .double(corridor.widthMeters), "recorded": .bool(owner != nil)]
    }
}

/// The corridors live on the routes' owner and the spatial index that finds those an item lies
/// in: a value inside the `IntelHub`, so a change decides its item and stages the pushes it
/// means for every corridor in the same step. Pushes are staged with the next `seq` of each
/// corridor's room and taken by the change's write (`take`), which logs them in its transaction.
struct LiveCorridors: Sendable {
    private(set) var byID: [String: LiveCorridor] = [:]
    private var index: CorridorIndex
    /// The corridors with pushes staged and not yet taken.
    private var staged: Set<String> = []

    init(grid: GeoGrid) { index = CorridorIndex(grid: grid) }

    var count: Int { byID.count }
    /// Whether a change staged pushes not yet taken.
    var hasStaged: Bool { !staged.isEmpty }

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

    /// Stages `event` with `data` in each of `ids`.
    mutating func stage(_ event: RoutePush, _ data: JSON, in ids: [String], at now: Double) {
        for id in ids where byID[id] != nil {
            byID[id]!.room.stage(event, data: data, at: now)
            staged.insert(id)
        }
    }

    /// Stages `event` about `item` in each of `ids`, as each corridor shows it (its distance to
    /// the corridor's destination), in every language the item has.
    mutating func stage(_ event: RoutePush, _ item: IntelItem, encoded: EncodedItem, in ids: [String], at now: Double) {
        let languages = item.translations.keys.sorted()
        for id in ids {
            guard let to = byID[id]?.corridor.to else { continue }
            let distance = Int(item.distance(to: to).rounded())
            byID[id]!.room.stage(event, languages: languages, data: { tag in ["item": encoded.json(tag: tag, distance: distance)] }, at: now)
            staged.insert(id)
        }
    }

    /// Every corridor's pushes staged since the last call, each room's in seq order.
    mutating func take() -> [[LoggedPush]] {
        defer { staged = [] }
        return staged.compactMap { id in byID[id]?.room.take() }.filter { !$0.isEmpty }
    }
}

extension GeoPoint {
    var json: JSON { ["lat": .double(lat), "lon": .double(lon)] }
}
