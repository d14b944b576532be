import HubbubClient
import HubbubTestSupport
import Realtime
import WebSocket
import XCTest

/// Per-session rate limits: `rate_limited` with `retryAfterMs`, then 4003 for gross abuse.
final class SessionLimitTests: XCTestCase {
    func testRateLimitedRepliesCarryTheWaitAndAbuseCloses4003() async throws {
        let server = try TestServer { c in
            c.rateLimits.authBurst = 3
            c.rateLimits.authPerSecond = 0.5
            c.rateLimits.abuseThreshold = 20
        }
        defer { server.stop() }
        let c = try await ProtocolClient(url: server.url)
        var limited: JSON?
        for _ in 0..<4 {
            let r = try await c.call("auth", ["token": "bogus"])
            if r["error"]?["code"]?.string == "rate_limited" { limited = r }
        }
        let wait = limited?["error"]?["retryAfterMs"]?.int ?? 0
        XCTAssertGreaterThan(wait, 0)
        XCTAssertLessThanOrEqual(wait, 2000, "one token comes back within 1/0.5 s")
        // Keep hammering: the connection is closed as abusive.
        for _ in 0..<40 { c.sendRaw(#"{"id":1,"op":"auth","args":{"token":"x"}}"#) }
        let (code, _) = await c.ws.waitForClose()
        XCTAssertEqual(code, .abuse)
        // Others are unaffected.
        let d = try await ProtocolClient(url: server.url)
        let fine = try await d.call("auth", ["token": "bogus"])
        XCTAssertEqual(fine["error"]?["code"]?.string, "unauthorized")
    }
}
