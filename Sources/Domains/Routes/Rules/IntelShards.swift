/// How the intel items are split into shards, each decided by one owner (the holder of its lease,
/// `intel:<shard>`) and written to one log (room `intel:<shard>`): an item at one place belongs to
/// the cell of a coarse grid its point falls in (cells are half-open, so an item on a border
/// belongs to one); a provider's named item (a transit alert at every stop of a line) to `named`,
/// where a full dataset can end the rest of its scope. An item's id names its shard, so an op on
/// it is sent to the shard's owner from the id alone, and an item never changes shard. A corridor
/// follows the shards its band can reach, and `named`. Pure value.
public struct IntelShards: Sendable, Equatable {
    /// The shard of every named item, and of items stored before ids named their shard.
    public static let named = "named"
    public let grid: GeoGrid
    /// The cell size in millionths of a degree: part of every cell shard's name, so a shard of
    /// another size (the setting changed while its items lived) is never taken for one of these.
    let size: Int

    /// Cells of `degrees` of latitude (0.05°: about 5.5 km, some 36 shards over a city of 30 km).
    public init(degrees: Double = 0.05) {
        grid = GeoGrid(cellDegrees: degrees)
        size = Int((degrees * 1_000_000).rounded())
    }

    /// The shard of an item at `point`: `c<size>-<cell>`.
    public func shard(of point: GeoPoint) -> String { "c\(size)-\(grid.cell(of: point))" }

    /// The shard of `item`, as its id names it.
    public func shard(of item: IntelItem) -> String { Self.shard(ofID: item.id) ?? Self.named }

    /// The shard id `id` names: `i<shard>.<token>` names a cell shard; any other well-formed id
    /// (a named item's `n…`, an item stored before ids named shards) is in `named`. Nil when `id`
    /// cannot be an item's (it is then nobody's, and no lease is taken for it).
    public static func shard(ofID id: String) -> String? {
        guard let first = id.utf8.first else { return nil }
        guard first == UInt8(ascii: "i"), let dot = id.firstIndex(of: ".") else { return named }
        let shard = id[id.index(after: id.startIndex)..<dot]
        guard isCellShard(shard) else { return nil }
        return String(shard)
    }

    /// Whether `name` has the form of a cell shard (`c<size>-<cell>`).
    static func isCellShard(_ name: Substring) -> Bool {
        let parts = name.dropFirst().split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        return name.first == "c" && parts.count == 2 && Int(parts[0]) != nil && Int64(parts[1]) != nil
    }

    /// A new item's id in `shard`: the shard, then `token` (random).
    public static func id(in shard: String, token: String) -> String { "i\(shard).\(token)" }

    /// Whether `shard` is a cell of this grid (not of another size, and not `named`).
    public func isOnGrid(_ shard: String) -> Bool { shard.hasPrefix("c\(size)-") }

    /// Every shard that may hold an item inside `corridor`'s band (its cells, and `named`).
    public func shards(covering corridor: Corridor) -> [String] {
        grid.cells(covering: corridor).map { "c\(size)-\($0)" } + [Self.named]
    }
}
