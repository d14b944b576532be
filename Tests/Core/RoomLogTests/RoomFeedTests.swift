import Foundation
import HubbubTestSupport
import Realtime
import RoomLog
import Synchronization
import WebSocket
import XCTest

/// The event name of the pushes these tests make.
enum FeedEvent: String, RoomEvent {
    case said = "test.said"
}

struct LogUnreadable: Error {}

/// A room log in memory that the test controls: each room's pushes and head, which of them a read
/// already sees (`hide(after:)`: the rest are "still committing"), and which retention dropped.
final class FakeRoomLog: RoomLogSource {
    private struct Log {
        var epoch: String
        var head: UInt64 = 0
        var pushes: [LoggedPush] = []
        /// Reads see pushes up to this seq only (nil: all).
        var visibleThrough: UInt64?
    }

    private let logs = Mutex<[String: Log]>([:])
    private let calls = Mutex<[String]>([])
    /// Runs once, after the next `heads` read its answer (a commit landing just after it).
    let afterHeads = Mutex<(@Sendable () -> Void)?>(nil)
    /// Every read and heads call throws while set.
    let failing = Atomic<Bool>(false)

    init() {}

    /// Appends pushes (each room's in seq order) and moves their rooms' heads.
    func append(_ pushes: [LoggedPush]) {
        logs.withLock { logs in
            for push in pushes {
                var log = logs[push.room] ?? Log(epoch: push.epoch)
                log.epoch = push.epoch
                log.head = push.seq
                log.pushes.append(push)
                logs[push.room] = log
            }
        }
    }

    /// Sets a room's head without pushes (a room whose pushes all left by retention, or a new epoch).
    func setHead(_ room: String, _ head: RoomHead) {
        logs.withLock { logs in
            var log = logs[room] ?? Log(epoch: head.epoch)
            log.epoch = head.epoch
            log.head = head.seq
            logs[room] = log
        }
    }

    /// Reads see `room`'s pushes up to `seq` only (the later ones are not committed yet).
    func hide(_ room: String, after seq: UInt64) { logs.withLock { $0[room]?.visibleThrough = seq } }
    /// Reads see all of `room`'s pushes.
    func reveal(_ room: String) { logs.withLock { $0[room]?.visibleThrough = nil } }
    /// Retention: pushes of `room` up to `seq` are gone (its head stays).
    func drop(_ room: String, through seq: UInt64) { logs.withLock { $0[room]?.pushes.removeAll { $0.seq <= seq } } }

    /// Calls made so far: "heads" or "read <room> after <seq>".
    var log: [String] { calls.withLock { $0 } }
    var reads: Int { log.filter { $0.hasPrefix("read") }.count }

    func heads(of rooms: [String]) async throws -> [String: RoomHead] {
        calls.withLock { $0.append("heads") }
        if failing.load(ordering: .relaxed) { throw LogUnreadable() }
        let out = logs.withLock { logs in
            var out: [String: RoomHead] = [:]
            for room in rooms {
                guard let log = logs[room] else { continue }
                out[room] = RoomHead(seq: min(log.head, log.visibleThrough ?? .max), epoch: log.epoch)
            }
            return out
        }
        afterHeads.withLock { after in
            defer { after = nil }
            return after
        }?()
        return out
    }

    func read(_ room: String, epoch: String, after seq: UInt64, limit: Int) async throws -> [LoggedPush] {
        calls.withLock { $0.append("read \(room) after \(seq)") }
        if failing.load(ordering: .relaxed) { throw LogUnreadable() }
        return logs.withLock { logs in
            guard let log = logs[room] else { return [] }
            let visible = log.visibleThrough ?? .max
            return Array(log.pushes.filter { $0.seq > seq && $0.seq <= visible }.prefix(limit))
        }
    }
}

final class RoomFeedTests: XCTestCase {
    let room = "venue:v1"

    // MARK: Helpers

    func member(_ n: Int32, loop: Int = 0) -> ConnectionID { ConnectionID(loop: loop, slot: n, generation: 1) }

