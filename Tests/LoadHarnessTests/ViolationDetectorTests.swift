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

    private func moved(_ seq: Int, epoch: String = "e1", _ track: UInt64, votes: Int, index: Int,
                       _ action: PushCause.Action? = .vote) -> ScannedPush {
        var p = push(seq, epoch: epoch, event: .trackMoved)
        p.moved = QueuedTrack(track: track, votes: votes)
        p.index = index
        p.cause = action.map { PushCause(action: $0, by: alice, track: track) }
        return p
    }

    private func requested(_ seq: Int, _ track: UInt64) -> ScannedPush {
        var p = push(seq, event: .trackRequested)
        p.requested = track
        return p
    }

    private func queue(_ v: PushValidator) -> [String] {
        let names = [a: "a", b: "b", c: "c", nameHash("spotify:track:d"): "d"]
        return (v.queue ?? []).map { "\(names[$0.track] ?? "?")\($0.votes)" }
    }

    // MARK: track.moved

    func testAFaithfulStreamOfMovesHasNoViolations() {
        var v = subscribed()
        XCTAssertEqual(v.receive(moved(1, b, votes: 1, index: 0)).total, 0)
        XCTAssertEqual(queue(v), ["b1", "a0", "c0"])
        XCTAssertEqual(v.receive(moved(2, c, votes: 1, index: 1)).total, 0, "a tie: after b, by the server's entry counter")
        XCTAssertEqual(queue(v), ["b1", "c1", "a0"])
        XCTAssertEqual(v.receive(moved(3, a, votes: 1, index: 0)).total, 0, "a tie may also go first")
        XCTAssertEqual(queue(v), ["a1", "b1", "c1"])
        XCTAssertEqual(v.receive(moved(4, b, votes: 0, index: 2, .unvote)).total, 0)
        XCTAssertEqual(queue(v), ["a1", "c1", "b0"])
        let d = nameHash("spotify:track:d")
        XCTAssertEqual(v.receive(requested(5, d)).total, 0)
        XCTAssertEqual(queue(v), ["a1", "c1", "b0", "d0"], "a new track comes in last with no votes")
        XCTAssertEqual(v.receive(moved(6, d, votes: 1, index: 2, .request)).total, 0, "then its request's vote places it")
        XCTAssertEqual(queue(v), ["a1", "c1", "d1", "b0"])
        XCTAssertEqual(v.receive(moved(7, b, votes: 1, index: 3, .request)).total, 0, "a request of a queued track is a vote")
        XCTAssertEqual(queue(v), ["a1", "c1", "d1", "b1"])
        XCTAssertEqual(v.violations, Violations())
        XCTAssertEqual(v.seq, 7)
    }

    func testAMoveWhoseCountDoesNotFollowFromItsCauseIsCaught() {
        var v = subscribed()
        XCTAssertEqual(v.receive(moved(1, b, votes: 2, index: 0)).badCount, 1, "a vote counted twice")
        XCTAssertEqual(queue(v), ["b2", "a0", "c0"], "the server's count is taken, so the next move is judged on its own")
        XCTAssertEqual(v.receive(moved(2, b, votes: 3, index: 0)).total, 0)
        XCTAssertEqual(v.receive(moved(3, b, votes: 3, index: 0, .unvote)).badCount, 1, "an unvote that took nothing away")
        XCTAssertEqual(v.receive(moved(4, c, votes: 0, index: 2)).badCount, 1, "a vote that took one away")
        let z = nameHash("zzz")
        XCTAssertEqual(v.receive(moved(5, z, votes: 1, index: 1)).badCount, 1, "a vote for a track not queued")
        XCTAssertEqual(v.receive(moved(6, nameHash("yyy"), votes: 1, index: 1, .request)).badCount, 1,
                       "a new request's track must come with its track.requested first")
        XCTAssertEqual(v.violations.total, 5)
        XCTAssertEqual(v.violations.badCount, 5)
    }

    func testARequestOfAQueuedTrackIsCaught() {
        var v = subscribed()
        XCTAssertEqual(v.receive(requested(1, b)).badCount, 1, "track.requested is for tracks not queued yet")
        XCTAssertEqual(queue(v), ["a0", "b0", "c0"], "and does not queue it twice")
    }

    func testAGapOrARepeatInMovesIsCaught() {
        var v = subscribed()
        v.receive(moved(1, b, votes: 1, index: 0))
        XCTAssertEqual(v.receive(moved(4, c, votes: 1, index: 1)).missing, 2)
        let repeated = v.receive(moved(4, c, votes: 1, index: 1))
        XCTAssertEqual(repeated.duplicates, 1)
        XCTAssertEqual(repeated.badCount, 0, "a repeat is not applied again")
        XCTAssertEqual(queue(v), ["b1", "c1", "a0"])
        XCTAssertEqual(v.receive(moved(2, a, votes: 1, index: 0)).outOfOrder, 1)
        XCTAssertEqual(queue(v), ["b1", "c1", "a0"], "a late push does not roll the queue back")
        XCTAssertEqual(v.receive(moved(5, epoch: "e2", a, votes: 1, index: 0)).wrongEpoch, 1)
        XCTAssertEqual(v.violations.total, 4, "seq 3 still missing (2 came late), 4 repeated, 2 out of order, one from another epoch")
        XCTAssertEqual(v.violations.missing, 1)
    }

    func testAMovePlacedAgainstTheVotesIsCaught() {
        var v = subscribed()
        XCTAssertEqual(v.receive(moved(1, b, votes: 1, index: 2)).badOrder, 1, "below a track with fewer votes")
        XCTAssertEqual(queue(v), ["a0", "c0", "b1"])
        XCTAssertEqual(v.receive(moved(2, a, votes: 0, index: 0, nil)).total, 0, "a move with no cause: no count to check")
        XCTAssertEqual(v.receive(moved(3, c, votes: 1, index: 5)).badOrder, 1, "past the end")
        XCTAssertEqual(queue(v), ["a0", "b1", "c1"], "put at the end anyway")
        XCTAssertEqual(v.receive(moved(4, a, votes: 1, index: 2)).total, 0, "among equal counts")
        XCTAssertEqual(v.receive(moved(5, a, votes: 2, index: 1)).badOrder, 1, "below a track with fewer votes")
        XCTAssertEqual(v.receive(moved(6, b, votes: 0, index: 0, .unvote)).badOrder, 1, "above tracks with more votes")
        XCTAssertEqual(v.violations.badOrder, 4)
        XCTAssertEqual(v.violations.total, 4)
    }

    func testThePinnedTrackStaysFirst() {
        var v = subscribed()
        var pin = push(1, event: .nowPlayingChanged)
        pin.nowPlaying = c
        v.receive(pin)
        v.receive(push(2, [(c, 0), (a, 0), (b, 0)]))
        XCTAssertEqual(v.receive(moved(3, b, votes: 1, index: 1)).total, 0, "the top after the pinned track")
        XCTAssertEqual(v.receive(moved(4, c, votes: 1, index: 0)).total, 0, "a vote for the pinned track keeps it first")
        XCTAssertEqual(queue(v), ["c1", "b1", "a0"])
        XCTAssertEqual(v.receive(moved(5, a, votes: 1, index: 0)).badOrder, 1, "nothing goes above the pinned track")
        XCTAssertEqual(queue(v), ["c1", "a1", "b1"], "put right after it")
        XCTAssertEqual(v.receive(moved(6, c, votes: 2, index: 1)).badOrder, 1, "the pinned track moves nowhere")
        XCTAssertEqual(queue(v), ["c2", "a1", "b1"])
        XCTAssertEqual(v.receive(moved(7, b, votes: 2, index: 1)).total, 0, "more votes than the pinned track: still after it")
        XCTAssertEqual(v.violations.total, 2)
    }

    /// Fair mode: a request that reorders other tracks is followed by `playlist.reordered` instead.
    func testAFairModeRequestThatReordersIsChecked() {
        var v = subscribed()
        let d = nameHash("spotify:track:d")
        v.receive(requested(1, d))
        let request = PushCause(action: .request, by: alice, track: d)
        XCTAssertEqual(v.receive(push(2, [(d, 1), (a, 0), (b, 0), (c, 0)], cause: request)).total, 0)
        v.receive(requested(3, nameHash("spotify:track:e")))
        XCTAssertEqual(v.receive(push(4, [(nameHash("spotify:track:e"), 2), (d, 1), (a, 0), (b, 0), (c, 0)],
                                      cause: .init(action: .request, by: alice, track: nameHash("spotify:track:e")))).badCount, 1,
                       "its track moves by one vote")
    }

    // MARK: playlist.reordered

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
