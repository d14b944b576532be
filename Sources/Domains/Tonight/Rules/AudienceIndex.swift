/// Who may care about an event, without looking at every user: event-goers by favourite artist,
/// by favourite category, by the grid cells their radius covers, and by the events they follow.
/// Keeps a copy of each goer's state (their actor owns the original and updates it here).
public struct AudienceIndex: Sendable {
    public let grid: PlaceGrid
    public private(set) var goers: [String: EventGoer] = [:]
    private var byArtist: [String: Set<String>] = [:]
    private var byCategory: [String: Set<String>] = [:]
    private var byCell: [PlaceGrid.Cell: Set<String>] = [:]
    private var followers: [String: Set<String>] = [:]

    public init(grid: PlaceGrid = PlaceGrid(cellDegrees: 0.5)) { self.grid = grid }

    public subscript(user: String) -> EventGoer? { goers[user] }

    /// Takes `goer`'s current state (replacing what was indexed for that user).
    public mutating func update(_ goer: EventGoer) {
        remove(goer.user)
        goers[goer.user] = goer
        for a in goer.artists { byArtist[a, default: []].insert(goer.user) }
        for c in goer.categories { byCategory[c, default: []].insert(goer.user) }
        for e in goer.followed.keys { followers[e, default: []].insert(goer.user) }
        if let p = goer.prefs { for c in grid.cells(around: p.location, km: p.radiusKm) { byCell[c, default: []].insert(goer.user) } }
    }

    /// Forgets a user (account deleted).
    public mutating func remove(_ user: String) {
        guard let old = goers.removeValue(forKey: user) else { return }
        for a in old.artists { Self.drop(user, a, &byArtist) }
        for c in old.categories { Self.drop(user, c, &byCategory) }
        for e in old.followed.keys { Self.drop(user, e, &followers) }
        if let p = old.prefs { for c in grid.cells(around: p.location, km: p.radiusKm) { Self.drop(user, c, &byCell) } }
    }

    private static func drop<K: Hashable>(_ user: String, _ key: K, _ index: inout [K: Set<String>]) {
        index[key]?.remove(user)
        if index[key]?.isEmpty == true { index[key] = nil }
    }

    /// Users following `event`.
    public func followers(of event: String) -> Set<String> { followers[event] ?? [] }

    /// Users who favour any of `artists`.
    public func fans(of artists: some Sequence<String>) -> Set<String> {
        var out = Set<String>()
        for a in artists { out.formUnion(byArtist[a] ?? []) }
        return out
    }

    /// Users who may want an event at `place` by `artists` (its performers and the artists they are
    /// recommended for) in `categories` (with their parents): a favourite among them, and a radius
    /// that reaches `place`. The smaller of the two sets is walked, the other is looked up.
    public func audience(artists: some Sequence<String>, categories: some Sequence<String>, at place: Place) -> Set<String> {
        var liking = fans(of: artists)
        for c in categories { liking.formUnion(byCategory[c] ?? []) }
        let near = byCell[grid.cell(of: place)] ?? []
        let (walk, other) = liking.count <= near.count ? (liking, near) : (near, liking)
        return walk.filter { user in
            guard other.contains(user), let p = goers[user]?.prefs else { return false }
            return p.location.kilometres(to: place) <= p.radiusKm
        }
    }
}
