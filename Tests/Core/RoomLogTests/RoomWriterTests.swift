import Foundation
import HubbubTestSupport
import Logging
import Realtime
import RoomLog
import Storage
import Synchronization
import WebSocket
import XCTest

/// The one room writer on a real SQLite store: a change and its pushes in one transaction, the
/// pushes delivered only once durable, and the one failure policy (nothing delivered, the writer
/// refuses until its owner resets, the epoch kept unless a snapshot showed a lost push).
final class RoomWriterTests: XCTestCase {
    private var store: Store!
    private var sink: RecordingSink!
    private var feed: RoomFeed!
    private let room = "test:r1"
    private let member = ConnectionID(loop: 0, slot: 1, generation: 1)

    /// A change that fails inside its transaction (as a full disk would, from the writer's side).
    struct Refused: Error {}

    override func setUpWithError() throws {
        var migrations = SQLMigrations.of(RoomLogSchema.migrations)
        migrations.registerMigration("test.things") { db in try db.execute(sql: "CREATE TABLE thing (id INTEGER PRIMARY KEY, room TEXT NOT NULL)") }
        store = try temporaryStore("hubbub-roomwriter", migrations: migrations).store
        sink = RecordingSink()
        feed = RoomFeed(sink: sink, source: FakeRoomLog())
    }

    override func tearDown() { store = nil }

    private func writer() -> RoomWriter { RoomWriter(store: store, feed: feed, logger: Logger(label: "test")) }

    /// `room`'s stored head, made if it has none.
    private func storedHead(_ room: String) async throws -> RoomHead {
        let name = room
        return try await store.write { try RoomLogRows.head(of: name, $0) }
    }

    /// A writer holding `rooms` at their stored heads, `member` subscribed to each.
    private func holding(_ rooms: [String]) async throws -> RoomWriter {
        let w = writer()
        for (i, room) in rooms.enumerated() {
            let head = try await storedHead(room)
            w.adopt(room, head: head)
            feed.subscribe(ConnectionID(loop: 0, slot: Int32(i + 1), generation: 1), room: room, at: head) {}
        }
        return w
    }

