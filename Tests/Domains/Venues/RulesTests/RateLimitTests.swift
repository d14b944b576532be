import Venues
import XCTest

final class RateLimitTests: XCTestCase {
    private func many(_ n: Int) -> [String] { (0..<n).map { "t\($0)" } }

    func testVotesPerHourWithExactRetryAfterAtTheWindowEdges() throws {
        var j = try jukebox(many(10), settings: VenueSettings(votesPerUserPerHour: 3))
        _ = try j.vote(user: "u1", uri: uri("t0"), now: T0)
        _ = try j.vote(user: "u1", uri: uri("t1"), now: T0 + 10)
        _ = try j.vote(user: "u1", uri: uri("t2"), now: T0 + 20)
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("t3"), now: T0 + 30), .rateLimited(retryAfterMs: 3_570_000))
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("t3"), now: T0 + 3599.999), .rateLimited(retryAfterMs: 1),
                              "one millisecond before the first vote leaves the window")
        XCTAssertMoved(try j.vote(user: "u2", uri: uri("t3"), now: T0 + 30), "limits are per user")
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("t3"), now: T0 + 3600),
                       "exactly one hour later the first vote no longer counts")
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("t4"), now: T0 + 3600), .rateLimited(retryAfterMs: 10_000),
                              "now the vote at +10 s is the oldest counted")
        XCTAssertEqual(j.voters(of: uri("t4")), [], "a refused vote is not applied")
    }

    func testRefusedAndTakenBackVotes() throws {
        var j = try jukebox(many(5), settings: VenueSettings(votesPerUserPerHour: 2))
        _ = try j.vote(user: "u1", uri: uri("t0"), now: T0)
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("t0"), now: T0 + 1), .conflict("you already voted for this track"))
        _ = try j.unvote(user: "u1", uri: uri("t0"))
        _ = try j.vote(user: "u1", uri: uri("t0"), now: T0 + 2)
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("t1"), now: T0 + 3), .rateLimited(retryAfterMs: 3_597_000),
                              "the conflict did not count, the taken-back vote did")
    }

    func testRequestsPerHourWithExactRetryAfter() throws {
        var j = try jukebox(["a"], settings: VenueSettings(requestsPerUserPerHour: 2))
        _ = try j.request(user: "u1", track: track("x"), now: T0 + 0.25)
        _ = try j.request(user: "u1", track: track("y"), now: T0 + 1.5)
        let e = jukeboxError(try j.request(user: "u1", track: track("z"), now: T0 + 2))
        XCTAssertEqual(e, .rateLimited(retryAfterMs: 3_598_250))
        XCTAssertEqual(e?.code, "rate_limited")
        XCTAssertEqual(e?.message, "too many votes or requests in the last hour; try again in 3599 seconds")
        XCTAssertFalse(j.contains(uri("z")))
        XCTAssertJukeboxError(try j.request(user: "u1", track: track("z"), now: T0 + 3600.249), .rateLimited(retryAfterMs: 1))
        XCTAssertRequested(try j.request(user: "u1", track: track("z"), now: T0 + 3600.25), track("z"), by: "u1")
        XCTAssertMoved(try j.vote(user: "u1", uri: uri("a"), now: T0 + 3600.25), "votes have their own window")
    }

    func testLoweringTheLimitCountsTheActionsAlreadyMade() throws {
        var j = try jukebox(many(6), settings: VenueSettings(votesPerUserPerHour: 5))
        for i in 0..<4 { _ = try j.vote(user: "u1", uri: uri("t\(i)"), now: T0 + Double(i)) }
        _ = try j.setSettings(VenueSettings(votesPerUserPerHour: 2))
        XCTAssertJukeboxError(try j.vote(user: "u1", uri: uri("t4"), now: T0 + 10), .rateLimited(retryAfterMs: 3_592_000),
                              "the oldest of the last 2 votes (at +2 s) must leave")
        XCTAssertJukeboxError(try j.setSettings(VenueSettings(votesPerUserPerHour: 0)),
                              .badRequest(field: "votesPerUserPerHour", message: "votesPerUserPerHour must be between 1 and 10000"))
    }

    func testWindowsStayBounded() throws {
        var j = try jukebox(many(100), settings: VenueSettings(votesPerUserPerHour: 5))
        // 2,000 guests, one vote each, 10 s apart (5.5 hours): idle guests are swept out.
        for i in 0..<2000 { _ = try j.vote(user: "g\(i)", uri: uri("t\(i % 100)"), now: T0 + Double(i) * 10) }
        XCTAssertLessThan(j.records.actions.count, 1_400)
        // One guest voting all night keeps at most its limit.
        var now = T0 + 20_000
        for i in 0..<100 {
            _ = try? j.vote(user: "night", uri: uri("t\(i)"), now: now)
            now += 900
        }
        XCTAssertLessThanOrEqual(j.records.actions.filter { $0.user == "night" }.count, 5)
        XCTAssertEqual(j.records.actions.filter { $0.user == "night" }.count, 4, "one vote per 15 minutes: 4 in the last hour")
    }
}
