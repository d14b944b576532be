import Foundation
import HubbubTestSupport
import Realtime
import RoomLog
import Storage
import WebSocket
import XCTest

/// One change's pushes to many rooms (`RoomLogRows.append(rooms:)`, an intel item in every corridor
/// it lies in), on SQLite and, when `HB_TEST_POSTGRES` is set (scripts/test-postgres.sh), on
/// PostgreSQL, where the heads move in one statement and the rows go in multi-row inserts.
final class RoomLogManyRoomsTests: XCTestCase {
    private var store: Store!

    override func setUpWithError() throws {
        store = try temporaryStore("hubbub-roomlog-many", migrations: .of(RoomLogSchema.migrations), engine: .fromEnvironment).store
    }

    override func tearDown() { store = nil }

    /// Pushes are made now (PostgreSQL's log has partitions around the present only).
    private let now = Date().timeIntervalSince1970

    /// Heads for `count` rooms, and writers at them.
    private func writers(_ count: Int) async throws -> [StagedRoom] {
        let names = (0..<count).map { "venue:c\($0)" }
        let heads = try await store.write { db in try names.map { try RoomLogRows.head(of: $0, db) } }
        return zip(names, heads).map { StagedRoom(name: $0, head: $1) }
    }

    func testOneChangeReachingManyRoomsIsWrittenAndReadBackRoomByRoom() async throws {
        var rooms = try await writers(450) // more rows than one insert takes
        for step in 0..<3 {
            var change: [[LoggedPush]] = []
            for i in rooms.indices where step == 0 || i % 2 == 0 {
                rooms[i].stage(FeedEvent.said, data: ["room": .int(i), "step": .int(step)], at: now + Double(step))
                if i % 3 == 0 {
                    rooms[i].stage(FeedEvent.said, languages: ["fr"], data: { tag in ["room": .int(i), "in": .string(tag ?? "-")] },
                                   at: now + Double(step))
                }
                change.append(rooms[i].take())
            }
            let pushes = change
            try await store.write { db in try RoomLogRows.append(rooms: pushes, db) }
        }
        let names = rooms.map(\.name)
        let heads = try await store.read { db in try RoomLogRows.heads(of: names, db) }
        for (i, room) in rooms.enumerated() {
            XCTAssertEqual(heads[room.name], room.head, room.name)
            let read = try await store.read { db in try RoomLogRows.read(room.name, epoch: room.epoch, after: 0, limit: 100, db) }
            XCTAssertEqual(read.map(\.seq), Array(1...room.seq), room.name)
            XCTAssertTrue(read.allSatisfy { String(decoding: $0.message.payload, as: UTF8.self).contains("\"room\":\(i),") }, room.name)
            if i % 3 == 0 {
                XCTAssertEqual(String(decoding: read[1].translated["fr"]?.payload ?? [], as: UTF8.self),
                               Envelope.push(room: room.name, seq: 2, epoch: room.epoch, event: "test.said", data: ["room": .int(i), "in": "fr"]))
            }
        }
    }

    func testOneStaleRoomAmongManyUndoesTheWholeChange() async throws {
        var rooms = try await writers(40)
        // Another writer moved room 17 on since these writers loaded.
        var other = StagedRoom(name: rooms[17].name, head: rooms[17].head)
        other.stage(FeedEvent.said, data: ["other": true], at: now)
        let moved = other.take()
        try await store.write { db in try RoomLogRows.append(moved, db) }

        var change: [[LoggedPush]] = []
        for i in rooms.indices {
            rooms[i].stage(FeedEvent.said, data: ["i": .int(i)], at: now)
            change.append(rooms[i].take())
        }
        let pushes = change
        do {
            try await store.write { db in try RoomLogRows.append(rooms: pushes, db) }
            XCTFail("a stale writer's change was written")
        } catch {
            XCTAssertTrue("\(error)".contains("venue:c17"), "the stale room is named: \(error)")
        }
        let names = rooms.map(\.name)
        let heads = try await store.read { db in try RoomLogRows.heads(of: names, db) }
        for (i, room) in rooms.enumerated() {
            XCTAssertEqual(heads[room.name]?.seq, i == 17 ? 1 : 0, "\(room.name): no head moved")
            let read = try await store.read { db in try RoomLogRows.read(room.name, epoch: room.epoch, after: 0, limit: 10, db) }
            XCTAssertEqual(read.count, i == 17 ? 1 : 0, "\(room.name): no row written")
        }
    }
}

/// Several rooms' notifications in one NOTIFY.
final class RoomNotificationPackingTests: XCTestCase {
    private func note(_ room: String, carrying bytes: Int) -> RoomNotification {
        let payload = Array(("{\"x\":\"" + String(repeating: "a", count: bytes) + "\"}").utf8)
        return RoomNotification(room: room, epoch: "e1", first: 4, last: 4, at: 1000.5, payloads: [payload])
    }

    func testNotesArePackedWholeUnderTheLimitAndReadBackInOrder() {
        let notes = (0..<300).map { note("venue:c\($0)", carrying: $0 % 7 == 0 ? 3000 : 400) }
        let texts = RoomNotification.packed(notes)
        XCTAssertLessThan(texts.count, 60, "hundreds of notes share notifications")
        XCTAssertTrue(texts.allSatisfy { $0.utf8.count <= RoomNotification.maxBytes }, "every text under the limit")
        let read = texts.flatMap { RoomNotification.all(in: $0) ?? [] }
        XCTAssertEqual(read, notes)
    }

    func testASingleNoteIsTheOldFormatAndABrokenPartRefusesTheText() {
        let one = note("venue:v1", carrying: 10)
        XCTAssertEqual(RoomNotification.packed([one]), [one.text])
        XCTAssertEqual(RoomNotification.all(in: one.text), [one])
        XCTAssertNil(RoomNotification.all(in: one.text + "\u{1D}not a note"))
        XCTAssertEqual(RoomNotification.packed([]), [])
    }

    func testNotesOfRoomsNotWantedArePassedOverUnread() throws {
        let notes = (0..<40).map { note("venue:c\($0)", carrying: 100) }
        let texts = RoomNotification.packed(notes)
        var kept: [RoomNotification] = [], skipped = 0
        for text in texts {
            let read = try XCTUnwrap(RoomNotification.all(in: text) { $0.hasSuffix("5") })
            kept += read.notes
            skipped += read.skipped
        }
        XCTAssertEqual(kept, notes.filter { $0.room.hasSuffix("5") })
        XCTAssertEqual(skipped, 36)
        // A part passed over is not read, but one read must be a note; a part without a room is refused.
        let one = note("venue:v1", carrying: 10)
        XCTAssertEqual(RoomNotification.all(in: one.text + "\u{1D}route:x\tnot a note") { $0 == "venue:v1" }?.notes, [one])
        XCTAssertNil(RoomNotification.all(in: one.text + "\u{1D}route:x\tnot a note") { _ in true })
        XCTAssertNil(RoomNotification.all(in: one.text + "\u{1D}no room") { _ in false })
    }
}
