import Foundation
import Storage

/// The room log's tables. `room_head` holds each room's last `seq` and its epoch (kept for good:
/// a room's position survives its pushes' retention); `room_log` holds the pushes themselves for
/// a while (`RoomLogRetention`).
///
/// On PostgreSQL `room_log` is keyed by room and seq and partitioned by time (`at`,
/// `partitionSeconds` wide), so retention drops whole partitions instead of deleting rows and
/// vacuuming after them; its key includes `at` as PostgreSQL requires of a partitioned table's
/// key (a room's `seq`s are unique anyway: `room_head` hands each out once).
///
/// On SQLite (since `rooms.v3`) `room_log` is kept in the order it is written, a row id that
/// never comes back (`AUTOINCREMENT`), with an index on `at`; each row names its room's push
/// before it (`prev`) and `room_head.last` names the room's newest, so a room is read back along
/// that chain. SQLite writes every page a commit touches whole to its WAL: a change reaching
/// hundreds of rooms then dirties a few pages at the log's end, where a table keyed by room
/// dirtied one per room (see `RoomLogRows.append`). PostgreSQL logs rows, not pages, and keeps
/// the keyed table.
public enum RoomLogSchema {
    /// The width of one PostgreSQL partition of `room_log`, in seconds.
    public static let partitionSeconds = 300.0

    public static func migrations(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("rooms.v1") { db in
            try db.execute(sql: "CREATE TABLE room_head (room TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL, epoch TEXT NOT NULL) WITHOUT ROWID")
            switch db.dialect {
            case .sqlite:
                try db.execute(sql: """
                    CREATE TABLE room_log (room TEXT NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, payload BLOB NOT NULL,
                                           translated BLOB, PRIMARY KEY (room, seq)) WITHOUT ROWID;
                    CREATE INDEX room_log_at ON room_log (at)
                    """)
            case .postgres:
                try db.execute(sql: """
                    CREATE TABLE room_log (room TEXT NOT NULL, seq INTEGER NOT NULL, at REAL NOT NULL, payload BLOB NOT NULL,
                                           translated BLOB, PRIMARY KEY (room, seq, at)) PARTITION BY RANGE (at)
                    """)
                try ensurePartitions(around: Date().timeIntervalSince1970, ahead: 3600, db)
            }
        }
        migrator.registerMigration("rooms.v2") { db in
            guard db.dialect == .postgres else { return }
            // The head's move, checked where it happens: a writer need not wait for the UPDATE's
            // row count (its change's statements go to PostgreSQL without waiting, see
            // `SQLDatabase`), the statement fails instead, with SQLSTATE `fencedState`.
            try db.execute(sql: """
                CREATE OR REPLACE FUNCTION hubbub_room_advance(r TEXT, from_seq BIGINT, ep TEXT, to_seq BIGINT) RETURNS INTEGER
                LANGUAGE plpgsql AS '
                BEGIN
                    UPDATE room_head SET seq = to_seq WHERE room = r AND seq = from_seq AND epoch = ep;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION ''room % moved on from seq % in epoch %: its writer is stale'', r, from_seq, ep
                            USING ERRCODE = ''\(fencedState)'';
                    END IF;
                    RETURN 1;
                END'
                """)
        }
        migrator.registerMigration("rooms.v3") { db in
            guard db.dialect == .sqlite else { return }
            // The log kept so far, room by room: each room's rows get consecutive ids, so a row's
            // `prev` is the one before it when that is the same room's previous seq.
            try db.execute(sql: """
                CREATE TABLE room_log_chained (id INTEGER PRIMARY KEY AUTOINCREMENT, room TEXT NOT NULL, seq INTEGER NOT NULL,
                                               prev INTEGER, at REAL NOT NULL, payload BLOB NOT NULL, translated BLOB);
                INSERT INTO room_log_chained (room, seq, at, payload, translated)
                    SELECT room, seq, at, payload, translated FROM room_log ORDER BY room, seq;
                UPDATE room_log_chained SET prev = id - 1 WHERE EXISTS (
                    SELECT 1 FROM room_log_chained p WHERE p.id = room_log_chained.id - 1
                    AND p.room = room_log_chained.room AND p.seq = room_log_chained.seq - 1);
                ALTER TABLE room_head ADD COLUMN last INTEGER;
                UPDATE room_head SET last = m.id FROM (SELECT room, max(id) AS id FROM room_log_chained GROUP BY room) AS m
                    WHERE m.room = room_head.room;
                DROP TABLE room_log;
                ALTER TABLE room_log_chained RENAME TO room_log;
                CREATE INDEX room_log_at ON room_log (at)
                """)
        }
        manyRoomsMigration(&migrator)
        roomByRoomMigration(&migrator)
        positionMigration(&migrator)
        withoutPositionMigration(&migrator)
    }

