import Foundation
import HubbubTestSupport
import Realtime
import VenueService
import WebSocket
import XCTest

/// A subscriber that found a venue's actor just before the sweeper retired it must still end up
/// in the room that later votes push to. The interleaving is forced, not hoped for: the test holds
/// the actor, retires it, and only then subscribes through it.
final class RetirementRaceTests: XCTestCase {
    private func venueWithPlaylist(_ h: DomainHarness) async throws -> (id: String, owner: ConnectionID) {
        let owner = h.connection()
        let venue = try await h.call("venue.register", ["name": "Bar", "address": "1 St", "postcode": "1", "city": "C", "country": "X",
                                                        "lat": 1, "lon": 2], user: "owner", member: owner)["venue"]!["id"]!
        try await h.call("venue.playlist.set", ["venue": venue, "playlistUri": "p", "creator": "dj",
                                                "tracks": [["uri": "t1", "title": "T", "artist": "A"], ["uri": "t2", "title": "T", "artist": "A"]]],
                         user: "owner", member: owner)
        return (venue.stringValue!, owner)
    }

    /// A venue whose actor a caller fetched just before the sweeper retired it.
    private func heldThenRetired() async throws -> (h: DomainHarness, id: String, owner: ConnectionID, held: VenueActor) {
        let h = try DomainHarness.venues()
        let (id, owner) = try await venueWithPlaylist(h)
        let held = try await h.domain.directory.actor(for: id)
        await h.domain.directory.sweep(now: Date().timeIntervalSince1970 + 3600)
        return (h, id, owner, held)
    }

    private func movedPushes(_ h: DomainHarness, _ member: ConnectionID) throws -> Int {
        try h.pushes(member).filter { $0.json["event"]?.stringValue == "track.moved" }.count
    }

    /// Subscribe reaches the actor after it was retired and before anyone replaced it: the actor
    /// comes back as the venue's live actor, so the next vote (which looks the venue up afresh)
    /// reaches the subscriber.
    func testSubscribeThroughARetiredActorRevivesIt() async throws {
        let (h, id, owner, held) = try await heldThenRetired()
        XCTAssertNil(h.domain.directory.liveActor(id), "the idle venue was retired")

        let watcher = h.connection()
        try await h.subscribe(through: held, member: watcher)
        XCTAssertTrue(h.domain.directory.liveActor(id) === held, "the retired actor serves again")

        try await h.call("venue.vote", ["venue": .string(id), "track": "t2"], user: "guest", member: owner)
        XCTAssertEqual(try movedPushes(h, watcher), 1, "the vote reached the subscriber")
    }

    /// A vote loaded a new actor while the subscriber still held the retired one: the subscriber
    /// is sent to the new actor, not left in a room nobody pushes to.
    func testSubscribeThroughAReplacedActorJoinsTheNewOne() async throws {
        let (h, id, owner, held) = try await heldThenRetired()
        try await h.call("venue.vote", ["venue": .string(id), "track": "t2"], user: "guest", member: owner)
        let successor = try XCTUnwrap(h.domain.directory.liveActor(id))
        XCTAssertFalse(successor === held, "the vote loaded the venue afresh")

        let watcher = h.connection()
        try await h.subscribe(through: held, member: watcher)
        XCTAssertTrue(h.domain.directory.liveActor(id) === successor, "the retired actor did not come back beside its successor")

        try await h.call("venue.vote", ["venue": .string(id), "track": "t1"], user: "guest2", member: owner)
        XCTAssertEqual(try movedPushes(h, watcher), 1, "the vote reached the subscriber")
    }

    /// The directory remembers a retired actor only while someone could still bring it back.
    func testRetiredActorsNobodyHoldsAreForgotten() async throws {
        let h = try DomainHarness.venues()
        let (id, _) = try await venueWithPlaylist(h)
        do {
            let held = try await h.domain.directory.actor(for: id)
            await h.domain.directory.sweep(now: Date().timeIntervalSince1970 + 3600)
            XCTAssertEqual(h.domain.directory.retiredCount, 1, "a caller still holds the retired actor")
            withExtendedLifetime(held) {}
        }
        await h.domain.directory.sweep(now: Date().timeIntervalSince1970 + 3600)
        XCTAssertEqual(h.domain.directory.retiredCount, 0, "nobody can bring it back: its entry is gone")
    }

    /// Every retired actor, revived or not, holds the state the store holds: a vote made through
    /// the successor is in the snapshot a late subscriber of the old actor gets.
    func testLateSubscriberSeesTheSuccessorsState() async throws {
        let (h, id, owner, held) = try await heldThenRetired()
        try await h.call("venue.vote", ["venue": .string(id), "track": "t2"], user: "guest", member: owner)

        let watcher = h.connection()
        try await h.subscribe(through: held, member: watcher, requestID: 7)
        let reply = try h.sink.messages(watcher).map { try JSONParser.parse($0.payload) }.first { $0["id"] == .int(7) }
        guard case .array(let tracks)? = reply?["result"]?["snapshot"]?["playlist"]?["tracks"] else {
            return XCTFail("no snapshot in \(reply?.encoded ?? "no reply")")
        }
        XCTAssertEqual(tracks.first?["track"]?["uri"]?.stringValue, "t2", "the snapshot carries the vote made after retirement")
        XCTAssertEqual(tracks.first?["votes"], .int(1))
    }
}
