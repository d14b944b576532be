import Venues
import XCTest

final class NoRepeatTests: XCTestCase {
    func testATrackPlayedInsideTheWindowCannotBeRequestedAgain() throws {
        var j = try jukebox(["a"], settings: VenueSettings(noRepeatHours: 2))
        _ = try j.request(user: "u1", track: track("x"), now: T0)
        _ = try j.nowPlaying(uri: uri("x"))
        let ended = T0 + 200
        _ = try j.trackEnded(uri: uri("x"), now: ended)

        let e = jukeboxError(try j.request(user: "u2", track: track("x"), now: ended + 2 * 3600 - 0.001))
        guard case .conflict(let message) = e else { return XCTFail("expected a conflict, got \(String(describing: e))") }
        XCTAssertTrue(message.hasPrefix("played recently"), message)
        XCTAssertTrue(message.contains("2 hours"), "the message names the window: \(message)")
        XCTAssertFalse(j.contains(uri("x")))
        XCTAssertRequested(try j.request(user: "u3", track: track("y"), now: ended + 1), track("y"), by: "u3",
                       "other tracks are not affected")
    }

    func testATrackPlayedBeforeTheWindowCanBeRequested() throws {
        var j = try jukebox(["a"], settings: VenueSettings(noRepeatHours: 2))
        _ = try j.request(user: "u1", track: track("x"), now: T0)
        _ = try j.trackEnded(uri: uri("x"), now: T0 + 200)
        XCTAssertRequested(try j.request(user: "u2", track: track("x"), now: T0 + 200 + 2 * 3600), track("x"), by: "u2",
                       "exactly the window's length later, it is allowed again")
    }

    func testOffByDefault() throws {
        var j = try jukebox(["a"])
        XCTAssertEqual(j.settings.noRepeatHours, 0)
        _ = try j.request(user: "u1", track: track("x"), now: T0)
        _ = try j.trackEnded(uri: uri("x"), now: T0 + 200)
        XCTAssertRequested(try j.request(user: "u1", track: track("x"), now: T0 + 201), track("x"), by: "u1")
    }

    func testOneHourWindowIsNamedInTheSingular() throws {
        var j = try jukebox(["a"], settings: VenueSettings(noRepeatHours: 1))
        _ = try j.trackEnded(uri: uri("a"), now: T0 + 10)
        let e = jukeboxError(try j.request(user: "u1", track: track("a"), now: T0 + 20))
        XCTAssertEqual(e?.code, "conflict")
        XCTAssertTrue(e?.message.contains("1 hour ") ?? false, e?.message ?? "")
    }
}