    /// `room_head.position` goes: corridors, the only rooms made from other logs, are no longer on
    /// the room log (each node makes its own, `RoomPlacement.local`). PostgreSQL's head moves go
    /// back to `rooms.v5`'s (the four-argument `hubbub_room_advance` of `rooms.v1` never left).
    static func withoutPositionMigration(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("rooms.v7") { db in
            if db.dialect == .postgres {
                try db.execute(sql: "DROP FUNCTION IF EXISTS hubbub_room_advance(TEXT, BIGINT, TEXT, BIGINT, TEXT)")
                try db.execute(sql: roomsAdvanceByKey)
            }
            try db.execute(sql: "ALTER TABLE room_head DROP COLUMN position")
        }
    }

    /// `room_head.position`: where a room made from other logs (a corridor, from its intel shards'
    /// logs) stands in them, written with its head by the statement that moves the head, so a
    /// room's pushes and its position never part (dropped by `rooms.v7`).
    static func positionMigration(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("rooms.v6") { db in
            try db.execute(sql: "ALTER TABLE room_head ADD COLUMN position TEXT")
            guard db.dialect == .postgres else { return }
            try db.execute(sql: """
                CREATE OR REPLACE FUNCTION hubbub_room_advance(r TEXT, from_seq BIGINT, ep TEXT, to_seq BIGINT, pos TEXT) RETURNS INTEGER
                LANGUAGE plpgsql AS '
                BEGIN
                    UPDATE room_head SET seq = to_seq, position = COALESCE(pos, position) WHERE room = r AND seq = from_seq AND epoch = ep;
                    IF NOT FOUND THEN
                        RAISE EXCEPTION ''room % moved on from seq % in epoch %: its writer is stale'', r, from_seq, ep
                            USING ERRCODE = ''\(fencedState)'';
                    END IF;
                    RETURN 1;
                END'
                """)
            try db.execute(sql: """
                CREATE OR REPLACE FUNCTION hubbub_rooms_advance(spec TEXT) RETURNS INTEGER
                LANGUAGE plpgsql AS '
                DECLARE
                    moved INTEGER := 0;
                    m RECORD;
                BEGIN
                    FOR m IN SELECT * FROM jsonb_to_recordset(spec::jsonb) AS x(r TEXT, f BIGINT, e TEXT, t BIGINT, p TEXT) LOOP
                        UPDATE room_head SET seq = m.t, position = COALESCE(m.p, position) WHERE room = m.r AND seq = m.f AND epoch = m.e;
                        IF NOT FOUND THEN
                            RAISE EXCEPTION ''room % moved on from seq % in epoch %: its writer is stale'', m.r, m.f, m.e
                                USING ERRCODE = ''\(fencedState)'';
                        END IF;
                        moved := moved + 1;
                    END LOOP;
                    RETURN moved;
                END'
                """)
        }
    }

    /// PostgreSQL: `hubbub_rooms_advance` moves each head by its key, one room after another.
    /// Its join of the moves with `room_head` was planned as a hash join over the whole table
    /// (a set-returning function is guessed at 100 rows): two scans of every room's head per
    /// commit, 45 million rows read in a three-node rush hour of 6,000 corridors, PostgreSQL's
    /// largest cost. The same fence: the first room whose head is not where its writer believed
    /// fails the whole change, named.
    static func roomByRoomMigration(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("rooms.v5") { db in
            guard db.dialect == .postgres else { return }
            try db.execute(sql: roomsAdvanceByKey)
        }
    }

    /// `hubbub_rooms_advance` head by head, by key (`rooms.v5`, and again from `rooms.v7`).
    static let roomsAdvanceByKey = """
        CREATE OR REPLACE FUNCTION hubbub_rooms_advance(spec TEXT) RETURNS INTEGER
        LANGUAGE plpgsql AS '
        DECLARE
            moved INTEGER := 0;
            m RECORD;
        BEGIN
            FOR m IN SELECT * FROM jsonb_to_recordset(spec::jsonb) AS x(r TEXT, f BIGINT, e TEXT, t BIGINT) LOOP
                UPDATE room_head SET seq = m.t WHERE room = m.r AND seq = m.f AND epoch = m.e;
                IF NOT FOUND THEN
                    RAISE EXCEPTION ''room % moved on from seq % in epoch %: its writer is stale'', m.r, m.f, m.e
                        USING ERRCODE = ''\(fencedState)'';
                END IF;
                moved := moved + 1;
            END LOOP;
            RETURN moved;
        END'
        """

