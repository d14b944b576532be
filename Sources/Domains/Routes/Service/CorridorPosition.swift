import RoomLog

/// Where a corridor's reading of its shards' logs stands: for each shard it follows, the head of
/// that shard's log up to which the corridor made its pushes. Written with the corridor room's head
/// (`LoggedPush.position`: each push carries the position after the entry it came from), so a
/// corridor loaded on another node, or again, goes on from exactly the pushes made
/// (`CorridorHost.load`).
struct CorridorPosition: Equatable, Sendable {
    var shards: [String: RoomHead]

    init(_ shards: [String: RoomHead] = [:]) { self.shards = shards }

    /// As stored: `<shard> <epoch> <seq>` per shard, sorted, separated by `;` (shard names and
    /// epochs hold none of ` ;`).
    var text: String {
        shards.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.epoch) \($0.value.seq)" }.joined(separator: ";")
    }

    /// The position `text` wrote; nil for anything else (a position of another kind, or damaged).
    init?(text: String) {
        var shards: [String: RoomHead] = [:]
        for part in text.split(separator: ";", omittingEmptySubsequences: true) {
            let fields = part.split(separator: " ")
            guard fields.count == 3, let seq = UInt64(fields[2]) else { return nil }
            shards[String(fields[0])] = RoomHead(seq: seq, epoch: String(fields[1]))
        }
        self.shards = shards
    }
}
