import RoomLog

/// Where a corridor's reading of its shards' logs stands: for each shard it follows, the head of
/// that shard's log up to which the corridor made its pushes. Written with the corridor room's head
/// (`LoggedPush.position`: each push carries the position after the entry it came from), so a
/// corridor loaded on another node, or again, goes on from exactly the pushes made
/// (`CorridorHost.load`).
struct CorridorPosition: Equatable, Sendable {
    private(set) var shards: [String: RoomHead]
    /// `shards`' names, sorted: `text` is made at every step of every corridor (a post near a hub
    /// reaches hundreds), and sorting the names and interpolating each part there cost 2.8 % of a
    /// node's CPU in rush hour (perf, 2026-11-29).
    private var order: [String]

    init(_ shards: [String: RoomHead] = [:]) {
        self.shards = shards
        order = shards.keys.sorted()
    }

    /// Where the corridor stands in `shard`'s log.
    subscript(shard shard: String) -> RoomHead? { shards[shard] }

    /// The corridor has taken `shard`'s log up to `head`.
    mutating func move(_ shard: String, to head: RoomHead) {
        if shards.updateValue(head, forKey: shard) == nil {
            order.insert(shard, at: order.firstIndex { $0 > shard } ?? order.endIndex)
        }
    }

    /// As stored: `<shard> <epoch> <seq>` per shard, sorted, separated by `;` (shard names and
    /// epochs hold none of ` ;`).
    var text: String {
        var out = ""
        out.reserveCapacity(order.count * 40)
        for name in order {
            guard let head = shards[name] else { continue }
            if !out.isEmpty { out += ";" }
            out += name
            out += " "
            out += head.epoch
            out += " "
            out += String(head.seq)
        }
        return out
    }

    /// The position `text` wrote; nil for anything else (a position of another kind, or damaged).
    init?(text: String) {
        var shards: [String: RoomHead] = [:]
        for part in text.split(separator: ";", omittingEmptySubsequences: true) {
            let fields = part.split(separator: " ")
            guard fields.count == 3, let seq = UInt64(fields[2]) else { return nil }
            shards[String(fields[0])] = RoomHead(seq: seq, epoch: String(fields[1]))
        }
        self.init(shards)
    }
}
