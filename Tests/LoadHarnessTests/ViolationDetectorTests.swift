import XCTest
import LoadHarness

final class ViolationDetectorTests: XCTestCase {
    private let a = nameHash("spotify:track:a"), b = nameHash("spotify:track:b"), c = nameHash("spotify:track:c")
    private let alice = nameHash("uAlice")

    /// A validator subscribed at seq 0 of epoch "e1", knowing a queue a:0 b:0 c:0.
    private func subscribed() -> PushValidator {
        var v = PushValidator()
        v.reset(epoch: "e1", seq: 0, queue: [.init(track: a, votes: 0), .init(track: b, votes: 0), .init(track: c, votes: 0)], nowPlaying: nil)
        return v
    }

    private func push(_ seq: Int, epoch: String = "e1", _ queue: [(UInt64, Int)] = [], cause: PushCause? = nil,
                      event: PushEvent = .playlistReordered) -> ScannedPush {
        var p = ScannedPush()
        p.seq = seq
        p.epoch = epoch
        p.event = event
        p.queue = queue.map { QueuedTrack(track: $0.0, votes: $0.1) }
        p.cause = cause
        return p
    }

    func testAFaithfulStreamHasNoViolations() {
        var v = subscribed()
        XCTAssertEqual(v.receive(push(1, [(b, 1), (a, 0), (c, 0)], cause: .init(action: .vote, by: alice, track: b))).total, 0)
        XCTAssertEqual(v.receive(push(2, [(b, 1), (c, 1), (a, 0)], cause: .init(action: .vote, by: alice, track: c))).total, 0)
        XCTAssertEqual(v.receive(push(3, [(c, 1), (a, 0)], cause: nil)).total, 0, "a track ended: no cause, any change")
        XCTAssertEqual(v.receive(push(4, [(c, 0), (a, 0)], cause: .init(action: .unvote, by: alice, track: c))).total, 0)
        let d = nameHash("spotify:track:d")
        XCTAssertEqual(v.receive(push(5, [(d, 1), (c, 0), (a, 0)], cause: .init(action: .request, by: alice, track: d))).total, 0,
                       "a request brings a new track in with one vote")
        XCTAssertEqual(v.violations, Violations())
        XCTAssertEqual(v.seq, 5)
    }

    func testAGapIsCaughtAsMissingPushes() {
        var v = subscribed()
        v.receive(push(1, [(a, 0), (b, 0), (c, 0)]))
        let found = v.receive(push(4, [(a, 0), (b, 0), (c, 0)]))
        XCTAssertEqual(found.missing, 2)
        XCTAssertEqual(v.violations.total, 2)
    }

    func testADuplicateIsCaught() {
        var v = subscribed()
        v.receive(push(1, [(a, 0), (b, 0), (c, 0)]))
        v.receive(push(2, [(a, 0), (b, 0), (c, 0)]))
        XCTAssertEqual(v.receive(push(2, [(a, 0), (b, 0), (c, 0)])).duplicates, 1)
        XCTAssertEqual(v.receive(push(1, [(a, 0), (b, 0), (c, 0)])).duplicates, 1, "an older repeat too")
        XCTAssertEqual(v.violations.total, 2)
    }

    func testAnOutOfOrderPushIsCaught() {
        var v = subscribed()
        v.receive(push(1, [(a, 0), (b, 0), (c, 0)]))
        v.receive(push(3, [(a, 0), (b, 0), (c, 0)])) // 2 missing so far
        let late = v.receive(push(2, [(a, 0), (b, 0), (c, 0)]))
        XCTAssertEqual(late.outOfOrder, 1)
        XCTAssertEqual(v.violations.missing, 0, "it arrived after all: late, not missing")
        XCTAssertEqual(v.violations.total, 1)
        XCTAssertEqual(v.seq, 3, "a late push does not move the known position back")
    }

    func testAPushFromAnotherEpochIsCaught() {
        var v = subscribed()
        XCTAssertEqual(v.receive(push(1, epoch: "e2", [(a, 0), (b, 0), (c, 0)])).wrongEpoch, 1)
        XCTAssertEqual(v.recovered(epoch: "e9").wrongEpoch, 1, "a recovery must be in the epoch asked about")
        XCTAssertEqual(v.recovered(epoch: "e1").total, 0)
    }

    func testAnOrderThatContradictsItsVotesIsCaught() {
        var v = subscribed()
        XCTAssertEqual(v.receive(push(1, [(a, 0), (b, 1), (c, 0)], cause: .init(action: .vote, by: alice, track: b))).badOrder, 1)
        var order = push(2, [(b, 1), (a, 0), (c, 0)])
        order.orderMatchesVotes = false
        XCTAssertEqual(v.receive(order).badOrder, 1, "`order` and `votes` must list the same queue")
    }

    func testThePinnedTrackMayLeadWithFewerVotes() {
        var v = subscribed()
        var pin = push(1, event: .nowPlayingChanged)
        pin.nowPlaying = c
        v.receive(pin)
        XCTAssertEqual(v.receive(push(2, [(c, 0), (b, 1), (a, 0)], cause: .init(action: .vote, by: alice, track: b))).total, 0)
        XCTAssertEqual(v.receive(push(3, [(a, 0), (b, 1), (c, 0)])).badOrder, 1, "only the pinned track may")
    }

    func testCountsThatDoNotFollowFromTheCauseAreCaught() {
        var v = subscribed()
        // A vote for b that moved a instead.
        XCTAssertEqual(v.receive(push(1, [(a, 1), (b, 0), (c, 0)], cause: .init(action: .vote, by: alice, track: b))).badCount, 1)
        // A vote counted twice.
        XCTAssertEqual(v.receive(push(2, [(b, 2), (a, 1), (c, 0)], cause: .init(action: .vote, by: alice, track: b))).badCount, 1)
        // A vote for a track that is not queued (and not a request).
        let z = nameHash("zzz")
        XCTAssertEqual(v.receive(push(3, [(z, 1), (b, 2), (a, 1), (c, 0)], cause: .init(action: .vote, by: alice, track: z))).badCount, 1)
    }

    func testASnapshotResetsTheKnownQueue() {
        var v = subscribed()
        v.receive(push(1, event: .playlistSnapshot))
        XCTAssertNil(v.queue, "unknown until the snapshot's data is adopted")
        v.adoptSnapshot(queue: [.init(track: a, votes: 3)], nowPlaying: nil)
        XCTAssertEqual(v.receive(push(2, [(a, 4)], cause: .init(action: .vote, by: alice, track: a))).total, 0)
    }

    func testAFarGapStillCountsEverySkippedPush() {
        var v = subscribed()
        XCTAssertEqual(v.receive(push(1000, [(a, 0), (b, 0), (c, 0)])).missing, 999)
        XCTAssertEqual(v.receive(push(1000, [(a, 0), (b, 0), (c, 0)])).duplicates, 1)
        XCTAssertEqual(v.receive(push(500, [(a, 0), (b, 0), (c, 0)])).outOfOrder, 1, "beyond the window: late, not a repeat")
    }
}
