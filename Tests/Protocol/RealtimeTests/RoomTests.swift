import Realtime
import WebSocket
import XCTest

/// A member on loop `batch`.
func TestMember(id: Int, batch: Int) -> ConnectionID { ConnectionID(loop: batch, slot: Int32(id), generation: 1) }

/// Test events: any name.
struct Event: RoomEvent {
    let rawValue: String
    init(rawValue: String) { self.rawValue = rawValue }
    init(_ name: String) { rawValue = name }
}

/// Records what each batch received.
final class RecordingSink: PushSink, @unchecked Sendable {
    var deliveries: [(OutboundMessage, [ConnectionID])] = []
    func deliver(_ message: OutboundMessage, to members: [ConnectionID]) { deliveries.append((message, members)) }
    func deliver(_ message: OutboundMessage, to member: ConnectionID) { deliveries.append((message, [member])) }
    func close(_ member: ConnectionID, code: CloseCode, reason: String) {}
}

extension Room {
    /// Publishes a push as the node's feed does: encoded for the next seq (as its writer's
    /// `StagedRoom` would), then `publish(prepared:)`.
    @discardableResult
    mutating func push(_ event: Event, data: JSON, now: Double, sink: any PushSink) -> OutboundMessage {
        let next = seq + 1
        let message = OutboundMessage(text: Envelope.push(room: name, seq: next, epoch: epoch, event: event.rawValue, data: data))
        publish(prepared: message, seq: next, now: now, sink: sink)
        return message
    }

    /// A push read in each reader's language: `data(tag)` for each of `languages`, `data(nil)` the original.
    mutating func push(_ event: Event, languages: [String], data: (String?) -> JSON, languageOf: (ConnectionID) -> String?,
                       now: Double, sink: any PushSink) {
        let next = seq + 1
        func encode(_ data: JSON) -> OutboundMessage {
            OutboundMessage(text: Envelope.push(room: name, seq: next, epoch: epoch, event: event.rawValue, data: data))
        }
        var translated: [String: OutboundMessage] = [:]
        for tag in languages where translated[tag] == nil { translated[tag] = encode(data(tag)) }
        publish(prepared: encode(data(nil)), translated: translated, seq: next, now: now, languageOf: languageOf, sink: sink)
    }
}

final class RoomTests: XCTestCase {
    private func text(_ m: OutboundMessage) -> String { String(decoding: m.payload, as: UTF8.self) }