    /// One push of `room` as the log holds it.
    func push(_ seq: UInt64, room: String? = nil, epoch: String = "e1") -> LoggedPush {
        let room = room ?? self.room
        let text = Envelope.push(room: room, seq: seq, epoch: epoch, event: FeedEvent.said.rawValue, data: .object([("n", .int(Int(seq)))]))
        return LoggedPush(room: room, epoch: epoch, seq: seq, at: Date().timeIntervalSince1970, message: OutboundMessage(text: text))
    }

    func pushes(_ seqs: ClosedRange<UInt64>, room: String? = nil, epoch: String = "e1") -> [LoggedPush] {
        seqs.map { push($0, room: room, epoch: epoch) }
    }

    /// What `member` was sent, in order: "reply" (or "reply@<seq>" when the reply names a seq) for
    /// replies, the seq for pushes (with "/<epoch>" for epochs other than e1, and the room's name
    /// for rooms other than `room`).
    func trace(_ sink: RecordingSink, _ member: ConnectionID) -> [String] {
        sink.messages(member).map { m in
            guard let json = try? JSONParser.parse(m.payload) else { return "unparsable" }
            if json["id"] != nil {
                if case .object? = json["result"], case .int(let seq)? = json["result"]?["seq"] { return "reply@\(seq)" }
                return "reply"
            }
            guard case .int(let seq)? = json["seq"] else { return "no seq" }
            var out = "\(seq)"
            if case .string(let epoch)? = json["epoch"], epoch != "e1" { out += "/\(epoch)" }
            if case .string(let r)? = json["room"], r != room { out = "\(r)#" + out }
            return out
        }
    }

    /// The reply of a subscribe (what the caller's answer with the snapshot would be).
    func replyMessage(seq: UInt64? = nil) -> OutboundMessage {
        OutboundMessage(text: Envelope.success(id: 1, result: seq.map { .object([("seq", .int(Int($0)))]) } ?? .object([])))
    }

    func subscribe(_ feed: RoomFeed, _ sink: RecordingSink, _ m: ConnectionID, at seq: UInt64, epoch: String = "e1",
                   room: String? = nil, language: String? = nil) {
        let reply = replyMessage()
        feed.subscribe(m, room: room ?? self.room, at: RoomHead(seq: seq, epoch: epoch), language: language) {
            sink.deliver(reply, to: m)
        }
    }

    /// Resumes `m` and records the reply (with the head it names) in the sink.
    func resume(_ feed: RoomFeed, _ sink: RecordingSink, _ m: ConnectionID, since seq: UInt64, epoch: String = "e1",
                language: String? = nil) async -> (Bool, RoomHead?) {
        let replied = Mutex<RoomHead?>(nil)
        let ok = await feed.resume(m, room: room, since: Since(seq: seq, epoch: epoch), language: language) { head in
            replied.withLock { $0 = head }
            sink.deliver(replyMessage(seq: head.seq), to: m)
        }
        return (ok, replied.withLock { $0 })
    }

    /// A moment for anything wrongly in flight (a duplicate from a catch-up) to show up.
    func settle() async { try? await Task.sleep(for: .milliseconds(60)) }

    func makeFeed(_ configuration: RoomFeed.Configuration = .init()) -> (RoomFeed, RecordingSink, FakeRoomLog) {
        let sink = RecordingSink()
        let source = FakeRoomLog()
        return (RoomFeed(sink: sink, source: source, configuration: configuration), sink, source)
    }

    // MARK: Delivering

