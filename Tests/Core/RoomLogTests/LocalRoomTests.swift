import Foundation
import HubbubTestSupport
import Realtime
import RoomLog
import Synchronization
import WebSocket
import XCTest

/// Rooms made on the node that watches them (`LocalRoom`, `RoomFeed.host`): pushes delivered at
/// once, in order, with nothing read or written; `since` within the load from the feed's memory
/// only; a new load a new epoch whose pushes the members of the last one get.
final class LocalRoomTests: XCTestCase {
    let local = "route:c1"

    private func member(_ n: Int32) -> ConnectionID { ConnectionID(loop: 0, slot: n, generation: 1) }

    private func makeFeed() -> (RoomFeed, RecordingSink, FakeRoomLog) {
        let sink = RecordingSink(), source = FakeRoomLog()
        return (RoomFeed(sink: sink, source: source), sink, source)
    }

    /// The seqs `member` was sent in `local`, with "/<epoch>" when it is not `epoch`; "reply@<seq>" for replies.
    private func seqs(_ sink: RecordingSink, _ member: ConnectionID, epoch: String) -> [String] {
        sink.messages(member).compactMap { m in
            guard let json = try? JSONParser.parse(m.payload) else { return "unparsable" }
            if json["id"] != nil { return "reply@\(json["result"]?["seq"]?.int ?? -1)" }
            guard json["room"]?.string == local, let seq = json["seq"]?.int else { return nil }
            return json["epoch"]?.string == epoch ? "\(seq)" : "\(seq)/\(json["epoch"]?.string ?? "?")"
        }
    }

    private func join(_ feed: RoomFeed, _ sink: RecordingSink, _ m: ConnectionID, at head: RoomHead) {
        let reply = OutboundMessage(text: Envelope.success(id: 1, result: ["seq": .int(Int(head.seq))]))
        feed.subscribe(m, room: local, at: head) { sink.deliver(reply, to: m) }
    }

    private func said(_ room: inout LocalRoom, _ n: Int) { room.stage(FeedEvent.said, data: ["n": .int(n)], at: 0) }

    func testPushesAreDeliveredAtOnceInOrderWithNothingReadOrWritten() {
        let (feed, sink, source) = makeFeed()
        var room = LocalRoom(local, feed: feed)
        let epoch = room.head.epoch
        XCTAssertEqual(room.head.seq, 0)
        XCTAssertEqual(epoch.count, 8)
        let a = member(1)
        join(feed, sink, a, at: room.head)
        said(&room, 1)
        said(&room, 2)
        XCTAssertEqual(seqs(sink, a, epoch: epoch), ["reply@0"], "staged, not yet published")
        room.publish()
        said(&room, 3)
        room.publish()
        XCTAssertEqual(seqs(sink, a, epoch: epoch), ["reply@0", "1", "2", "3"])
        XCTAssertEqual(source.log, [], "nothing read from a log")
    }

    /// Pushes made while nobody watched are kept (the room is tracked while it is loaded): a member
    /// whose snapshot was taken before them gets them after its reply.
    func testAMemberJoiningFromAnOlderSnapshotGetsWhatFollowedFromMemory() {
        let (feed, sink, _) = makeFeed()
        var room = LocalRoom(local, feed: feed)
        let epoch = room.head.epoch
        said(&room, 1)
        room.publish()
        let snapshot = room.head
        said(&room, 2)
        said(&room, 3)
        room.publish()
        let a = member(1)
        join(feed, sink, a, at: snapshot)
        XCTAssertEqual(seqs(sink, a, epoch: epoch), ["reply@1", "2", "3"])
        XCTAssertTrue(feed.watches(local))
        XCTAssertEqual(feed.watched(prefix: "route"), ["c1"], "a member watches it")
        feed.leave(a, room: local)
        XCTAssertEqual(feed.watched(prefix: "route"), [], "loaded, but watched by nobody")
        XCTAssertTrue(feed.watches(local), "still tracked while loaded")
        feed.unhost(local, epoch: epoch)
        XCTAssertFalse(feed.watches(local))
    }

