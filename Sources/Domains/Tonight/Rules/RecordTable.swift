/// The catalog's records of one kind, each in a numbered slot found by its feed `ID` once: the
/// catalog's indexes hold slots (integers), not IDs, so keeping them in step with a feed of
/// 100,000 records hashes each ID once instead of a dozen times.
///
/// Each slot also has the record's row in the store, given with the slot: an ingest asks for the
/// row before it writes (`slot(for:)`), so the store needs no index on the ID and appends new
/// rows instead of inserting into an index at random places. A slot may be given before its
/// record arrives (an event naming a venue the feed has not given yet, or a write that failed):
/// it stays empty until then, and `count` and `values` leave it out.
public struct RecordTable<Record: Sendable>: Sendable {
    /// A record's number in this table: its index in the slot arrays.
    public typealias Slot = Int32

    private var slots: [String: Slot] = [:]
    private var ids: [String] = []
    private var records: [Record?] = []
    private var rows: [Int64] = []
    /// The row the next new ID gets: past every row given so far.
    private var nextRow: Int64 = 1
    /// Slots holding a record.
    public private(set) var count = 0

    public init() {}

    public subscript(id: String) -> Record? { slots[id].flatMap { records[Int($0)] } }
    public subscript(slot: Slot) -> Record? { records[Int(slot)] }

    /// The slot of `id`, if it has one.
    public func slot(of id: String) -> Slot? { slots[id] }
    /// The ID a slot was given for.
    public func id(at slot: Slot) -> String { ids[Int(slot)] }
    /// The store row of a slot.
    public func row(at slot: Slot) -> Int64 { rows[Int(slot)] }

    /// The slot of `id`, given one (with the next row) if it has none.
    public mutating func slot(for id: String) -> Slot {
        if let slot = slots[id] { return slot }
        return add(id, row: nextRow)
    }

    /// The slot of `id` as stored in `row` (a catalog loaded from the store).
    public mutating func slot(for id: String, row: Int64) -> Slot {
        if let slot = slots[id] { return slot }
        return add(id, row: row)
    }

    private mutating func add(_ id: String, row: Int64) -> Slot {
        let slot = Slot(ids.count)
        slots[id] = slot
        ids.append(id)
        records.append(nil)
        rows.append(row)
        nextRow = max(nextRow, row + 1)
        return slot
    }

    /// Puts `record` in `slot`; returns what it held.
    @discardableResult
    public mutating func set(_ record: Record, at slot: Slot) -> Record? {
        let old = records[Int(slot)]
        records[Int(slot)] = record
        if old == nil { count += 1 }
        return old
    }

    /// Room for `more` records (a feed's batch): the index by ID grows once instead of step by
    /// step. (The arrays grow by doubling on their own; reserving exactly would copy them whole
    /// batch after batch.)
    public mutating func reserveCapacity(adding more: Int) {
        slots.reserveCapacity(slots.count + more)
    }

    /// Every record held, in slot order.
    public var values: some Sequence<Record> { records.lazy.compactMap { $0 } }
}
