import Accounts
import HubbubTestSupport
import Realtime
import WebSocket
import XCTest

/// Accounts against an attacker, end to end over `/ws`: guessing limits across connections and
/// addresses (127.0.0.1 attacks, 127.0.0.2 is the owner elsewhere), revocation on every
/// connection at once, privacy of a user's lists, aliases.
final class AccountSecurityTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func signup(_ c: ProtocolClient, _ name: String, password: String = "secret123") async throws -> (id: String, token: String) {
        let r = try await c.ok("account.signup", ["username": .string(name), "email": .string("\(name)@example.com"),
                                                  "password": .string(password)])
        return (r["user"]?["id"]?.string ?? "", r["token"]?.string ?? "")
    }

    private func login(_ name: String, _ password: String, from address: String = "127.0.0.1") async throws -> JSON {
        let c = try await ProtocolClient(url: server.url, from: address)
        defer { c.close() }
        return try await c.call("account.login", ["login": .string(name), "password": .string(password)])
    }

    private func authed(_ token: String) async throws -> ProtocolClient {
        let c = try await ProtocolClient(url: server.url)
        _ = try await c.ok("auth", ["token": .string(token)])
        return c
    }

    // MARK: Guessing

    func testGuessesOverManyConnectionsAreThrottledAndTheOwnerStillGetsIn() async throws {
        _ = try await signup(try await ProtocolClient(url: server.url), "owner")
        // 300 guesses over 30 connections from one address, all at once.
        var evaluated = 0, refused = 0
        let url = server.url
        try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for connection in 0..<30 {
                group.addTask {
                    let c = try await ProtocolClient(url: url)
                    defer { c.close() }
                    var e = 0, r = 0
                    for guess in 0..<10 {
                        let reply = try await c.call("account.login", ["login": "owner", "password": .string("guess\(connection)x\(guess)")])
                        switch reply["error"]?["code"]?.string {
                        case "unauthorized": e += 1
                        case "rate_limited":
                            r += 1
                            XCTAssertGreaterThan(reply["error"]?["retryAfterMs"]?.int ?? 0, 0, "a refusal says how long to wait")
                        default: XCTFail("unexpected reply \(reply.encoded)")
                        }
                    }
                    return (e, r)
                }
            }
            for try await (e, r) in group {
                evaluated += e
                refused += r
            }
        }
        // Five free failures, then a wait that doubles from 1 s: a slow machine may fit one or two more.
        XCTAssertGreaterThanOrEqual(evaluated, 5)
        XCTAssertLessThanOrEqual(evaluated, 8, "guesses were evaluated past the account's limit")
        XCTAssertEqual(evaluated + refused, 300)
        // The right password from the attacking address waits like any guess: it is not even checked.
        let attackerRight = try await login("owner", "secret123")
        XCTAssertEqual(attackerRight["error"]?["code"]?.string, "rate_limited")
        // The owner, from another address, gets in at once.
        let owner = try await login("owner", "secret123", from: "127.0.0.2")
        XCTAssertEqual(owner["ok"], .bool(true), owner.encoded)
    }

    func testOneAddressHasABudgetOfFailuresAcrossAccounts() async throws {
        server.stop()
        server = try TestServer { $0.domainSettings[AccountsDomain.addressFailuresPerHour] = 6 }
        let setup = try await ProtocolClient(url: server.url)
        for name in ["ann", "ben", "cid"] { _ = try await signup(setup, name) }
        // Spraying: two guesses per account stay under each account's limit but spend the address's budget.
        for name in ["ann", "ben", "cid"] {
            for _ in 0..<2 { let code = try await login(name, "wrong1234")["error"]?["code"]?.string; XCTAssertEqual(code, "unauthorized") }
        }
        let spent = try await login("ann", "secret123")
        XCTAssertEqual(spent["error"]?["code"]?.string, "rate_limited")
        XCTAssertTrue(spent["error"]?["message"]?.string?.contains("address") ?? false, spent.encoded)
        XCTAssertGreaterThan(spent["error"]?["retryAfterMs"]?.int ?? 0, 0)
        let elsewhere = try await login("ann", "secret123", from: "127.0.0.2")["ok"]
        XCTAssertEqual(elsewhere, .bool(true))
    }

    func testSignupsPerAddressAreLimited() async throws {
        server.stop()
        server = try TestServer { $0.domainSettings[AccountsDomain.signupsPerAddressPerHour] = 2 }
        let c = try await ProtocolClient(url: server.url)
        _ = try await signup(c, "first")
        _ = try await signup(c, "second")
        let third = try await c.call("account.signup", ["username": "third", "email": "third@example.com", "password": "secret123"])
        XCTAssertEqual(third["error"]?["code"]?.string, "rate_limited")
        XCTAssertGreaterThan(third["error"]?["retryAfterMs"]?.int ?? 0, 0)
        let elsewhere = try await ProtocolClient(url: server.url, from: "127.0.0.2")
        _ = try await signup(elsewhere, "third")
    }

    // MARK: Revocation

    func testLogoutEndsEveryConnectionOfThatTokenOnly() async throws {
        let a = try await ProtocolClient(url: server.url)
        let (_, token) = try await signup(a, "henry")
        let other = try await login("henry", "secret123")["result"]?["token"]?.string ?? ""
        let b = try await authed(token), c = try await authed(token), keep = try await authed(other)
        _ = try await a.ok("account.logout")
        let codeB = try await b.closeCode(within: 1), codeC = try await c.closeCode(within: 1)
        XCTAssertEqual(codeB, .policyViolation)
        XCTAssertEqual(codeC, .policyViolation)
        let signedOut = try await a.errorCode("profile.get")
        XCTAssertEqual(signedOut, "unauthorized", "the caller stays connected, signed out")
        _ = try await keep.ok("profile.get") // another token of the account is not touched
        let again = try await ProtocolClient(url: server.url)
        let reused = try await again.errorCode("auth", ["token": .string(token)])
        XCTAssertEqual(reused, "unauthorized")
    }

    func testDeleteEndsEveryConnectionOfTheAccount() async throws {
        let a = try await ProtocolClient(url: server.url)
        let (_, token) = try await signup(a, "ivy")
        let other = try await login("ivy", "secret123")["result"]?["token"]?.string ?? ""
        let b = try await authed(token), c = try await authed(other)
        _ = try await a.ok("account.delete")
        let codeB = try await b.closeCode(within: 1), codeC = try await c.closeCode(within: 1)
        XCTAssertEqual(codeB, .policyViolation)
        XCTAssertEqual(codeC, .policyViolation)
        let again = try await ProtocolClient(url: server.url)
        let reused = try await again.errorCode("auth", ["token": .string(other)])
        XCTAssertEqual(reused, "unauthorized")
    }

    func testPasswordChangeRevokesEveryOtherTokenAndSurvivesARestart() async throws {
        let a = try await ProtocolClient(url: server.url)
        let (_, first) = try await signup(a, "jane")
        let second = try await login("jane", "secret123")["result"]?["token"]?.string ?? ""
        let b = try await authed(first), c = try await authed(second)
        let wrongOld = try await a.errorCode("account.password", ["old": "wrong1234", "new": "better456"])
        XCTAssertEqual(wrongOld, "unauthorized")
        let weakNew = try await a.errorCode("account.password", ["old": "secret123", "new": "short"])
        XCTAssertEqual(weakNew, "bad_request")
        let changed = try await a.ok("account.password", ["old": "secret123", "new": "better456"])
        let fresh = changed["token"]?.string ?? ""
        XCTAssertFalse(fresh.isEmpty)
        let codeB = try await b.closeCode(within: 1), codeC = try await c.closeCode(within: 1)
        XCTAssertEqual(codeB, .policyViolation)
        XCTAssertEqual(codeC, .policyViolation)
        _ = try await a.ok("profile.get") // the caller goes on with the fresh token
        let oldPassword = try await login("jane", "secret123")["error"]?["code"]?.string
        XCTAssertEqual(oldPassword, "unauthorized")
        let newPassword = try await login("jane", "better456")["ok"]
        XCTAssertEqual(newPassword, .bool(true))

        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir)
        let d = try await ProtocolClient(url: server.url)
        for old in [first, second] { let code = try await d.errorCode("auth", ["token": .string(old)]); XCTAssertEqual(code, "unauthorized") }
        _ = try await d.ok("auth", ["token": .string(fresh)])
    }

    func testLogoutSurvivesARestart() async throws {
        let a = try await ProtocolClient(url: server.url)
        let (_, token) = try await signup(a, "kim")
        _ = try await a.ok("account.logout")
        let dir = server.configuration.dataDir
        server.stop()
        server = try TestServer(dataDir: dir)
        let b = try await ProtocolClient(url: server.url)
        let reused = try await b.errorCode("auth", ["token": .string(token)])
        XCTAssertEqual(reused, "unauthorized")
    }

    // MARK: Privacy and aliases

    func testHiddenListsAreRefusedToOthersAndShownToTheOwner() async throws {
        let owner = try await ProtocolClient(url: server.url)
        _ = try await signup(owner, "venueowner")
        let venue = try await owner.ok("venue.register", ["name": "The Bar", "address": "1 Main St", "postcode": "1000",
                                                          "city": "Town", "country": "NL", "lat": 52.0, "lon": 4.0])
        let venueID = venue["venue"]?["id"]?.string ?? ""
        _ = try await owner.ok("venue.playlist.set", ["venue": .string(venueID), "playlistUri": "spotify:playlist:p", "creator": "dj",
                                                      "tracks": [["uri": "spotify:track:1", "title": "One", "artist": "A"]]])
        let bob = try await ProtocolClient(url: server.url)
        let (bobID, _) = try await signup(bob, "bob")
        _ = try await bob.ok("venue.checkin", ["venue": .string(venueID)])
        _ = try await bob.ok("venue.vote", ["venue": .string(venueID), "track": "spotify:track:1"])
        let set = try await bob.ok("profile.update", ["privacy": ["checkins": "nobody", "votes": "nobody"]])
        XCTAssertEqual(set["profile"]?["privacy"]?["checkins"]?.string, "nobody")
        XCTAssertEqual(set["profile"]?["privacy"]?["requests"]?.string, "everyone")

        let alice = try await ProtocolClient(url: server.url)
        _ = try await signup(alice, "alice")
        let checkins = try await alice.errorCode("user.checkins", ["user": .string(bobID)])
        XCTAssertEqual(checkins, "forbidden")
        let votes = try await alice.errorCode("user.votes", ["user": .string(bobID)])
        XCTAssertEqual(votes, "forbidden")
        _ = try await alice.ok("user.requests", ["user": .string(bobID)])
        let privacy = try await alice.ok("profile.get", ["user": .string(bobID)])["profile"]?["privacy"]
        XCTAssertNil(privacy, "privacy settings are the owner's")
        let voters = try await alice.ok("venue.track.voters", ["venue": .string(venueID), "track": "spotify:track:1"])
        XCTAssertEqual(voters["voters"], [])
        XCTAssertEqual(voters["hiddenVoters"]?.int, 1)

        let ownCheckins = try await bob.ok("user.checkins")["checkins"]?.items.count
        XCTAssertEqual(ownCheckins, 1)
        let ownVotes = try await bob.ok("user.votes", ["user": .string(bobID)])["votes"]?.items.count
        XCTAssertEqual(ownVotes, 1)
        let ownVote = try await bob.ok("venue.track.voters", ["venue": .string(venueID), "track": "spotify:track:1"])["voters"]
        XCTAssertEqual(ownVote, [.string(bobID)])

        let badAudience = try await bob.errorCode("profile.update", ["privacy": ["votes": "friends"]])
        XCTAssertEqual(badAudience, "bad_request")
        let unknownList = try await bob.call("profile.update", ["privacy": ["email": "nobody"]])
        XCTAssertTrue(unknownList["error"]?["message"]?.string?.contains("privacy.email") ?? false, unknownList.encoded)
        _ = try await bob.ok("profile.update", ["privacy": ["votes": "everyone"]])
        let votesShown = try await alice.ok("user.votes", ["user": .string(bobID)])["votes"]?.items.count
        XCTAssertEqual(votesShown, 1)
    }

    func testHiddenVotesAndRequestsAreNamelessInTheVenueRoom() async throws {
        let owner = try await ProtocolClient(url: server.url)
        _ = try await signup(owner, "barowner")
        let venue = try await owner.ok("venue.register", ["name": "The Pub", "address": "2 Main St", "postcode": "1000",
                                                          "city": "Town", "country": "NL", "lat": 52.0, "lon": 4.0])
        let venueID = venue["venue"]?["id"]?.string ?? ""
        _ = try await owner.ok("venue.playlist.set", ["venue": .string(venueID), "playlistUri": "spotify:playlist:p", "creator": "dj",
                                                      "tracks": [["uri": "spotify:track:1", "title": "One", "artist": "A"],
                                                                 ["uri": "spotify:track:2", "title": "Two", "artist": "B"]]])
        let watcher = try await ProtocolClient(url: server.url)
        _ = try await signup(watcher, "watcher")
        _ = try await watcher.ok("subscribe", ["room": .string("venue:\(venueID)")])
        let shy = try await ProtocolClient(url: server.url)
        let (shyID, _) = try await signup(shy, "shy")
        _ = try await shy.ok("profile.update", ["privacy": ["votes": "nobody", "requests": "nobody"]])
        _ = try await shy.ok("venue.vote", ["venue": .string(venueID), "track": "spotify:track:2"])
        _ = try await shy.ok("venue.request", ["venue": .string(venueID), "track": ["uri": "spotify:track:3", "title": "Three", "artist": "C"]])
        let pushes = try await watcher.waitForPushes(3)
        XCTAssertFalse(pushes.map(\.encoded).joined().contains(shyID), "the room never names a user who hides: \(pushes.map(\.encoded))")
        let requested = pushes.first { $0["event"]?.string == "track.requested" }
        XCTAssertEqual(requested?["data"]?["by"], .null)
        let snapshot = try await watcher.ok("venue.playlist.get", ["venue": .string(venueID)])
        XCTAssertFalse(snapshot.encoded.contains(shyID), snapshot.encoded)
    }

    func testAliasIsShownAndFallsBackToTheUsername() async throws {
        let c = try await ProtocolClient(url: server.url)
        let (id, _) = try await signup(c, "traveller")
        let alias = try await c.ok("profile.get")["profile"]?["alias"]?.string
        XCTAssertEqual(alias, "traveller")
        _ = try await c.ok("profile.update", ["alias": "  Road Runner "])
        let other = try await ProtocolClient(url: server.url)
        _ = try await signup(other, "someone")
        let seen = try await other.ok("profile.get", ["user": .string(id)])["profile"]
        XCTAssertEqual(seen?["alias"]?.string, "Road Runner")
        XCTAssertNil(seen?["email"], "nobody sees another user's email")
        let tooLong = try await c.errorCode("profile.update", ["alias": .string(String(repeating: "x", count: 41))])
        XCTAssertEqual(tooLong, "bad_request")
        _ = try await c.ok("profile.update", ["alias": ""])
        let aliasReset = try await other.ok("profile.get", ["user": .string(id)])["profile"]?["alias"]?.string
        XCTAssertEqual(aliasReset, "traveller")
    }
}
