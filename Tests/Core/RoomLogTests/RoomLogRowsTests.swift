import Foundation
import HubbubTestSupport
import Realtime
import RoomLog
import Storage
import WebSocket
import XCTest

/// The room log's rows on a real SQLite store in a temporary directory.
final class RoomLogRowsTests: XCTestCase {
    private var temporary: TemporaryStore!
    private var store: Store!

    override func setUpWithError() throws {
        temporary = try temporaryStore("hubbub-roomlog", migrations: .of(RoomLogSchema.migrations))
        store = temporary.store
    }

    override func tearDown() {
        store = nil
        temporary = nil
    }

    // MARK: Helpers

    func head(_ room: String) async throws -> RoomHead {
        try await store.write { try RoomLogRows.head(of: room, $0) }
    }

    func heads(_ rooms: [String]) async throws -> [String: RoomHead] {
        try await store.read { try RoomLogRows.heads(of: rooms, $0) }
    }

    func append(_ pushes: [LoggedPush]) async throws {
        try await store.write { try RoomLogRows.append(pushes, $0) }
    }

    func read(_ room: String, epoch: String, after seq: UInt64 = 0, limit: Int = 100) async throws -> [LoggedPush] {
        try await store.read { try RoomLogRows.read(room, epoch: epoch, after: seq, limit: limit, $0) }
    }

    func rowCount() async throws -> Int {
        try await store.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM room_log") ?? -1 }
    }

    /// `count` pushes staged after `head`, made at `at`, `at + 1`...
    func staged(_ room: String, after head: RoomHead, count: Int, at: Double = 1000) -> [LoggedPush] {
        var staged = StagedRoom(name: room, head: head)
        for i in 0..<count { staged.stage(FeedEvent.said, data: .object([("i", .int(i))]), at: at + Double(i)) }
        return staged.take()
    }