    /// PostgreSQL: many rooms' heads moved in one statement (`RoomLogRows.append(rooms:)`), each
    /// fenced as `hubbub_room_advance` fences one; the first stale room is named in the error.
    static func manyRoomsMigration(_ migrator: inout SQLMigrations) {
        migrator.registerMigration("rooms.v4") { db in
            guard db.dialect == .postgres else { return }
            try db.execute(sql: """
                CREATE OR REPLACE FUNCTION hubbub_rooms_advance(spec TEXT) RETURNS INTEGER
                LANGUAGE plpgsql AS '
                DECLARE
                    moved INTEGER;
                    stale RECORD;
                BEGIN
                    SELECT m.r, m.f, m.e INTO stale FROM jsonb_to_recordset(spec::jsonb) AS m(r TEXT, f BIGINT, e TEXT, t BIGINT)
                        LEFT JOIN room_head h ON h.room = m.r AND h.seq = m.f AND h.epoch = m.e
                        WHERE h.room IS NULL LIMIT 1;
                    IF FOUND THEN
                        RAISE EXCEPTION ''room % moved on from seq % in epoch %: its writer is stale'', stale.r, stale.f, stale.e
                            USING ERRCODE = ''\(fencedState)'';
                    END IF;
                    UPDATE room_head h SET seq = m.t
                        FROM jsonb_to_recordset(spec::jsonb) AS m(r TEXT, f BIGINT, e TEXT, t BIGINT)
                        WHERE h.room = m.r AND h.seq = m.f AND h.epoch = m.e;
                    GET DIAGNOSTICS moved = ROW_COUNT;
                    IF moved <> jsonb_array_length(spec::jsonb) THEN
                        RAISE EXCEPTION ''% of % rooms moved on meanwhile: their writer is stale'', jsonb_array_length(spec::jsonb) - moved,
                            jsonb_array_length(spec::jsonb) USING ERRCODE = ''\(fencedState)'';
                    END IF;
                    RETURN moved;
                END'
                """)
        }
    }

    /// The SQLSTATE `hubbub_room_advance` fails with when the head is not where its writer believed.
    public static let fencedState = "HB409"

    /// The partition holding pushes made at `at`.
    static func partition(of at: Double) -> (name: String, from: Int64, to: Int64) {
        let from = Int64((at / partitionSeconds).rounded(.down) * partitionSeconds)
        return ("room_log_p\(from)", from, from + Int64(partitionSeconds))
    }

    /// Creates the partitions from shortly before `now` to `ahead` seconds after it (PostgreSQL;
    /// nothing on SQLite). Nodes doing it together take turns (an advisory lock in the transaction).
    public static func ensurePartitions(around now: Double, ahead: Double, _ db: any SQLDatabase) throws {
        guard db.dialect == .postgres else { return }
        try db.execute(sql: "SELECT pg_advisory_xact_lock(72011)")
        var at = now - partitionSeconds
        while at <= now + ahead {
            let p = partition(of: at)
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(p.name) PARTITION OF room_log FOR VALUES FROM (\(p.from)) TO (\(p.to))")
            at += partitionSeconds
        }
    }

    /// Drops the partitions whose pushes are all older than `cutoff` (PostgreSQL); on SQLite,
    /// deletes those rows. Returns how many partitions (or rows) went.
    @discardableResult
    public static func dropBefore(_ cutoff: Double, _ db: any SQLDatabase) throws -> Int {
        guard db.dialect == .postgres else { return try RoomLogRows.deleteBefore(cutoff, db) }
        try db.execute(sql: "SELECT pg_advisory_xact_lock(72011)")
        let names: [String] = try db.fetchAll(sql: """
            SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'room_log'
            """).map { $0["name"] }
        var dropped = 0
        for name in names {
            guard name.hasPrefix("room_log_p"), let from = Double(name.dropFirst("room_log_p".count)),
                  from + partitionSeconds <= cutoff else { continue }
            try db.execute(sql: "DROP TABLE IF EXISTS \(name)")
            dropped += 1
        }
        return dropped
    }
}