    func testDeliversInOrderToSubscribedMembers() {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2), c = member(3, loop: 1)
        subscribe(feed, sink, a, at: 0)
        subscribe(feed, sink, b, at: 0)
        subscribe(feed, sink, c, at: 0)
        XCTAssertEqual(feed.size.rooms, 1)
        XCTAssertEqual(feed.size.members, 3)
        feed.deliver(pushes(1...3))
        feed.deliver([push(4)])
        for m in [a, b, c] { XCTAssertEqual(trace(sink, m), ["reply", "1", "2", "3", "4"], "\(m)") }
        XCTAssertEqual(source.log, [], "nothing read from the log when nothing is missing")
    }

    func testStagedPushesAreDelivered() {
        let (feed, sink, _) = makeFeed()
        let a = member(1)
        subscribe(feed, sink, a, at: 0, epoch: "ep")
        var staged = StagedRoom(name: room, head: RoomHead(seq: 0, epoch: "ep"))
        staged.stage(FeedEvent.said, data: .object([("text", .string("hi"))]), at: 1)
        staged.stage(FeedEvent.said, data: .object([("text", .string("there"))]), at: 2)
        let taken = staged.take()
        XCTAssertEqual(taken.map(\.seq), [1, 2])
        XCTAssertFalse(staged.hasStaged)
        feed.deliver(taken)
        let got = sink.pushes(a)
        XCTAssertEqual(got.count, 2)
        XCTAssertEqual(got.map { $0["seq"] }, [.int(1), .int(2)])
        XCTAssertEqual(got.map { $0["epoch"] }, [.string("ep"), .string("ep")])
        XCTAssertEqual(got.map { $0["data"]?["text"] }, [.string("hi"), .string("there")])
        XCTAssertEqual(got.map { $0["event"] }, [.string("test.said"), .string("test.said")])
    }

    func testPushesOfUntrackedRoomsAreIgnored() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1)
        subscribe(feed, sink, a, at: 0)
        // Another room's pushes (even with a gap) in the same batch and alone: nobody here watches it.
        feed.deliver([push(1, room: "venue:other"), push(1), push(2, room: "venue:other"), push(7, room: "venue:other"), push(2)])
        feed.deliver(pushes(1...3, room: "venue:else"))
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2"])
        XCTAssertEqual(feed.size.rooms, 1)
        XCTAssertEqual(feed.historySize(of: "venue:other").count, 0)
        await settle()
        XCTAssertEqual(source.log, [], "an untracked room's gap is not caught up")
    }

    func testNotificationsOfUntrackedRoomsAreDroppedAndSaidSo() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1)
        subscribe(feed, sink, a, at: 0)
        let carried = RoomNotification(pushes(1...2))!
        XCTAssertTrue(feed.notice(carried), "a room watched here")
        XCTAssertFalse(feed.notice(RoomNotification(pushes(1...2, room: "venue:other"))!), "nobody here watches it")
        XCTAssertFalse(feed.notice(RoomNotification(room: "venue:else", epoch: "e", first: 1, last: 9, at: 1, payloads: [])),
                       "nor this one, whose pushes did not fit")
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2"])
        XCTAssertEqual(feed.size.rooms, 1)
        await settle()
        XCTAssertEqual(source.log, [], "nothing read for rooms nobody watches")
    }

    func testPushDeliveredTwiceIsDeliveredOnce() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2, loop: 3)
        subscribe(feed, sink, a, at: 0)
        subscribe(feed, sink, b, at: 0)
        feed.deliver(pushes(1...2))
        feed.deliver(pushes(1...3)) // the commit and a notification both bring 1 and 2
        feed.deliver([push(3), push(2)])
        feed.deliver([push(4), push(4)])
        for m in [a, b] { XCTAssertEqual(trace(sink, m), ["reply", "1", "2", "3", "4"], "\(m)") }
        await settle()
        XCTAssertEqual(source.reads, 0)
    }

    func testGapWaitsForCatchUpFromTheLog() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2, loop: 1)
        subscribe(feed, sink, a, at: 0)
        subscribe(feed, sink, b, at: 0)
        source.append(pushes(1...5))
        source.hide(room, after: 3) // 4 is still committing: reads do not see it yet
        feed.deliver(pushes(1...3))
        feed.deliver([push(5)]) // 4's delivery was lost
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3"], "5 waits for 4")
        let tried = await eventually(every: .milliseconds(2)) { source.reads >= 1 }
        XCTAssertTrue(tried, "a gap starts a catch-up read")
        XCTAssertTrue(source.log.contains("read \(room) after 3"), "\(source.log)")
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3"], "still waiting while the log does not have 4")
        source.reveal(room)
        let caught = await eventually(every: .milliseconds(2)) { trace(sink, a).count == 6 && trace(sink, b).count == 6 }
        XCTAssertTrue(caught, "\(trace(sink, a)) \(source.log)")
        await settle()
        for m in [a, b] { XCTAssertEqual(trace(sink, m), ["reply", "1", "2", "3", "4", "5"], "\(m)") }
        XCTAssertGreaterThanOrEqual(feed.catchUps.load(ordering: .relaxed), 2)
        XCTAssertGreaterThanOrEqual(feed.caughtUp.load(ordering: .relaxed), 1)
        // Later pushes flow again.
        feed.deliver([push(6)])
        XCTAssertEqual(trace(sink, a).last, "6")
        XCTAssertEqual(trace(sink, a).count, 7)
    }

    func testGapFilledByALateDeliveryBeforeTheLogHasIt() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...6))
        source.hide(room, after: 2)
        feed.deliver(pushes(1...2))
        feed.deliver([push(5)])
        feed.deliver([push(4)])
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2"])
        feed.deliver([push(3)]) // the missing one arrives itself: 3, 4, 5 go out in order
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4", "5"])
        source.reveal(room)
        await settle()
        feed.deliver([push(6)])
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4", "5", "6"])
    }

    // MARK: Subscribing

    func testSubscribeAheadWaitsAndGetsOnlyLaterPushes() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...5))
        source.hide(room, after: 0) // the log does not show them yet (b's snapshot came from elsewhere)
        subscribe(feed, sink, b, at: 3) // b's snapshot includes 1...3
        XCTAssertEqual(trace(sink, b), [], "the reply waits until 3 is durable here: the snapshot must not show more")
        XCTAssertEqual(feed.size.members, 1, "b is not a member until the room gets to its snapshot")
        feed.deliver(pushes(1...2))
        XCTAssertEqual(trace(sink, b), [])
        feed.deliver([push(3)])
        XCTAssertEqual(trace(sink, b), ["reply"], "3 is in b's snapshot: the reply goes now")
        feed.deliver(pushes(4...5))
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4", "5"])
        XCTAssertEqual(trace(sink, b), ["reply", "4", "5"])
        XCTAssertEqual(feed.size.members, 2)
        await settle()
        XCTAssertEqual(trace(sink, b), ["reply", "4", "5"])
    }

    func testSubscribeAheadCatchesUpFromTheLog() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...3))
        subscribe(feed, sink, b, at: 3)
        // Nothing more is delivered: the feed reads 1...3 from the log to get to b's snapshot.
        let caught = await eventually(every: .milliseconds(2)) { trace(sink, a).count == 4 }
        XCTAssertTrue(caught, "\(trace(sink, a)) \(source.log)")
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3"])
        XCTAssertEqual(trace(sink, b), ["reply"])
        let joined = await eventually(every: .milliseconds(2)) { feed.size.members == 2 }
        XCTAssertTrue(joined)
        feed.deliver([push(4)])
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4"])
        XCTAssertEqual(trace(sink, b), ["reply", "4"])
    }

    func testSubscribeBehindGetsWhatFollowedFromHistory() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2, loop: 2)
        subscribe(feed, sink, a, at: 0)
        feed.deliver(pushes(1...5))
        subscribe(feed, sink, b, at: 2) // b's snapshot was taken at 2
        XCTAssertEqual(trace(sink, b), ["reply", "3", "4", "5"])
        subscribe(feed, sink, member(3), at: 5)
        XCTAssertEqual(trace(sink, member(3)), ["reply"])
        feed.deliver([push(6)])
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4", "5", "6"])
        XCTAssertEqual(trace(sink, b), ["reply", "3", "4", "5", "6"])
        XCTAssertEqual(trace(sink, member(3)), ["reply", "6"])
        await settle()
        XCTAssertEqual(source.reads, 0)
    }

    func testSubscribeWithANewerEpochRestartsTheRoom() {
        let (feed, sink, _) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        feed.deliver(pushes(1...3))
        subscribe(feed, sink, b, at: 3, epoch: "e2")
        feed.deliver([push(4, epoch: "e2")])
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4/e2"])
        XCTAssertEqual(trace(sink, b), ["reply", "4/e2"])
    }

    func testLocalizedPushesGoInEachReadersLanguage() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2), c = member(3)
        feed.setReaderLanguage { $0 == b ? "fr-CA" : nil }
        subscribe(feed, sink, a, at: 0)
        subscribe(feed, sink, b, at: 0, language: "fr-CA")
        var staged = StagedRoom(name: room, head: RoomHead(seq: 0, epoch: "e1"))
        staged.stage(FeedEvent.said, languages: ["fr"], data: { tag in .object([("text", .string(tag == "fr" ? "bonjour" : "hello"))]) }, at: 1)
        let taken = staged.take()
        source.append(taken)
        feed.deliver(taken)
        XCTAssertEqual(sink.pushes(a).map { $0["data"]?["text"] }, [.string("hello")])
        XCTAssertEqual(sink.pushes(b).map { $0["data"]?["text"] }, [.string("bonjour")])
        // Recovery from memory replays the reader's version too.
        let (ok, _) = await resume(feed, sink, c, since: 0, language: "fr")
        XCTAssertTrue(ok)
        XCTAssertEqual(sink.pushes(c).map { $0["data"]?["text"] }, [.string("bonjour")])
    }

    // MARK: Resuming

    func testResumeFromMemoryHistory() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        feed.deliver(pushes(1...5))
        let (ok, head) = await resume(feed, sink, b, since: 2)
        XCTAssertTrue(ok)
        XCTAssertEqual(head, RoomHead(seq: 5, epoch: "e1"))
        XCTAssertEqual(trace(sink, b), ["reply@5", "3", "4", "5"])
        XCTAssertEqual(source.log, [], "memory had it all")
        let (level, _) = await resume(feed, sink, member(3), since: 5)
        XCTAssertTrue(level)
        XCTAssertEqual(trace(sink, member(3)), ["reply@5"])
        feed.deliver([push(6)])
        XCTAssertEqual(trace(sink, a).suffix(1), ["6"])
        XCTAssertEqual(trace(sink, b), ["reply@5", "3", "4", "5", "6"])
        XCTAssertEqual(trace(sink, member(3)), ["reply@5", "6"])
        XCTAssertEqual(feed.size.members, 3)
    }

    func testResumeFromTheLogWhenTheRoomIsNotTracked() async {
        let (feed, sink, source) = makeFeed()
        let b = member(2)
        source.append(pushes(1...5))
        let (ok, head) = await resume(feed, sink, b, since: 2)
        XCTAssertTrue(ok)
        XCTAssertEqual(head, RoomHead(seq: 5, epoch: "e1"))
        XCTAssertEqual(trace(sink, b), ["reply@5", "3", "4", "5"])
        XCTAssertEqual(source.log, ["heads", "read \(room) after 2", "heads"], "the head read again once the room is tracked")
        XCTAssertEqual(feed.size.rooms, 1)
        XCTAssertEqual(feed.size.members, 1)
        feed.deliver([push(5), push(6)])
        XCTAssertEqual(trace(sink, b), ["reply@5", "3", "4", "5", "6"])
    }

    /// A push committed and delivered after the resume read the log, while the room was not
    /// tracked here yet (nobody watched it), reaches the member all the same, though no push follows.
    func testResumeOfAnUntrackedRoomGetsAPushDeliveredWhileItReadTheLog() async throws {
        let (feed, sink, source) = makeFeed()
        let b = member(2)
        source.append(pushes(1...5))
        let six = push(6)
        source.afterHeads.withLock { $0 = { source.append([six]); feed.deliver([six]) } }
        let (ok, head) = await resume(feed, sink, b, since: 5)
        XCTAssertTrue(ok)
        XCTAssertEqual(head, RoomHead(seq: 5, epoch: "e1"))
        for _ in 0..<100 where trace(sink, b).count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        XCTAssertEqual(trace(sink, b), ["reply@5", "6"])
        await settle()
        XCTAssertEqual(trace(sink, b), ["reply@5", "6"], "once")
    }

    func testResumeFromTheLogAtItsHead() async {
        let (feed, sink, source) = makeFeed()
        let b = member(2)
        source.append(pushes(1...5))
        source.drop(room, through: 5) // retention took them all, the head stays
        let (ok, head) = await resume(feed, sink, b, since: 5)
        XCTAssertTrue(ok)
        XCTAssertEqual(head, RoomHead(seq: 5, epoch: "e1"))
        XCTAssertEqual(trace(sink, b), ["reply@5"])
        feed.deliver([push(6)])
        XCTAssertEqual(trace(sink, b), ["reply@5", "6"])
    }

    func testResumeFromTheLogWhenMemoryNoLongerHasIt() async {
        let (feed, sink, source) = makeFeed(.init(history: .init(count: 2)))
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...5))
        feed.deliver(pushes(1...5))
        XCTAssertEqual(feed.historySize(of: room).count, 2)
        let (ok, head) = await resume(feed, sink, b, since: 1)
        XCTAssertTrue(ok)
        XCTAssertEqual(head, RoomHead(seq: 5, epoch: "e1"))
        XCTAssertEqual(trace(sink, b), ["reply@5", "2", "3", "4", "5"])
        feed.deliver([push(6)])
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4", "5", "6"])
        XCTAssertEqual(trace(sink, b), ["reply@5", "2", "3", "4", "5", "6"])
    }

    func testResumeRefusedWhenTheEpochDiffers() async {
        let (feed, sink, source) = makeFeed()
        let b = member(2)
        source.append(pushes(1...5, epoch: "e2"))
        let (ok, head) = await resume(feed, sink, b, since: 2, epoch: "e1")
        XCTAssertFalse(ok)
        XCTAssertNil(head, "no reply")
        XCTAssertEqual(trace(sink, b), [])
        XCTAssertEqual(feed.size.rooms, 0, "nothing done")

        // A tracked room in another epoch refuses too.
        let a = member(1)
        subscribe(feed, sink, a, at: 5, epoch: "e2")
        let (again, _) = await resume(feed, sink, b, since: 2, epoch: "e1")
        XCTAssertFalse(again)
        XCTAssertEqual(trace(sink, b), [])
        XCTAssertEqual(feed.size.members, 1)
    }

    func testResumeRefusedWhenSinceIsBeyondTheHead() async {
        let (feed, sink, source) = makeFeed()
        let b = member(2)
        source.append(pushes(1...5))
        let (ok, head) = await resume(feed, sink, b, since: 7)
        XCTAssertFalse(ok)
        XCTAssertNil(head)
        XCTAssertEqual(trace(sink, b), [])
        XCTAssertEqual(feed.size.rooms, 0)
    }

    func testResumeRefusedWhenTheRoomHasNoLog() async {
        let (feed, sink, _) = makeFeed()
        let (ok, head) = await resume(feed, sink, member(2), since: 0)
        XCTAssertFalse(ok)
        XCTAssertNil(head)
        XCTAssertEqual(feed.size.rooms, 0)
    }

    func testResumeRefusedWhenRetentionDroppedTheFirstNeededPush() async {
        let (feed, sink, source) = makeFeed()
        let b = member(2)
        source.append(pushes(1...5))
        source.drop(room, through: 3)
        let (ok, head) = await resume(feed, sink, b, since: 2) // needs 3, the log starts at 4
        XCTAssertFalse(ok)
        XCTAssertNil(head)
        XCTAssertEqual(trace(sink, b), [])
        XCTAssertEqual(feed.size.rooms, 0)
        // Since 3 still can be served.
        let (fine, _) = await resume(feed, sink, b, since: 3)
        XCTAssertTrue(fine)
        XCTAssertEqual(trace(sink, b), ["reply@5", "4", "5"])
    }

    func testResumeRefusedWhenMoreThanMaxRecoveredIsMissing() async {
        let (feed, sink, source) = makeFeed(.init(maxRecovered: 3))
        let b = member(2)
        source.append(pushes(1...10))
        let (tooMany, _) = await resume(feed, sink, b, since: 2)
        XCTAssertFalse(tooMany, "a snapshot is cheaper")
        XCTAssertEqual(trace(sink, b), [])
        let (fine, _) = await resume(feed, sink, b, since: 8)
        XCTAssertTrue(fine)
        XCTAssertEqual(trace(sink, b), ["reply@10", "9", "10"])
    }

    func testResumeRefusedWhenTheLogCannotBeRead() async {
        let (feed, sink, source) = makeFeed()
        source.append(pushes(1...5))
        source.failing.store(true, ordering: .relaxed)
        let (ok, head) = await resume(feed, sink, member(2), since: 2)
        XCTAssertFalse(ok)
        XCTAssertNil(head)
        XCTAssertEqual(feed.size.rooms, 0)
    }

    /// A client that saw more than this node delivered (it was on another node) waits for the room
    /// to get there; the log has those pushes, so the feed should read them as `subscribe` does for
    /// a snapshot ahead of it.
    func testResumeAheadOfTheRoomCatchesUpFromTheLog() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...5))
        feed.deliver(pushes(1...3))
        let (ok, head) = await resume(feed, sink, b, since: 5)
        XCTAssertTrue(ok)
        XCTAssertEqual(head, RoomHead(seq: 5, epoch: "e1"))
        XCTAssertEqual(trace(sink, b), ["reply@5"])
        let caught = await eventually(timeout: 2, every: .milliseconds(2)) { trace(sink, a).count == 6 }
        XCTAssertTrue(caught, "the room should read 4 and 5 from the log: a got \(trace(sink, a)), reads \(source.log)")
        feed.deliver([push(6)])
        let both = await eventually(every: .milliseconds(2)) { trace(sink, b).count == 2 && trace(sink, a).count == 7 }
        XCTAssertTrue(both, "a: \(trace(sink, a)), b: \(trace(sink, b))")
        XCTAssertEqual(trace(sink, b), ["reply@5", "6"])
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4", "5", "6"])
    }

    func testResumeAheadOfTheRoomGetsOnlyLaterPushes() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...6))
        source.hide(room, after: 0)
        feed.deliver(pushes(1...3))
        let (ok, _) = await resume(feed, sink, b, since: 5)
        XCTAssertTrue(ok)
        feed.deliver(pushes(4...6))
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3", "4", "5", "6"])
        XCTAssertEqual(trace(sink, b), ["reply@5", "6"])
    }

    // MARK: Epochs

    func testPushOfANewEpochRestartsTheRoom() async {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2, loop: 1)
        subscribe(feed, sink, a, at: 0)
        subscribe(feed, sink, b, at: 0)
        feed.deliver(pushes(1...3))
        // The writer renewed the epoch at 3 (seq carried on).
        feed.deliver([push(4, epoch: "e2")])
        feed.deliver([push(5, epoch: "e2")])
        // A late duplicate of the old epoch is dropped.
        feed.deliver([push(3, epoch: "e1")])
        for m in [a, b] { XCTAssertEqual(trace(sink, m), ["reply", "1", "2", "3", "4/e2", "5/e2"], "\(m)") }
        XCTAssertEqual(feed.size.members, 2)
        // Positions in the old epoch mean nothing now; the new one's are served.
        let (old, _) = await resume(feed, sink, member(3), since: 3, epoch: "e1")
        XCTAssertFalse(old)
        let (new, head) = await resume(feed, sink, member(4), since: 4, epoch: "e2")
        XCTAssertTrue(new)
        XCTAssertEqual(head, RoomHead(seq: 5, epoch: "e2"))
        XCTAssertEqual(trace(sink, member(4)), ["reply@5", "5/e2"])
        await settle()
        XCTAssertEqual(source.reads, 0)
    }

    // MARK: Leaving

    func testLeaveStopsDeliveryAndAnEmptyRoomIsNotTracked() async {
        let (feed, sink, _) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        subscribe(feed, sink, b, at: 0)
        subscribe(feed, sink, member(9), at: 0, room: "venue:v2")
        XCTAssertEqual(feed.size.rooms, 2)
        XCTAssertEqual(feed.size.members, 3)
        feed.deliver([push(1)])
        feed.leave(a, room: room)
        XCTAssertEqual(feed.size.rooms, 2)
        XCTAssertEqual(feed.size.members, 2)
        feed.deliver([push(2)])
        XCTAssertEqual(trace(sink, a), ["reply", "1"])
        XCTAssertEqual(trace(sink, b), ["reply", "1", "2"])
        feed.leave(a, room: room) // twice: nothing
        feed.leave(b, room: "venue:nowhere")
        XCTAssertEqual(feed.size.members, 2)
        feed.leave(b, room: room)
        XCTAssertEqual(feed.size.rooms, 1, "nobody here watches the room any more")
        XCTAssertEqual(feed.size.members, 1)
        XCTAssertEqual(feed.historySize(of: room).count, 0)
        feed.deliver([push(3)])
        XCTAssertEqual(trace(sink, b), ["reply", "1", "2"])
        feed.leave(member(9), room: "venue:v2")
        XCTAssertEqual(feed.size.rooms, 0)
        XCTAssertEqual(feed.size.members, 0)
    }

    /// A snapshot ahead of anything the log ever gets to (its owner died before that change was
    /// durable): the member is not answered with it, but closed to subscribe again.
    func testASnapshotTheLogNeverReachesClosesTheMember() async throws {
        var configuration = RoomFeed.Configuration()
        configuration.giveUpSeconds = 1
        let (feed, sink, source) = makeFeed(configuration)
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...2))
        subscribe(feed, sink, b, at: 3) // 3 was staged by an owner that died: it never commits
        await eventually(every: .milliseconds(20)) { sink.closeCode(b) != nil }
        XCTAssertEqual(sink.closeCode(b), .goingAway)
        XCTAssertEqual(trace(sink, b), [], "never answered with a snapshot holding what did not happen")
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2"], "the others caught up meanwhile")
        XCTAssertNil(sink.closeCode(a))
    }

    /// A snapshot taken while its last push (3) was not durable names that push; when 3 comes
    /// from the log as another push (the first was lost with its owner, and the next owner gave
    /// its seq to another), the held answer is not released: the member is closed instead.
    func testAHeldSnapshotIsNotReleasedByAnotherPushAtItsSeq() {
        let (feed, sink, _) = makeFeed()
        let a = member(1), b = member(2), c = member(3)
        subscribe(feed, sink, a, at: 0)
        let expected = push(3)
        let reply = replyMessage()
        feed.subscribe(b, room: room, at: RoomHead(seq: 3, epoch: "e1"), mark: PushMark.of(expected.message.payload)) {
            sink.deliver(reply, to: b)
        }
        feed.subscribe(c, room: room, at: RoomHead(seq: 3, epoch: "e1"), mark: PushMark.of(expected.message.payload)) {
            sink.deliver(reply, to: c)
        }
        feed.deliver(pushes(1...2))
        let other = LoggedPush(room: room, epoch: "e1", seq: 3, at: 0,
                               message: OutboundMessage(text: Envelope.push(room: room, seq: 3, epoch: "e1", event: FeedEvent.said.rawValue, data: ["n": "other"])))
        feed.deliver([other])
        XCTAssertEqual(sink.closeCode(b), .goingAway, "b's snapshot held a push that never became durable")
        XCTAssertEqual(trace(sink, b), [], "never answered with it")
        XCTAssertEqual(trace(sink, a), ["reply", "1", "2", "3"])
        feed.deliver([push(4)])
        XCTAssertEqual(trace(sink, b), [])
    }

    func testAHeldSnapshotIsReleasedByTheVeryPushItNamed() {
        let (feed, sink, _) = makeFeed()
        let b = member(2)
        let expected = push(3)
        let reply = replyMessage()
        feed.subscribe(b, room: room, at: RoomHead(seq: 3, epoch: "e1"), mark: PushMark.of(expected.message.payload)) {
            sink.deliver(reply, to: b)
        }
        feed.deliver(pushes(1...2) + [expected, push(4)])
        XCTAssertNil(sink.closeCode(b))
        XCTAssertEqual(trace(sink, b), ["reply", "4"])
    }

    func testLeaveOfAWaitingMember() {
        let (feed, sink, source) = makeFeed()
        let a = member(1), b = member(2)
        subscribe(feed, sink, a, at: 0)
        source.append(pushes(1...5))
        source.hide(room, after: 0)
        subscribe(feed, sink, b, at: 3)
        feed.leave(b, room: room)
        feed.deliver(pushes(1...5))
        XCTAssertEqual(trace(sink, b), [], "b left before the room got to its snapshot: no answer, no pushes")
        feed.leave(a, room: room)
        XCTAssertEqual(feed.size.rooms, 0)
    }
}