    func testPushIsEncodedOnceAndDeliveredOncePerBatch() {
        var room = Room(name: "venue:v1", epoch: "e1")
        let sink = RecordingSink()
        for i in 0..<10 { _ = room.join(TestMember(id: i, batch: i % 2), since: nil, now: 0) }
        let m = room.push(Event("playlist.reordered"), data: ["order": ["a", "b"]], now: 1, sink: sink)
        XCTAssertEqual(sink.deliveries.count, 2, "one hand-over per batch")
        XCTAssertTrue(sink.deliveries.allSatisfy { $0.0 === m }, "the same encoded message for every batch")
        XCTAssertEqual(sink.deliveries.map(\.1.count).reduce(0, +), 10)
        XCTAssertEqual(text(m), #"{"room":"venue:v1","seq":1,"epoch":"e1","event":"playlist.reordered","data":{"order":["a","b"]}}"#)
    }

    func testResumeReplaysExactlyTheMissedPushesInOrder() {
        var room = Room(name: "r", epoch: "e")
        let sink = RecordingSink()
        for i in 1...10 { room.push(Event("e\(i)"), data: .int(i), now: Double(i), sink: sink) }
        guard case .recovered(let missed) = room.join(TestMember(id: 1, batch: 0), since: Since(seq: 6, epoch: "e"), now: 11) else {
            return XCTFail("gap is in the history")
        }
        XCTAssertEqual(missed.map(text), (7...10).map { #"{"room":"r","seq":\#($0),"epoch":"e","event":"e\#($0)","data":\#($0)}"# })
        XCTAssertEqual(room.join(TestMember(id: 2, batch: 0), since: Since(seq: 10, epoch: "e"), now: 11), .recovered([]))
    }

    func testResumeNeedsASnapshotWhenTheEpochChangedOrTheGapIsTooOld() {
        var room = Room(name: "r", epoch: "new", limits: .init(count: 5, maxAgeSeconds: 60))
        let sink = RecordingSink()
        for i in 1...20 { room.push(Event("e"), data: .int(i), now: Double(i), sink: sink) }
        XCTAssertEqual(room.join(TestMember(id: 1, batch: 0), since: Since(seq: 18, epoch: "old"), now: 21), .snapshotNeeded)
        XCTAssertEqual(room.join(TestMember(id: 2, batch: 0), since: Since(seq: 10, epoch: "new"), now: 21), .snapshotNeeded,
                       "only 5 pushes are kept")
        guard case .recovered(let m) = room.join(TestMember(id: 3, batch: 0), since: Since(seq: 15, epoch: "new"), now: 21) else {
            return XCTFail("16…20 are kept")
        }
        XCTAssertEqual(m.count, 5)
        XCTAssertEqual(room.join(TestMember(id: 4, batch: 0), since: Since(seq: 19, epoch: "new"), now: 200), .snapshotNeeded,
                       "pushes older than 60 s are gone")
        XCTAssertEqual(room.join(TestMember(id: 5, batch: 0), since: Since(seq: 99, epoch: "new"), now: 21), .snapshotNeeded,
                       "a seq from the future is not trusted")
    }

    func testLeaveStopsDelivery() {
        var room = Room(name: "r", epoch: "e")
        let sink = RecordingSink()
        let a = TestMember(id: 1, batch: 0)
        _ = room.join(a, since: nil, now: 0)
        room.leave(a)
        room.push(Event("x"), data: .null, now: 1, sink: sink)
        XCTAssertTrue(sink.deliveries.isEmpty)
        XCTAssertEqual(room.memberCount, 0)
    }

    func testHistoryIsBoundedByBytesAndTrimmedWhileQuiet() {
        var room = Room(name: "r", epoch: "e", limits: .init(count: 1000, maxAgeSeconds: 60, maxBytes: 10_000))
        let sink = RecordingSink()
        let big = JSON.string(String(repeating: "x", count: 1000))
        for i in 1...50 { room.push(Event("e"), data: big, now: Double(i) / 10, sink: sink) }
        XCTAssertLessThanOrEqual(room.historyBytes, 10_000)
        XCTAssertGreaterThan(room.historyCount, 0)
        XCTAssertLessThan(room.historyCount, 10, "about 2 KB a push: fewer than 10 fit in 10 KB")
        // No push for two minutes: the owner's sweep empties the history without waiting for one.
        room.trimHistory(now: 125)
        XCTAssertEqual(room.historyCount, 0)
        XCTAssertEqual(room.historyBytes, 0)
        XCTAssertEqual(room.join(TestMember(id: 9, batch: 0), since: Since(seq: 49, epoch: "e"), now: 125), .snapshotNeeded)
    }

    /// Many busy rooms share one budget: each keeps an equal share (never below the floor), the
    /// total stays bounded, and a room that goes gives its bytes back.
    func testRoomsShareOneHistoryBudget() {
        let budget = HistoryBudget(limitBytes: 100_000, floorBytes: 1_024)
        let limits = Room.HistoryLimits(count: 1000, maxAgeSeconds: 600, maxBytes: 256 * 1024, budget: budget)
        let sink = RecordingSink()
        let push = JSON.string(String(repeating: "y", count: 500))
        var rooms = (0..<50).map { Room(name: "r\($0)", epoch: "e", limits: limits) }
        for round in 0..<40 {
            for i in rooms.indices { rooms[i].push(Event("e"), data: push, now: Double(round), sink: sink) }
        }
        XCTAssertEqual(budget.roomsHolding, 50)
        XCTAssertEqual(budget.heldBytes, rooms.reduce(0) { $0 + $1.historyBytes }, "the budget counts what the rooms hold")
        XCTAssertLessThanOrEqual(budget.heldBytes, 100_000 + 50 * 1_200, "the total is bounded (give or take a push a room)")
        for room in rooms { XCTAssertLessThanOrEqual(room.historyBytes, 2_000 + 1_200, "an equal share: 100,000 / 50") }
        XCTAssertTrue(rooms.allSatisfy { $0.historyCount >= 1 }, "every room keeps its latest pushes")

        // Rooms go (actors retired): their bytes come back, and the others may grow again.
        rooms.removeLast(45)
        XCTAssertEqual(budget.roomsHolding, 5)
        XCTAssertEqual(budget.heldBytes, rooms.reduce(0) { $0 + $1.historyBytes })
        for round in 40..<120 {
            for i in rooms.indices { rooms[i].push(Event("e"), data: push, now: Double(round), sink: sink) }
        }
        XCTAssertGreaterThan(rooms[0].historyBytes, 15_000, "five rooms share 100,000 bytes")
        XCTAssertLessThanOrEqual(budget.heldBytes, 100_000 + 5 * 1_200)

        // The floor: with the budget spread thin, a room still keeps about 4 KiB.
        let thin = HistoryBudget(limitBytes: 1_000, floorBytes: 4_096)
        var small = Room(name: "s", epoch: "e", limits: .init(count: 1000, maxAgeSeconds: 600, maxBytes: 256 * 1024, budget: thin))
        for round in 0..<20 { small.push(Event("e"), data: push, now: Double(round), sink: sink) }
        XCTAssertGreaterThan(small.historyBytes, 2_000)
        XCTAssertLessThanOrEqual(small.historyBytes, 4_096)
    }
}

final class EnvelopeTests: XCTestCase {
    private func rejection(_ text: String) -> Request.Rejection? {
        if case .failure(let r) = Request.parse(Array(text.utf8)) { return r }
        return nil
    }

    func testRequestErrorsNameTheField() throws {
        XCTAssertEqual(rejection("not json")?.error.code, .badRequest)
        XCTAssertNil(rejection("not json")?.id)
        XCTAssertEqual(rejection(#"{"op":"x"}"#)?.error.message, "missing field id")
        XCTAssertEqual(rejection(#"{"id":"7","op":"x"}"#)?.error.message, "field id must be an integer")
        XCTAssertEqual(rejection(#"{"id":7}"#)?.error.message, "missing field op")
        XCTAssertEqual(rejection(#"{"id":7}"#)?.id, 7)
        XCTAssertEqual(rejection(#"{"id":7,"op":3}"#)?.error.message, "field op must be a string")
        XCTAssertEqual(rejection(#"{"id":7,"op":"x","args":[]}"#)?.error.message, "field args must be an object")
        guard case .success(let r) = Request.parse(Array(#"{"id":7,"op":"venue.vote","args":{"venue":"v1","n":2}}"#.utf8)) else {
            return XCTFail("valid request")
        }
        XCTAssertEqual(try r.args.string("venue"), "v1")
        XCTAssertThrowsError(try r.args.string("track")) { XCTAssertEqual(($0 as? ProtocolError)?.message, "missing field track") }
        XCTAssertThrowsError(try r.args.string("n")) { XCTAssertEqual(($0 as? ProtocolError)?.message, "field n must be a string") }
    }

    func testJSONRoundTripsAndRejectsHostileInput() throws {
        let text = #"{"a":[1,2.5,-3e2,"x\"\\\n\u00e9\ud83d\ude00"],"b":{"c":null,"d":true}}"#
        let v = try JSONParser.parse(Array(text.utf8))
        XCTAssertEqual(try JSONParser.parse(Array(v.encoded.utf8)), v)
        XCTAssertEqual(v["a"], [1, 2.5, -300.0, "x\"\\\né😀"])
        XCTAssertThrowsError(try JSONParser.parse(Array(String(repeating: "[", count: 100).utf8)), "too deep")
        XCTAssertThrowsError(try JSONParser.parse(Array(#"{"a":1,"a":2}"#.utf8)), "duplicate key")
        XCTAssertThrowsError(try JSONParser.parse(Array(#"["\ud800"]"#.utf8)), "lone surrogate")
        XCTAssertThrowsError(try JSONParser.parse(Array("[1,]".utf8)))
        XCTAssertThrowsError(try JSONParser.parse(Array("01".utf8)))
        XCTAssertEqual(Envelope.failure(id: 7, error: ProtocolError(.rateLimited, "slow down", retryAfterMs: 250)),
                       #"{"id":7,"ok":false,"error":{"code":"rate_limited","message":"slow down","retryAfterMs":250}}"#)
    }
}
