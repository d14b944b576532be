import Realtime
import XCTest
import LoadHarness

final class PushScannerTests: XCTestCase {
    private func scan(_ s: String) -> ScannedPush? { PushScanner.scan(Array(s.utf8)) }

    /// The `playlist.reordered` example of docs/protocol.md.
    func testReadsAReorderedPush() throws {
        let p = try XCTUnwrap(scan(#"{"room":"venue:vk3j9mxq2pa","seq":2,"epoch":"h7tq4nwe","event":"playlist.reordered","data":{"order":["spotify:track:3","spotify:track:1","spotify:track:2"],"votes":{"spotify:track:3":1,"spotify:track:1":0,"spotify:track:2":0},"cause":{"action":"vote","by":"uAb7WNMJYR7I1","track":"spotify:track:3"}}}"#))
        XCTAssertEqual(p.room, nameHash("venue:vk3j9mxq2pa"))
        XCTAssertEqual(p.seq, 2)
        XCTAssertEqual(p.epoch, "h7tq4nwe")
        XCTAssertEqual(p.event, .playlistReordered)
        XCTAssertEqual(p.queue, [.init(track: nameHash("spotify:track:3"), votes: 1), .init(track: nameHash("spotify:track:1"), votes: 0),
                                 .init(track: nameHash("spotify:track:2"), votes: 0)])
        XCTAssertTrue(p.orderMatchesVotes)
        XCTAssertEqual(p.cause, PushCause(action: .vote, by: nameHash("uAb7WNMJYR7I1"), track: nameHash("spotify:track:3")))
    }

    /// `track.moved`: one track's new count and place, and the action that moved it.
    func testReadsATrackMovedPush() throws {
        let p = try XCTUnwrap(scan(#"{"room":"venue:vk3j9mxq2pa","seq":12,"epoch":"h7tq4nwe","event":"track.moved","data":{"track":"spotify:track:3","votes":2,"index":1,"cause":{"action":"vote","by":"uAb7WNMJYR7I1"}}}"#))
        XCTAssertEqual(p.room, nameHash("venue:vk3j9mxq2pa"))
        XCTAssertEqual(p.seq, 12)
        XCTAssertEqual(p.epoch, "h7tq4nwe")
        XCTAssertEqual(p.event, .trackMoved)
        XCTAssertEqual(p.moved, QueuedTrack(track: nameHash("spotify:track:3"), votes: 2))
        XCTAssertEqual(p.index, 1)
        XCTAssertEqual(p.cause, PushCause(action: .vote, by: nameHash("uAb7WNMJYR7I1"), track: nameHash("spotify:track:3")),
                       "the cause names the moved track, as the harness times it")
        XCTAssertEqual(p.queue, [])
    }

    func testReadsATrackMovedPushInAnyMemberOrder() throws {
        let p = try XCTUnwrap(scan(#"{"room":"r","seq":3,"epoch":"e","event":"track.moved","data":{"cause":{"by":"u1","action":"unvote"},"index":0,"votes":0,"track":"t9"}}"#))
        XCTAssertEqual(p.moved, QueuedTrack(track: nameHash("t9"), votes: 0))
        XCTAssertEqual(p.index, 0)
        XCTAssertEqual(p.cause, PushCause(action: .unvote, by: nameHash("u1"), track: nameHash("t9")))
        let request = try XCTUnwrap(scan(#"{"room":"r","seq":4,"epoch":"e","event":"track.moved","data":{"track":"t9","votes":1,"index":2,"cause":{"action":"request","by":"u1"}}}"#))
        XCTAssertEqual(request.cause?.action, .request)
        let plain = try XCTUnwrap(scan(#"{"room":"r","seq":5,"epoch":"e","event":"track.moved","data":{"track":"t9","votes":1,"index":2}}"#))
        XCTAssertNil(plain.cause)
    }

    func testATrackMovedPushWithoutItsFieldsIsUnreadable() {
        XCTAssertNil(scan(#"{"room":"r","seq":1,"epoch":"e","event":"track.moved","data":{"track":"t","votes":1}}"#))
        XCTAssertNil(scan(#"{"room":"r","seq":1,"epoch":"e","event":"track.moved","data":{"track":"t","index":1}}"#))
        XCTAssertNil(scan(#"{"room":"r","seq":1,"epoch":"e","event":"track.moved","data":{"votes":1,"index":1}}"#))
        XCTAssertNil(scan(#"{"room":"r","seq":1,"epoch":"e","event":"track.moved","data":{"track":"t","votes":1,"index":0.5}}"#))
    }

    /// The `track.requested` example of docs/protocol.md: the track's uri out of the track object.
    func testReadsATrackRequestedPush() throws {
        let p = try XCTUnwrap(scan(#"{"room":"venue:vk3j9mxq2pa","seq":4,"epoch":"h7tq4nwe","event":"track.requested","data":{"track":{"uri":"spotify:track:7","title":"Song 7","artist":"Band","explicit":false,"durationMs":null,"coverUrl":null},"by":"uTs2c1wbO_NqS"}}"#))
        XCTAssertEqual(p.event, .trackRequested)
        XCTAssertEqual(p.requested, nameHash("spotify:track:7"))
        XCTAssertNil(p.cause, "not timed: the track.moved after it is")
        XCTAssertNil(p.moved)
        XCTAssertNil(scan(#"{"room":"r","seq":4,"epoch":"e","event":"track.requested","data":{"track":{"title":"no uri"},"by":"u"}}"#))
    }

    func testNoticesOrderAndVotesDisagreeing() throws {
        let p = try XCTUnwrap(scan(#"{"room":"r","seq":1,"epoch":"e","event":"playlist.reordered","data":{"order":["b","a"],"votes":{"a":1,"b":0}}}"#))
        XCTAssertFalse(p.orderMatchesVotes)
        XCTAssertNil(p.cause, "pushes of owner actions carry no cause")
    }

    func testReadsNowPlayingWithATrackOrNull() throws {
        XCTAssertEqual(scan(#"{"room":"r","seq":8,"epoch":"e","event":"nowplaying.changed","data":{"track":"spotify:track:3"}}"#)?.nowPlaying,
                       nameHash("spotify:track:3"))
        let cleared = try XCTUnwrap(scan(#"{"room":"r","seq":9,"epoch":"e","event":"nowplaying.changed","data":{"track":null}}"#))
        XCTAssertNil(cleared.nowPlaying)
        XCTAssertEqual(cleared.seq, 9)
    }

    /// Escaped strings name the same track as their plain spelling.
    func testUnescapesBeforeHashing() throws {
        let p = try XCTUnwrap(scan(#"{"room":"r","seq":1,"epoch":"e","event":"playlist.reordered","data":{"order":["a\u0062"],"votes":{"ab":1}}}"#))
        XCTAssertEqual(p.queue.first?.track, nameHash("ab"))
        XCTAssertTrue(p.orderMatchesVotes)
    }

    /// Other events are read up to their data, which is located for a full parse.
    func testLocatesTheDataOfOtherEvents() throws {
        let text = #"{"room":"r","seq":3,"epoch":"e","event":"venue.updated","data":{"venue":{"lat":1.5,"tags":[true,null]},"settings":{}}}"#
        let p = try XCTUnwrap(scan(text))
        XCTAssertEqual(p.event, .venueUpdated)
        let data = Array(Array(text.utf8)[p.data])
        XCTAssertEqual(try JSONParser.parse(data)["venue"]?["lat"], .double(1.5))
    }

    func testRepliesAndBrokenTextAreNotPushes() {
        XCTAssertNil(scan(#"{"id":1,"ok":true,"result":{}}"#))
        XCTAssertNil(scan(#"{"room":"r","seq":1,"epoch":"e","event":"playlist.reordered","data":{"order":["a"],"votes":{"a":1.5}}}"#))
        XCTAssertNil(scan(#"{"room":"r","seq":1,"epoch":"e","event":"x","data":{"#))
        XCTAssertNil(scan(#"{"room":"r","seq":"1","epoch":"e","event":"x","data":{}}"#))
        XCTAssertNil(scan(""))
    }

    func testQueueStateFromASnapshot() throws {
        let state = try JSONParser.parse(Array(#"{"playlist":{"uri":"p","creator":"dj"},"nowPlaying":"t2","tracks":[{"track":{"uri":"t2"},"votes":0,"requester":null},{"track":{"uri":"t1"},"votes":3,"requester":null}],"settings":{}}"#.utf8))
        let q = try XCTUnwrap(QueueState.from(playlistState: state))
        XCTAssertEqual(q.queue, [.init(track: nameHash("t2"), votes: 0), .init(track: nameHash("t1"), votes: 3)])
        XCTAssertEqual(q.nowPlaying, nameHash("t2"))
    }
}