    private func things() async throws -> Int { try await store.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM thing") ?? -1 } }

    private func logged(_ room: String, epoch: String) async throws -> [UInt64] {
        let name = room
        return try await store.read { try RoomLogRows.read(name, epoch: epoch, after: 0, limit: 100, $0) }.map(\.seq)
    }

    private static let insertThing: @Sendable (RoomRows) throws -> Void = { rows in
        try rows.db.execute(sql: "INSERT INTO thing (room) VALUES ('x')")
    }

    func testAChangeIsWrittenWithItsPushesAndDeliveredOnceDurable() async throws {
        let w = try await holding([room])
        let head = try XCTUnwrap(w.durableHead(of: room))
        try w.admit()
        w.stage(FeedEvent.said, data: ["n": 1], in: room, at: 1000)
        w.stage(FeedEvent.said, data: ["n": 2], in: room, at: 1000)
        XCTAssertTrue(sink.pushes(member).isEmpty, "nothing is delivered while only staged")
        try await w.commit(Self.insertThing)
        XCTAssertEqual(sink.pushes(member).map { $0["seq"]?.int }, [Int(head.seq) + 1, Int(head.seq) + 2])
        let storedThings = try await things()
        XCTAssertEqual(storedThings, 1)
        let loggedSeqs = try await logged(room, epoch: head.epoch)
        XCTAssertEqual(loggedSeqs, [head.seq + 1, head.seq + 2])
        XCTAssertEqual(w.durableHead(of: room), RoomHead(seq: head.seq + 2, epoch: head.epoch))
        XCTAssertEqual(w.inFlight, 0)
    }

    func testAFailedChangeIsNotDeliveredAndTheWriterRefusesUntilItsOwnerResets() async throws {
        let w = try await holding([room])
        let head = try XCTUnwrap(w.durableHead(of: room))
        w.stage(FeedEvent.said, data: ["n": 1], in: room, at: 1000)
        do {
            try await w.commit { rows in
                try Self.insertThing(rows)
                throw Refused()
            }
            XCTFail("a change that failed was acknowledged")
        } catch {
            XCTAssertEqual(error.code, .unavailable)
        }
        XCTAssertTrue(sink.pushes(member).isEmpty, "a change that failed is never delivered")
        let storedThings = try await things()
        XCTAssertEqual(storedThings, 0, "its rows were undone")
        let loggedSeqs = try await logged(room, epoch: head.epoch)
        XCTAssertEqual(loggedSeqs, [])
        XCTAssertTrue(w.failed)
        XCTAssertFalse(w.holds(room), "its rooms' heads are forgotten")
        XCTAssertThrowsError(try w.admit(), "refused until the owner is current again")

        // The owner reloads (the stored head: the same epoch, the lost seq given to the next push).
        w.reload(room, head: try await storedHead(room))
        try w.admit()
        w.stage(FeedEvent.said, data: ["n": 2], in: room, at: 1000)
        try await w.commit(Self.insertThing)
        XCTAssertEqual(sink.pushes(member).map { $0["seq"]?.int }, [Int(head.seq) + 1])
        XCTAssertEqual(sink.pushes(member).first?["epoch"]?.string, head.epoch)
    }

    func testTheEpochIsRenewedOnlyWhenASnapshotShowedThePushThatWasLost() async throws {
        for shown in [false, true] {
            let w = try await holding([room])
            w.stage(FeedEvent.said, data: ["n": 1], in: room, at: 1000)
            // The write fails only once the snapshot is taken: the change is in flight when it is
            // (the store's thread could otherwise fail it first, and the snapshot see nothing in flight).
            let snapshotTaken = DispatchSemaphore(value: 0)
            let failed = await withCheckedContinuation { (done: CheckedContinuation<RoomWriteFailure?, Never>) in
                w.submit({ _ in snapshotTaken.wait(); throw Refused() }) { outcome in
                    if case .failure(let f) = outcome { done.resume(returning: f) } else { done.resume(returning: nil) }
                }
                if shown {
                    let at = w.snapshot(of: room)
                    XCTAssertNotNil(at?.mark, "a head not yet durable is marked")
                }
                snapshotTaken.signal()
            }
            XCTAssertEqual(failed?.renewEpoch, shown ? [room] : [], "shown: \(shown)")
        }
    }

    func testAReservedSeqMustBePushedByItsChange() async throws {
        let w = try await holding([room])
        let head = try XCTUnwrap(w.durableHead(of: room))
        _ = try XCTUnwrap(w.reserve(in: room))
        do {
            try await w.commit(Self.insertThing)
            XCTFail("a change that left its reservation unpushed was acknowledged")
        } catch {
            XCTAssertEqual(error.code, .unavailable)
        }
        let storedThings = try await things()
        XCTAssertEqual(storedThings, 0)

        w.reload(room, head: try await storedHead(room))
        let reserved = try XCTUnwrap(w.reserve(in: room))
        let count = try await w.commit { rows in
            try Self.insertThing(rows)
            let n = try Int.fetchOne(rows.db, sql: "SELECT COUNT(*) FROM thing") ?? 0
            rows.push(reserved, FeedEvent.said, data: ["count": .int(n)], at: 1000)
            return n
        }
        XCTAssertEqual(count, 1)
        XCTAssertEqual(sink.pushes(member).map { $0["data"]?["count"]?.int }, [1])
        XCTAssertEqual(sink.pushes(member).map { $0["seq"]?.int }, [Int(head.seq) + 1], "the reserved seq, the one after the head")
    }

    func testOneChangeReachesManyRoomsAllOrNone() async throws {
        let rooms = (0..<50).map { "test:c\($0)" }
        let w = try await holding(rooms)
        for room in rooms { w.stage(FeedEvent.said, data: ["n": 1], in: room, at: 1000) }
        try await w.commit(Self.insertThing)
        for i in rooms.indices {
            XCTAssertEqual(sink.pushes(ConnectionID(loop: 0, slot: Int32(i + 1), generation: 1)).count, 1, rooms[i])
        }

        // Another writer moved one room on: the whole change is undone, and no room hears of it.
        let stale = rooms[17]
        let moved = try await storedHead(stale)
        var other = StagedRoom(name: stale, head: moved)
        other.stage(FeedEvent.said, data: ["other": true], at: 1000)
        let pushes = other.take()
        try await store.write { try RoomLogRows.append(pushes, $0) }
        sink.clear()
        for room in rooms { w.stage(FeedEvent.said, data: ["n": 2], in: room, at: 1000) }
        do {
            try await w.commit(Self.insertThing)
            XCTFail("a change with a stale room was acknowledged")
        } catch {
            XCTAssertEqual(error.code, .unavailable)
        }
        let storedThings = try await things()
        XCTAssertEqual(storedThings, 1)
        for i in rooms.indices where rooms[i] != stale {
            XCTAssertTrue(sink.pushes(ConnectionID(loop: 0, slot: Int32(i + 1), generation: 1)).isEmpty, rooms[i])
        }
    }

    func testAStreamNumbersItsPushesInsideTheTransaction() async throws {
        let w = try await holding([room])
        let head = try XCTUnwrap(w.durableHead(of: room))
        let written = try await w.commitStream(in: room) { rows in
            for n in 0..<5 where n % 2 == 0 { rows.push(FeedEvent.said, data: ["n": .int(n)], at: 1000) }
        }
        XCTAssertEqual(written.map(\.seq), [head.seq + 1, head.seq + 2, head.seq + 3])
        XCTAssertEqual(sink.pushes(member).map { $0["data"]?["n"]?.int }, [0, 2, 4])
        XCTAssertEqual(w.durableHead(of: room), RoomHead(seq: head.seq + 3, epoch: head.epoch))
        // A push staged afterwards follows the stream's.
        w.stage(FeedEvent.said, data: ["n": 5], in: room, at: 1000)
        try await w.commit { _ in }
        XCTAssertEqual(sink.pushes(member).last?["seq"]?.int, Int(head.seq) + 4)
        let loggedSeqs = try await logged(room, epoch: head.epoch)
        XCTAssertEqual(loggedSeqs, (1...4).map { head.seq + UInt64($0) })
    }

    func testAPushInEachReadersLanguageIsEncodedOncePerLanguage() async throws {
        let w = try await holding([room])
        let calls = Mutex<[String?]>([])
        w.stage(FeedEvent.said, languages: ["fi", "tr", "fi"], data: { tag in
            calls.withLock { $0.append(tag) }
            return ["body": .string(tag ?? "original")]
        }, in: room, at: 1000)
        try await w.commit { _ in }
        XCTAssertEqual(calls.withLock { $0 }.sorted { ($0 ?? "") < ($1 ?? "") }, [nil, "fi", "tr"], "the original and each language once, not per member")
        XCTAssertEqual(sink.pushes(member).map { $0["data"]?["body"]?.string }, ["original"], "a member without a language reads the original")
    }
}
