import Foundation
import HubbubCrypto
import Realtime
import Storage
import WebSocket

/// Why a push could not be written to its room's log.
public enum RoomLogError: Error, Equatable, CustomStringConvertible {
    /// The room's head is not where its writer believed (another writer, on this node or another,
    /// wrote the room since this one loaded it, or the epoch changed): this writer's memory is
    /// stale and must be reloaded. Its change is rolled back with the push.
    case fenced(room: String, expected: RoomHead)

    public var description: String {
        switch self {
        case .fenced(let room, let expected):
            "room \(room) moved on from seq \(expected.seq) in epoch \(expected.epoch): its writer is stale"
        }
    }
}

/// The room log's rows (tables `room_head` and `room_log`, see `RoomLogSchema`): each room's head
/// and its recent pushes. SQL over `SQLDatabase`; where the engines keep the log differently
/// (SQLite in write order, chained per room; PostgreSQL keyed by room), `append` and `read` say so.
public enum RoomLogRows {
    /// The room's head, created (seq 0, a fresh epoch) if the room has none. Inside a write.
    public static func head(of room: String, _ db: any SQLDatabase) throws -> RoomHead {
        try db.execute(sql: "INSERT OR IGNORE INTO room_head (room, seq, epoch) VALUES (?, 0, ?)",
                       arguments: [room, Digest.randomToken(length: 8)])
        guard let row = try db.fetchOne(sql: "SELECT seq, epoch FROM room_head WHERE room = ?", arguments: [room]) else {
            throw StoreError.closed
        }
        return RoomHead(seq: UInt64(row["seq"] as Int64), epoch: row["epoch"])
    }

    /// A new epoch for the room, its seq carried on: clients' positions in the old one mean
    /// nothing any more (after a writer's change failed once it had staged pushes). Inside a write.
    public static func renewEpoch(of room: String, _ db: any SQLDatabase) throws -> RoomHead {
        _ = try head(of: room, db)
        try db.execute(sql: "UPDATE room_head SET epoch = ? WHERE room = ?", arguments: [Digest.randomToken(length: 8), room])
        return try head(of: room, db)
    }

    /// The heads of `rooms` that have one. Read-only.
    public static func heads(of rooms: [String], _ db: any SQLDatabase) throws -> [String: RoomHead] {
        var out: [String: RoomHead] = [:]
        for chunk in stride(from: 0, to: rooms.count, by: 500).map({ Array(rooms[$0..<min($0 + 500, rooms.count)]) }) {
            let rows = try db.fetchAll(sql: "SELECT room, seq, epoch FROM room_head WHERE room IN (\(sqlPlaceholders(count: chunk.count)))",
                                       arguments: SQLArguments(chunk))
            for row in rows { out[row["room"]] = RoomHead(seq: UInt64(row["seq"] as Int64), epoch: row["epoch"]) }
        }
        return out
    }

    /// Writes `pushes` (one room's, in seq order, continuing its head) in the current transaction
    /// and moves the head on. Fails if the head is not at the first push's seq − 1 in its epoch:
    /// the caller's savepoint then undoes its change as well. On SQLite it throws `fenced` here;
    /// on PostgreSQL the check runs in the database (`hubbub_room_advance`), so the change does not
    /// wait for it, and the change fails with SQLSTATE `RoomLogSchema.fencedState` when its
    /// statements are answered.
    public static func append(_ pushes: [LoggedPush], _ db: any SQLDatabase) throws {
        try append(rooms: [pushes], db)
    }

