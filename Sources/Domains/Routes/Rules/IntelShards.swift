/// How the intel items are split into shards, each decided by one owner (the holder of its lease)
/// and written to one log (room `intel:<shard>`): an item at one place belongs to the cell of a
/// coarse grid its point falls in (cells are half-open, so an item on a border belongs to one);
/// a provider's named item (a transit alert at every stop of a line) to `named`, where a full
/// dataset can end the rest of its scope. A corridor follows the shards its band can reach, and
/// `named`. Pure value.
public struct IntelShards: Sendable, Equatable {
    /// The shard of every named item.
    public static let named = "named"
    public let grid: GeoGrid

    /// Cells of `degrees` of latitude (0.05°: about 5.5 km, some 36 shards over a city of 30 km).
    public init(degrees: Double = 0.05) { grid = GeoGrid(cellDegrees: degrees) }

    /// The shard of an item at `point`.
    public func shard(of point: GeoPoint) -> String { "c\(grid.cell(of: point))" }

    /// The shard of `item`: its point's cell, or `named` for a provider's named item.
    public func shard(of item: IntelItem) -> String { item.reference != nil ? Self.named : shard(of: item.point) }

    /// Every shard that may hold an item inside `corridor`'s band (its cells, and `named`).
    public func shards(covering corridor: Corridor) -> [String] {
        grid.cells(covering: corridor).map { "c\($0)" } + [Self.named]
    }
}