    func assertFenced(_ room: String, expected: RoomHead, file: StaticString = #filePath, line: UInt = #line,
                      _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("not fenced", file: file, line: line)
        } catch {
            XCTAssertEqual(error as? RoomLogError, .fenced(room: room, expected: expected), "\(error)", file: file, line: line)
        }
    }

    // MARK: Heads

    func testHeadIsCreatedAtZeroWithAnEpochAndKept() async throws {
        let first = try await head("venue:a")
        XCTAssertEqual(first.seq, 0)
        XCTAssertFalse(first.epoch.isEmpty)
        let again = try await head("venue:a")
        XCTAssertEqual(again, first, "the same head on a second call")
        let other = try await head("venue:b")
        XCTAssertEqual(other.seq, 0)
        XCTAssertNotEqual(other.epoch, first.epoch, "each room gets its own epoch")
        let found = try await heads(["venue:a", "venue:b", "venue:none"])
        XCTAssertEqual(found, ["venue:a": first, "venue:b": other])
        let none = try await heads([])
        XCTAssertEqual(none, [:])
    }

    func testHeadsOfManyRooms() async throws {
        let names = (0..<1203).map { "room:\($0)" }
        try await store.write { db in for name in names { _ = try RoomLogRows.head(of: name, db) } }
        let found = try await heads(names + ["room:missing"])
        XCTAssertEqual(found.count, names.count)
        XCTAssertEqual(Set(found.keys), Set(names))
        XCTAssertTrue(found.values.allSatisfy { $0.seq == 0 })
    }

    // MARK: Appending and reading

    func testAppendMovesTheHeadAndReadReturnsThePushes() async throws {
        let room = "venue:a"
        let start = try await head(room)
        var writer = StagedRoom(name: room, head: start)
        writer.stage(FeedEvent.said, data: .object([("text", .string("one"))]), at: 1000.25)
        writer.stage(FeedEvent.said, languages: ["fr", "de-CH"],
                     data: { tag in .object([("text", .string(tag.map { "two in \($0)" } ?? "two"))]) }, at: 1001.5)
        writer.stage(FeedEvent.said, data: .object([("text", .string("three é ✓"))]), at: 1002)
        let pushes = writer.take()
        try await append(pushes)

        let moved = try await head(room)
        XCTAssertEqual(moved, RoomHead(seq: 3, epoch: start.epoch))
        let got1 = try await heads([room])
        XCTAssertEqual(got1, [room: moved])

        let rows = try await read(room, epoch: start.epoch)
        XCTAssertEqual(rows.map(\.seq), [1, 2, 3])
        for (got, wrote) in zip(rows, pushes) {
            XCTAssertEqual(got.room, room)
            XCTAssertEqual(got.epoch, start.epoch)
            XCTAssertEqual(got.at, wrote.at)
            XCTAssertEqual(got.message.kind, .text)
            XCTAssertEqual(got.message.payload, wrote.message.payload, "payload bytes of \(wrote.seq)")
            XCTAssertEqual(Set(got.translated.keys), Set(wrote.translated.keys))
            for (tag, message) in wrote.translated {
                XCTAssertEqual(got.translated[tag]?.payload, message.payload, "\(tag) of \(wrote.seq)")
            }
        }
        XCTAssertEqual(Set(rows[1].translated.keys), ["fr", "de-CH"])
        XCTAssertEqual(String(decoding: rows[1].translated["de-CH"]!.payload, as: UTF8.self),
                       Envelope.push(room: room, seq: 2, epoch: start.epoch, event: "test.said", data: .object([("text", .string("two in de-CH"))])))
        XCTAssertTrue(rows[0].translated.isEmpty)

        // After a seq, with a limit.
        let later = try await read(room, epoch: start.epoch, after: 1, limit: 1)
        XCTAssertEqual(later.map(\.seq), [2])
        let none = try await read(room, epoch: start.epoch, after: 3)
        XCTAssertTrue(none.isEmpty)
        let otherRoom = try await read("venue:b", epoch: start.epoch)
        XCTAssertTrue(otherRoom.isEmpty)

        // The same through the feed's source.
        let source = StoreRoomLog(store: store)
        let got2 = try await source.heads(of: [room, "venue:b"])
        XCTAssertEqual(got2, [room: moved])
        let viaSource = try await source.read(room, epoch: start.epoch, after: 0, limit: 10)
        XCTAssertEqual(viaSource.map(\.message.payload), pushes.map(\.message.payload))

        // A second append continues.
        try await append(staged(room, after: moved, count: 2))
        let got3 = try await head(room)
        XCTAssertEqual(got3, RoomHead(seq: 5, epoch: start.epoch))
        let got4 = try await read(room, epoch: start.epoch).map(\.seq)
        XCTAssertEqual(got4, [1, 2, 3, 4, 5])
    }

    func testAppendingNothingDoesNothing() async throws {
        let start = try await head("venue:a")
        try await append([])
        let got5 = try await head("venue:a")
        XCTAssertEqual(got5, start)
        let got6 = try await rowCount()
        XCTAssertEqual(got6, 0)
    }

    func testAppendWithAWrongSeqIsFencedAndWritesNothing() async throws {
        let room = "venue:a"
        let start = try await head(room)
        // A writer that believes the head is at 1 (it is at 0).
        let ahead = staged(room, after: RoomHead(seq: 1, epoch: start.epoch), count: 2)
        await assertFenced(room, expected: RoomHead(seq: 1, epoch: start.epoch)) { try await self.append(ahead) }
        let got7 = try await head(room)
        XCTAssertEqual(got7, start)
        let got8 = try await rowCount()
        XCTAssertEqual(got8, 0)

        // A stale writer: another wrote 1...2 since it loaded the head at 0.
        try await append(staged(room, after: start, count: 2))
        let stale = staged(room, after: start, count: 1)
        await assertFenced(room, expected: start) { try await self.append(stale) }
        let got9 = try await head(room)
        XCTAssertEqual(got9, RoomHead(seq: 2, epoch: start.epoch))
        let got10 = try await rowCount()
        XCTAssertEqual(got10, 2)
        let rows = try await read(room, epoch: start.epoch)
        XCTAssertEqual(rows.map(\.seq), [1, 2])
    }

    func testAppendToARoomWithoutAHeadIsFenced() async throws {
        let pushes = staged("venue:new", after: RoomHead(seq: 0, epoch: "whatever"), count: 1)
        await assertFenced("venue:new", expected: RoomHead(seq: 0, epoch: "whatever")) { try await self.append(pushes) }
        let got11 = try await rowCount()
        XCTAssertEqual(got11, 0)
        let got12 = try await heads(["venue:new"])
        XCTAssertEqual(got12, [:])
    }

    func testAppendWithAWrongEpochIsFencedAndWritesNothing() async throws {
        let room = "venue:a"
        let start = try await head(room)
        let wrong = RoomHead(seq: 0, epoch: start.epoch + "x")
        let pushes = staged(room, after: wrong, count: 2)
        await assertFenced(room, expected: wrong) { try await self.append(pushes) }
        let got13 = try await head(room)
        XCTAssertEqual(got13, start)
        let got14 = try await rowCount()
        XCTAssertEqual(got14, 0)
    }

    func testAFencedAppendRollsBackItsWholeChange() async throws {
        let room = "venue:a"
        let start = try await head(room)
        let good = staged(room, after: start, count: 2)
        let bad = staged("venue:b", after: RoomHead(seq: 4, epoch: "nope"), count: 1)
        do {
            try await store.write { db in
                _ = try RoomLogRows.head(of: "venue:b", db)
                try RoomLogRows.append(good, db)
                try RoomLogRows.append(bad, db)
            }
            XCTFail("not fenced")
        } catch {
            XCTAssertEqual(error as? RoomLogError, .fenced(room: "venue:b", expected: RoomHead(seq: 4, epoch: "nope")))
        }
        let got15 = try await head(room)
        XCTAssertEqual(got15, start, "the change's first append is undone with it")
        let got16 = try await rowCount()
        XCTAssertEqual(got16, 0)
        let got17 = try await heads(["venue:b"])
        XCTAssertEqual(got17, [:])
    }

    func testRoomsWrittenInTurnAreEachReadBackWhole() async throws {
        // Changes that reach several rooms at once (a corridor item): each room's pushes are
        // found again among the others', in order, after any seq.
        let names = ["route:a", "route:b", "route:c"]
        var writers: [String: StagedRoom] = [:]
        for name in names { writers[name] = StagedRoom(name: name, head: try await head(name)) }
        for step in 0..<20 {
            var change: [[LoggedPush]] = []
            for name in names where step % (names.firstIndex(of: name)! + 1) == 0 {
                writers[name]!.stage(FeedEvent.said, data: .object([("step", .int(step))]), at: 1000 + Double(step))
                change.append(writers[name]!.take())
            }
            let pushes = change
            try await store.write { db in for room in pushes { try RoomLogRows.append(room, db) } }
        }
        for (i, name) in names.enumerated() {
            let epoch = writers[name]!.epoch
            let steps = Array(stride(from: 0, to: 20, by: i + 1))
            let all = try await read(name, epoch: epoch)
            XCTAssertEqual(all.map(\.seq), (1...UInt64(steps.count)).map { $0 }, name)
            XCTAssertEqual(all.map(\.at), steps.map { 1000 + Double($0) }, name)
            let tail = try await read(name, epoch: epoch, after: 3, limit: 2)
            XCTAssertEqual(tail.map(\.seq), [4, 5], name)
        }
    }

    func testALogWrittenBeforeTheChainIsReadAndContinued() async throws {
        // A database as `rooms.v2` left it (rows keyed by room and seq), moved to `rooms.v3`.
        store.close()
        try FileManager.default.removeItem(atPath: temporary.directory)
        let all = SQLMigrations.of(RoomLogSchema.migrations)
        store = try temporary.reopen(migrations: all.upTo("rooms.v2"))
        let a = try await head("venue:a"), b = try await head("venue:b")
        try await store.write { db in
            for (room, seqs) in [("venue:a", 1...3), ("venue:b", 1...2)] {
                for seq in seqs {
                    try db.execute(sql: "INSERT INTO room_log (room, seq, at, payload) VALUES (?, ?, ?, ?)",
                                   arguments: [room, Int64(seq), 100 + Double(seq), Array("\(room) \(seq)".utf8)])
                }
            }
            try db.execute(sql: "UPDATE room_head SET seq = 3 WHERE room = 'venue:a'")
            try db.execute(sql: "UPDATE room_head SET seq = 2 WHERE room = 'venue:b'")
        }
        store.close()
        store = try temporary.reopen(migrations: all)

        let oldA = try await read("venue:a", epoch: a.epoch)
        XCTAssertEqual(oldA.map { String(decoding: $0.message.payload, as: UTF8.self) }, ["venue:a 1", "venue:a 2", "venue:a 3"])
        let oldB = try await read("venue:b", epoch: b.epoch, after: 1)
        XCTAssertEqual(oldB.map(\.seq), [2])
        try await append(staged("venue:a", after: RoomHead(seq: 3, epoch: a.epoch), count: 2))
        let continued = try await read("venue:a", epoch: a.epoch, after: 2)
        XCTAssertEqual(continued.map(\.seq), [3, 4, 5])
        let got = try await heads(["venue:a", "venue:b"])
        XCTAssertEqual(got, ["venue:a": RoomHead(seq: 5, epoch: a.epoch), "venue:b": RoomHead(seq: 2, epoch: b.epoch)])
    }

    // MARK: Epochs

    func testRenewEpochChangesTheEpochAndKeepsTheSeq() async throws {
        let room = "venue:a"
        let start = try await head(room)
        try await append(staged(room, after: start, count: 2))
        let renewed = try await store.write { try RoomLogRows.renewEpoch(of: room, $0) }
        XCTAssertEqual(renewed.seq, 2)
        XCTAssertNotEqual(renewed.epoch, start.epoch)
        let got18 = try await head(room)
        XCTAssertEqual(got18, renewed)

        // The old epoch's writer is fenced; the new one's continues at 3.
        let stale = staged(room, after: RoomHead(seq: 2, epoch: start.epoch), count: 1)
        await assertFenced(room, expected: RoomHead(seq: 2, epoch: start.epoch)) { try await self.append(stale) }
        try await append(staged(room, after: renewed, count: 1))
        let got19 = try await head(room)
        XCTAssertEqual(got19, RoomHead(seq: 3, epoch: renewed.epoch))
        let rows = try await read(room, epoch: renewed.epoch, after: 2)
        XCTAssertEqual(rows.map(\.seq), [3])
        XCTAssertEqual(rows.map(\.epoch), [renewed.epoch])

        // A room without a head gets one, in a fresh epoch.
        let fresh = try await store.write { try RoomLogRows.renewEpoch(of: "venue:b", $0) }
        XCTAssertEqual(fresh.seq, 0)
        XCTAssertFalse(fresh.epoch.isEmpty)
    }

    // MARK: Retention

    func testDropBeforeDeletesOldRowsOnSQLite() async throws {
        XCTAssertEqual(store.dialect, .sqlite)
        let a = try await head("venue:a")
        let b = try await head("venue:b")
        try await append(staged("venue:a", after: a, count: 3, at: 100)) // at 100, 101, 102
        try await append(staged("venue:a", after: RoomHead(seq: 3, epoch: a.epoch), count: 2, at: 200)) // 200, 201
        try await append(staged("venue:b", after: b, count: 2, at: 150)) // 150, 151
        let got20 = try await rowCount()
        XCTAssertEqual(got20, 7)

        let dropped = try await store.write { try RoomLogSchema.dropBefore(151, $0) }
        XCTAssertEqual(dropped, 4, "the rows made before the cutoff")
        let got21 = try await read("venue:a", epoch: a.epoch).map(\.seq)
        XCTAssertEqual(got21, [4, 5])
        let got22 = try await read("venue:b", epoch: b.epoch).map(\.seq)
        XCTAssertEqual(got22, [2])
        // Heads stay where they were: a room's position survives its pushes' retention.
        let got23 = try await heads(["venue:a", "venue:b"])
        XCTAssertEqual(got23, 
                       ["venue:a": RoomHead(seq: 5, epoch: a.epoch), "venue:b": RoomHead(seq: 2, epoch: b.epoch)])

        let none = try await store.write { try RoomLogSchema.dropBefore(10, $0) }
        XCTAssertEqual(none, 0)
        let all = try await store.write { try RoomLogSchema.dropBefore(1_000_000, $0) }
        XCTAssertEqual(all, 3)
        let got24 = try await rowCount()
        XCTAssertEqual(got24, 0)
        // Appending continues after the head.
        try await append(staged("venue:a", after: RoomHead(seq: 5, epoch: a.epoch), count: 1))
        let got25 = try await read("venue:a", epoch: a.epoch).map(\.seq)
        XCTAssertEqual(got25, [6])
    }
}