    /// `append` for many rooms' pushes at once (each list one room's, as `append` takes them, each
    /// room once): a change that reaches hundreds of rooms (an intel item in every corridor it lies
    /// in). On PostgreSQL its heads move in one statement (`hubbub_rooms_advance`), its rows go in
    /// multi-row inserts and its notifications are packed into as few as fit, where a statement
    /// per room (each planned anew inside the group's `DO` block) cost milliseconds per change.
    public static func append(rooms: [[LoggedPush]], _ db: any SQLDatabase) throws {
        let rooms = rooms.filter { !$0.isEmpty }
        guard !rooms.isEmpty else { return }
        for pushes in rooms {
            precondition(pushes.allSatisfy { $0.room == pushes[0].room && $0.epoch == pushes[0].epoch }, "one room's pushes per list")
        }
        switch db.dialect {
        case .sqlite:
            for pushes in rooms { try appendChained(pushes, after: RoomHead(seq: pushes[0].seq - 1, epoch: pushes[0].epoch), db) }
        case .postgres:
            try advance(rooms, db)
            let rows = rooms.flatMap { $0 }
            for start in stride(from: 0, to: rows.count, by: insertChunk) {
                let chunk = rows[start..<min(start + insertChunk, rows.count)]
                var arguments: [SQLValue] = []
                arguments.reserveCapacity(chunk.count * 5)
                for push in chunk {
                    arguments += [.text(push.room), .integer(Int64(push.seq)), .real(push.at), .blob(push.message.payload),
                                  translatedColumn(push)]
                }
                let values = Array(repeating: "(?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
                try db.execute(sql: "INSERT INTO room_log (room, seq, at, payload, translated) VALUES \(values)", arguments: SQLArguments(arguments))
            }
            try notify(rooms: rooms, db)
        }
    }

    /// Rows per multi-row insert on PostgreSQL (five values each).
    static let insertChunk = 200

    /// PostgreSQL: moves each room's head from its first push's seq − 1 to its last, fenced as
    /// `append` says: one room through `hubbub_room_advance`, several through
    /// `hubbub_rooms_advance` with their moves as JSON (`[{"r", "f", "e", "t"}]`).
    private static func advance(_ rooms: [[LoggedPush]], _ db: any SQLDatabase) throws {
        if rooms.count == 1, let first = rooms[0].first, let last = rooms[0].last {
            try db.execute(sql: "SELECT hubbub_room_advance(?, ?, ?, ?)",
                           arguments: [first.room, Int64(first.seq - 1), first.epoch, Int64(last.seq)])
            return
        }
        let moves: JSON = .array(rooms.map { pushes in
            .object([("r", .string(pushes[0].room)), ("f", .int(Int(pushes[0].seq - 1))), ("e", .string(pushes[0].epoch)),
                     ("t", .int(Int(pushes[pushes.count - 1].seq)))])
        })
        try db.execute(sql: "SELECT hubbub_rooms_advance(?)", arguments: [moves.encoded])
    }

    /// SQLite's append: the rows go to the end of the log (an ever-growing row id), each naming
    /// the room's push before it (`prev`), and the head names the last (`last`). A change that
    /// reaches hundreds of rooms (an intel item in every corridor it lies in) so writes a few
    /// pages at the log's end, where rows keyed by room would dirty one page per room, each
    /// written whole to the WAL and again at the checkpoint (rush hour wrote 6 MB per post).
    private static func appendChained(_ pushes: [LoggedPush], after expected: RoomHead, _ db: any SQLDatabase) throws {
        let room = pushes[0].room
        // The first row reads its `prev` from the head inside its own insert, and the head's update
        // is the fence (it moves only a head still at `expected`): two statements a room where a
        // read of the head before them made three (that read was 3 % of a node's CPU in rush hour,
        // perf with DWARF stacks, 2026-11-29). A fenced head undoes the rows with the savepoint.
        var previous: Int64?
        for push in pushes {
            let values: [SQLValue] = [.text(room), .integer(Int64(push.seq)), .real(push.at), .blob(push.message.payload), translatedColumn(push)]
            if let before = previous {
                previous = try db.insert(sql: "INSERT INTO room_log (room, seq, at, payload, translated, prev) VALUES (?, ?, ?, ?, ?, ?)",
                                         arguments: SQLArguments(values + [.integer(before)]), returning: "id")
            } else {
                previous = try db.insert(sql: """
                    INSERT INTO room_log (room, seq, at, payload, translated, prev)
                    VALUES (?, ?, ?, ?, ?, (SELECT last FROM room_head WHERE room = ?))
                    """, arguments: SQLArguments(values + [.text(room)]), returning: "id")
            }
        }
        let moved = try db.changes(sql: "UPDATE room_head SET seq = ?, last = ? WHERE room = ? AND seq = ? AND epoch = ?",
                                   arguments: [Int64(pushes[pushes.count - 1].seq), previous, room, Int64(expected.seq), expected.epoch])
        guard moved == 1 else { throw RoomLogError.fenced(room: room, expected: expected) }
    }

    /// `room_log.translated`: the push's versions in other languages, or NULL when it has none.
    private static func translatedColumn(_ push: LoggedPush) -> SQLValue {
        push.translated.isEmpty ? .null : .blob(encode(push.translated))
    }

    /// Tells the other nodes of `pushes` (one room's, in seq order) once (and only if) the current
    /// transaction commits; nothing on SQLite (one node). `append` does it; a domain that logs a
    /// room's pushes in a table of its own (`RoomDirectory.source`) calls it itself.
    public static func notify(_ pushes: [LoggedPush], _ db: any SQLDatabase) throws {
        try notify(rooms: [pushes], db)
    }

    /// `notify` for many rooms' pushes, packed into as few notifications as fit.
    static func notify(rooms: [[LoggedPush]], _ db: any SQLDatabase) throws {
        guard db.dialect == .postgres else { return }
        for text in RoomNotification.packed(rooms.compactMap(RoomNotification.init)) {
            try db.execute(sql: "SELECT pg_notify(?, ?)", arguments: [RoomNotification.channel, text])
        }
    }

    /// The room's pushes after `seq`, oldest first, at most `limit`. Read-only.
    public static func read(_ room: String, epoch: String, after seq: UInt64, limit: Int, _ db: any SQLDatabase) throws -> [LoggedPush] {
        let rows: [SQLRow]
        switch db.dialect {
        case .sqlite:
            // Back from the head along `prev`, down to the push after `seq` (or to the first a
            // retention removed); each step a lookup by row id. Seqs fall strictly along the
            // chain and every row is the room's, so a damaged link ends the walk, never loops.
            rows = try db.fetchAll(sql: """
                WITH RECURSIVE chain(id, seq, prev) AS (
                    SELECT l.id, l.seq, l.prev FROM room_head h JOIN room_log l ON l.id = h.last
                    WHERE h.room = ? AND l.room = h.room AND l.seq > ?
                    UNION ALL
                    SELECT l.id, l.seq, l.prev FROM chain c JOIN room_log l ON l.id = c.prev
                    WHERE l.room = ? AND l.seq < c.seq AND l.seq > ?)
                SELECT l.seq, l.at, l.payload, l.translated FROM chain c JOIN room_log l ON l.id = c.id ORDER BY l.seq LIMIT ?
                """, arguments: [room, Int64(seq), room, Int64(seq), limit])
        case .postgres:
            rows = try db.fetchAll(sql: "SELECT seq, at, payload, translated FROM room_log WHERE room = ? AND seq > ? ORDER BY seq LIMIT ?",
                                   arguments: [room, Int64(seq), limit])
        }
        return rows.map { row in
            let payload: Data = row["payload"]
            let translated: Data? = row["translated"]
            return LoggedPush(room: room, epoch: epoch, seq: UInt64(row["seq"] as Int64), at: row["at"],
                              message: OutboundMessage(kind: .text, payload: [UInt8](payload)),
                              translated: translated.map { decode([UInt8]($0)) } ?? [:])
        }
    }

    /// Deletes pushes made before `cutoff` (SQLite; PostgreSQL drops whole partitions instead).
    public static func deleteBefore(_ cutoff: Double, _ db: any SQLDatabase) throws -> Int {
        try db.changes(sql: "DELETE FROM room_log WHERE at < ?", arguments: [cutoff])
    }

    // Translations as tag length (1 byte), tag, payload length (4 bytes, big-endian), payload.
    static func encode(_ translated: [String: OutboundMessage]) -> [UInt8] {
        var out: [UInt8] = []
        for (tag, message) in translated.sorted(by: { $0.key < $1.key }) {
            let t = Array(tag.utf8.prefix(255))
            out.append(UInt8(t.count))
            out += t
            let n = UInt32(message.payload.count)
            out += [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
            out += message.payload
        }
        return out
    }

    static func decode(_ bytes: [UInt8]) -> [String: OutboundMessage] {
        var out: [String: OutboundMessage] = [:]
        var i = 0
        while i < bytes.count {
            let tagLength = Int(bytes[i])
            guard i + 1 + tagLength + 4 <= bytes.count else { break }
            let tag = String(decoding: bytes[(i + 1)..<(i + 1 + tagLength)], as: UTF8.self)
            i += 1 + tagLength
            let n = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            i += 4
            guard i + n <= bytes.count else { break }
            out[tag] = OutboundMessage(kind: .text, payload: Array(bytes[i..<(i + n)]))
            i += n
        }
        return out
    }
}