    /// `since` in the load's epoch is served from memory; another epoch, a seq this node never
    /// made, or a room not loaded here, is refused (a snapshot), and no log is read for it.
    func testSinceRecoversWithinTheLoadOnlyAndNeverReadsALog() async {
        let (feed, sink, source) = makeFeed()
        var room = LocalRoom(local, feed: feed)
        let epoch = room.head.epoch
        for n in 1...4 { said(&room, n) }
        room.publish()
        let a = member(1), b = member(2), c = member(3), d = member(4)
        let resumed = await feed.resume(a, room: local, since: Since(seq: 2, epoch: epoch), readsLog: false) { _ in
            sink.deliver(OutboundMessage(text: Envelope.success(id: 1, result: ["seq": 4])), to: a)
        }
        XCTAssertTrue(resumed)
        XCTAssertEqual(seqs(sink, a, epoch: epoch), ["reply@4", "3", "4"])
        let other = await feed.resume(b, room: local, since: Since(seq: 2, epoch: "elsewhere"), readsLog: false) { _ in XCTFail("answered") }
        XCTAssertFalse(other, "another node's or load's epoch")
        let ahead = await feed.resume(c, room: local, since: Since(seq: 9, epoch: epoch), readsLog: false) { _ in XCTFail("answered") }
        XCTAssertFalse(ahead, "a seq this load never made")
        let unloaded = await feed.resume(d, room: "route:c2", since: Since(seq: 1, epoch: epoch), readsLog: false) { _ in XCTFail("answered") }
        XCTAssertFalse(unloaded)
        XCTAssertEqual(source.log, [], "nothing read from a log")
        XCTAssertEqual(sink.messages(b).count + sink.messages(c).count + sink.messages(d).count, 0)
    }

    /// Loaded again while members remain: a new epoch, its seq going on, so they get its pushes (and
    /// see the epoch change); a late push of the last load is not delivered.
    func testANewLoadIsANewEpochItsMembersHearAndTheLastLoadIsSilenced() {
        let (feed, sink, _) = makeFeed()
        var first = LocalRoom(local, feed: feed)
        let a = member(1)
        join(feed, sink, a, at: first.head)
        said(&first, 1)
        first.publish()
        feed.unhost(local, epoch: first.head.epoch)
        var second = LocalRoom(local, feed: feed)
        XCTAssertNotEqual(second.head.epoch, first.head.epoch)
        XCTAssertEqual(second.head.seq, 1, "the seq goes on")
        said(&first, 2)
        first.publish()
        said(&second, 2)
        second.publish()
        XCTAssertEqual(seqs(sink, a, epoch: first.head.epoch), ["reply@0", "1", "2/\(second.head.epoch)"])
        XCTAssertNil(sink.closeCode(a))
        feed.leave(a, room: local)
        feed.unhost(local, epoch: first.head.epoch)
        XCTAssertTrue(feed.watches(local), "the last load's unhost (late) leaves this one hosted")
        feed.unhost(local, epoch: second.head.epoch)
        XCTAssertFalse(feed.watches(local))
    }

    /// Notifications name rooms on the log; a room made here has none, so one that claims to be
    /// its pushes is ignored, and a catch-up of every room leaves it alone.
    func testNotificationsAndCatchUpsLeaveALocalRoomAlone() async {
        let (feed, sink, source) = makeFeed()
        var room = LocalRoom(local, feed: feed)
        let epoch = room.head.epoch
        let a = member(1)
        join(feed, sink, a, at: room.head)
        let stray = Envelope.push(room: local, seq: 1, epoch: epoch, event: FeedEvent.said.rawValue, data: ["stray": true])
        XCTAssertFalse(feed.notice(RoomNotification(room: local, epoch: epoch, first: 1, last: 1, at: 0, payloads: [Array(stray.utf8)])))
        XCTAssertFalse(feed.notice(RoomNotification(room: local, epoch: "old", first: 5, last: 5, at: 0, payloads: [])))
        source.setHead(local, RoomHead(seq: 7, epoch: "old"))
        let behind = await feed.catchUpAll()
        XCTAssertEqual(behind, 0)
        try? await Task.sleep(for: .milliseconds(60)) // a wrongly started catch-up would show
        said(&room, 1)
        room.publish()
        XCTAssertEqual(seqs(sink, a, epoch: epoch), ["reply@0", "1"])
    }
}
