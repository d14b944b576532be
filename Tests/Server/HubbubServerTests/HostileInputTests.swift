import HubbubClient
import HubbubTestSupport
import Realtime
import WebSocket
import XCTest

/// What an attacker without an account can make the server do stays small; what a caller
/// misspells is refused by name instead of ignored.
final class HostileInputTests: XCTestCase {
    private let bar: JSON = ["name": "Bar", "address": "Street 1", "postcode": "1", "city": "Town", "country": "FI", "lat": 60.1, "lon": 19.9]

    /// `{"id":1,"op":"auth","args":{"pad":"xxxx…"}}` of exactly `bytes` bytes.
    private func message(bytes: Int) -> String {
        let head = #"{"id":1,"op":"auth","args":{"token":"t","pad":""#, tail = #""}}"#
        return head + String(repeating: "x", count: bytes - head.utf8.count - tail.utf8.count) + tail
    }

    func testBeforeLogInOnlySmallMessagesAreTakenAfterItLargeOnesAre() async throws {
        let server = try TestServer { c in c.limits.maxMessageBytesBeforeLogin = 4096 }
        defer { server.stop() }
        let anonymous = try await ProtocolClient(url: server.url)
        anonymous.sendRaw(message(bytes: 4096))
        let atTheLimit = try await anonymous.reply(1)
        XCTAssertEqual(atTheLimit["error"]?["message"]?.string, "unknown field pad", "a message at the limit is answered")
        anonymous.sendRaw(message(bytes: 4097))
        let code = try await anonymous.closeCode(within: 5)
        XCTAssertEqual(code, .messageTooBig, "one byte over: closed with 1009")

        let (member, _) = try await server.user("member")
        member.sendRaw(message(bytes: 64 << 10))
        let answered = try await member.reply(1)
        XCTAssertEqual(answered["error"]?["code"]?.string, "bad_request", "logged in, 64 KiB is answered: \(answered)")
    }

    func testAConnectionSendingOnlyRefusedRequestsIsClosed() async throws {
        let server = try TestServer { c in c.rateLimits.abuseThreshold = 30 }
        defer { server.stop() }
        let c = try await ProtocolClient(url: server.url)
        for n in 0..<40 { c.sendRaw(n % 2 == 0 ? "not json" : #"{"id":1,"op":"no.such.op"}"#) }
        let code = try await c.closeCode(within: 10)
        XCTAssertEqual(code, .abuse, "malformed messages and unknown ops count as refusals")
        let other = try await ProtocolClient(url: server.url)
        let fine = try await other.call("auth", ["token": "bogus"])
        XCTAssertEqual(fine["error"]?["code"]?.string, "unauthorized", "others are served")
    }

    func testARequestBeyondTheJSONLimitsIsTooLarge() async throws {
        let server = try TestServer { c in
            c.limits.maxJsonKeysPerObject = 50
            c.limits.maxJsonValues = 500
        }
        defer { server.stop() }
        let (c, _) = try await server.user("keys")
        let keys = (0..<51).map { "\"k\($0)\":1" }.joined(separator: ",")
        c.sendRaw(#"{"id":5,"op":"profile.get","args":{"#+keys+"}}")
        let tooManyKeys = try await c.reply(nil)
        XCTAssertEqual(tooManyKeys["error"]?["code"]?.string, "too_large", "\(tooManyKeys)")
        XCTAssertTrue(tooManyKeys["error"]?["message"]?.string?.contains("more than 50 keys") ?? false, "\(tooManyKeys)")
        let values = (0..<500).map { _ in "0" }.joined(separator: ",")
        c.sendRaw(#"{"id":6,"op":"profile.get","args":{"user":["#+values+"]}}")
        let tooManyValues = try await c.reply(nil)
        XCTAssertEqual(tooManyValues["error"]?["code"]?.string, "too_large", "\(tooManyValues)")
    }

    func testAnUnknownArgumentIsRefusedNamingItAndTheNearestKnownOne() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let (owner, _) = try await server.user("owner")
        let venue = try await owner.ok("venue.register", bar)["venue"]?["id"]?.string ?? ""
        let misspelt = try await owner.call("venue.settings.set", ["venue": .string(venue), "votesPerUserPerHourr": 5])
        XCTAssertEqual(misspelt["error"]?["code"]?.string, "bad_request")
        XCTAssertEqual(misspelt["error"]?["message"]?.string, "unknown field votesPerUserPerHourr (did you mean votesPerUserPerHour?)")
        let settings = try await owner.ok("venue.settings.set", ["venue": .string(venue)])["settings"]
        XCTAssertEqual(settings?["votesPerUserPerHour"]?.int, 60, "the default still: nothing was set")
        let register = try await owner.call("venue.register", ["name": "B", "adress": "x"])
        XCTAssertTrue(register["error"]?["message"]?.string?.contains("address") ?? false, "\(register)")
        let noArgs = try await owner.call("account.logout", ["everywhere": true])
        XCTAssertEqual(noArgs["error"]?["message"]?.string, "unknown field everywhere", "an op without arguments takes none")
        let inside = try await owner.call("subscribe", ["room": .string("venue:\(venue)"), "since": ["seq": 1, "epoch": "e", "epok": "x"]])
        XCTAssertEqual(inside["error"]?["message"]?.string, "unknown field since.epok (did you mean since.epoch?)")
    }
}
