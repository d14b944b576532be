import HubbubTestSupport
import Realtime
import XCTest

/// UC1–UC4 and the account rules, end to end over `/ws`.
final class AccountUseCaseTests: XCTestCase {
    var server: TestServer!

    override func setUp() async throws { server = try TestServer() }
    override func tearDown() async throws { server.stop() }

    private func signup(_ c: ProtocolClient, _ name: String) async throws -> (id: String, token: String) {
        let r = try await c.ok("account.signup", ["username": .string(name), "email": .string("\(name)@example.com"),
                                                  "password": "secret123"])
        return (r["user"]?["id"]?.string ?? "", r["token"]?.string ?? "")
    }

    func testUC2SignUpThenUC1LogInByUsernameOrEmail() async throws {
        let c = try await ProtocolClient(url: server.url)
        let (id, token) = try await signup(c, "alice")
        XCTAssertTrue(id.hasPrefix("u"))
        XCTAssertFalse(token.isEmpty)
        let byName = try await c.ok("account.login", ["login": "alice", "password": "secret123"])
        XCTAssertEqual(byName["user"]?["id"]?.string, id)
        let byEmail = try await c.ok("account.login", ["login": "ALICE@example.com", "password": "secret123"])
        XCTAssertEqual(byEmail["user"]?["username"]?.string, "alice")
    }

    func testUC1WrongCredentialsAreRefusedAlike() async throws {
        let c = try await ProtocolClient(url: server.url)
        _ = try await signup(c, "bob")
        let wrongPassword = try await c.call("account.login", ["login": "bob", "password": "nope12345"])
        let unknownUser = try await c.call("account.login", ["login": "nobody", "password": "secret123"])
        XCTAssertEqual(wrongPassword["error"]?["code"]?.string, "unauthorized")
        XCTAssertEqual(wrongPassword["error"], unknownUser["error"], "no hint whether the user exists")
    }

    func testUC2ExtensionsTakenNamesMismatchedPasswordsAndRules() async throws {
        let c = try await ProtocolClient(url: server.url)
        _ = try await signup(c, "carol")
        let takenName = try await c.call("account.signup", ["username": "Carol", "email": "other@example.com", "password": "secret123"])
        XCTAssertEqual(takenName["error"]?["code"]?.string, "conflict")
        XCTAssertTrue(takenName["error"]?["message"]?.string?.contains("username") ?? false)
        let takenEmail = try await c.call("account.signup", ["username": "carol2", "email": "CAROL@example.com", "password": "secret123"])
        XCTAssertEqual(takenEmail["error"]?["code"]?.string, "conflict")
        XCTAssertTrue(takenEmail["error"]?["message"]?.string?.contains("email") ?? false)
        let mismatch = try await c.call("account.signup", ["username": "dave", "email": "dave@example.com", "password": "secret123",
                                                           "passwordConfirmation": "secret124"])
        XCTAssertEqual(mismatch["error"]?["code"]?.string, "bad_request")
        XCTAssertTrue(mismatch["error"]?["message"]?.string?.contains("passwordConfirmation") ?? false)
        let weak = try await c.call("account.signup", ["username": "erin", "email": "erin@example.com", "password": "short"])
        XCTAssertTrue(weak["error"]?["message"]?.string?.contains("password") ?? false)
        let badEmail = try await c.call("account.signup", ["username": "frank", "email": "not-an-email", "password": "secret123"])
        XCTAssertTrue(badEmail["error"]?["message"]?.string?.contains("email") ?? false)
        let missing = try await c.call("account.signup", ["username": "gina", "password": "secret123"])
        XCTAssertEqual(missing["error"]?["message"]?.string, "missing field email")
    }

    func testUC2SocialInfoAndUC4EditOwnProfileOnly() async throws {
        let a = try await ProtocolClient(url: server.url)
        let (aliceID, _) = try await signup(a, "alice")
        _ = try await a.ok("account.login", ["login": "alice", "password": "secret123"])
        let updated = try await a.ok("profile.update", ["spotify": "alice-sp", "twitter": "@alice", "favoriteArtists": ["Blur"]])
        XCTAssertEqual(updated["profile"]?["spotify"]?.string, "alice-sp")
        XCTAssertEqual(updated["profile"]?["favoriteArtists"], ["Blur"])
        let b = try await ProtocolClient(url: server.url)
        _ = try await signup(b, "bob")
        _ = try await b.ok("account.login", ["login": "bob", "password": "secret123"])
        let seen = try await b.ok("profile.get", ["user": .string(aliceID)])
        XCTAssertEqual(seen["profile"]?["twitter"]?.string, "@alice")
        let edit = try await b.errorCode("profile.update", ["user": .string(aliceID), "spotify": "hijack"])
        XCTAssertEqual(edit, "forbidden")
        let again = try await a.ok("profile.get")
        XCTAssertEqual(again["profile"]?["spotify"]?.string, "alice-sp")
    }

    func testWithoutAuthOnlySignupLoginAndAuthWork() async throws {
        let c = try await ProtocolClient(url: server.url)
        let everyOp = ["profile.get", "profile.update", "account.logout", "account.delete", "venue.register", "venue.get", "venue.update",
                       "venue.remove", "venue.search", "venue.nearby", "venue.checkin", "venue.owner.add", "user.checkins", "user.votes",
                       "user.requests", "subscribe", "unsubscribe", "venue.playlist.set", "venue.playlist.get", "venue.playlist.reset",
                       "venue.playlist.clearVotes", "venue.playlist.remove", "venue.explicit.set", "venue.settings.set", "venue.vote",
                       "venue.unvote", "venue.request", "venue.track.voters", "venue.nowPlaying", "venue.track.ended"]
        for op in everyOp {
            let code = try await c.errorCode(op, ["spotify": "x"])
            XCTAssertEqual(code, "unauthorized", op)
        }
        let unknown = try await c.call("no.such.op")
        XCTAssertEqual(unknown["error"]?["message"]?.string, "unknown op no.such.op")
    }

    func testAuthOnAFreshConnectionAndUC3LogOutRevokesTheToken() async throws {
        let a = try await ProtocolClient(url: server.url)
        let (id, token) = try await signup(a, "henry")
        let b = try await ProtocolClient(url: server.url)
        let authed = try await b.ok("auth", ["token": .string(token)])
        XCTAssertEqual(authed["user"]?["id"]?.string, id)
        _ = try await b.ok("profile.get")
        _ = try await b.ok("account.logout")
        let after = try await b.errorCode("profile.get")
        XCTAssertEqual(after, "unauthorized")
        let c = try await ProtocolClient(url: server.url)
        let reuse = try await c.call("auth", ["token": .string(token)])
        XCTAssertEqual(reuse["error"]?["code"]?.string, "unauthorized")
        let forged = try await c.call("auth", ["token": .string(token.dropLast(2) + "xx")])
        XCTAssertEqual(forged["error"]?["code"]?.string, "unauthorized")
    }

    func testAccountDeletionRemovesPersonalDataAndLogin() async throws {
        let c = try await ProtocolClient(url: server.url)
        let (id, _) = try await signup(c, "ivy")
        _ = try await c.ok("account.login", ["login": "ivy", "password": "secret123"])
        _ = try await c.ok("profile.update", ["spotify": "ivy-sp"])
        _ = try await c.ok("account.delete")
        let login = try await c.errorCode("account.login", ["login": "ivy", "password": "secret123"])
        XCTAssertEqual(login, "unauthorized")
        let d = try await ProtocolClient(url: server.url)
        _ = try await signup(d, "jack")
        _ = try await d.ok("account.login", ["login": "jack", "password": "secret123"])
        let gone = try await d.errorCode("profile.get", ["user": .string(id)])
        XCTAssertEqual(gone, "not_found")
        // The name is free again: personal data is really gone.
        _ = try await signup(d, "ivy")
    }

    func testMalformedRequestsGetOneClearReplyEach() async throws {
        let c = try await ProtocolClient(url: server.url)
        c.sendRaw("{not json")
        let r1 = try await c.reply(nil)
        XCTAssertEqual(r1["error"]?["code"]?.string, "bad_request")
        c.sendRaw(#"{"id":5,"op":"account.login","args":{"login":7,"password":"x"}}"#)
        let r2 = try await c.reply(5)
        XCTAssertEqual(r2["error"]?["message"]?.string, "field login must be a string")
    }

    func testAccountsSurviveARestart() async throws {
        let dir = server.configuration.dataDir
        let c = try await ProtocolClient(url: server.url)
        let (id, token) = try await signup(c, "kate")
        server.stop()
        server = try TestServer(dataDir: dir)
        let d = try await ProtocolClient(url: server.url)
        let authed = try await d.ok("auth", ["token": .string(token)])
        XCTAssertEqual(authed["user"]?["id"]?.string, id, "the token key and the account persist")
        _ = try await d.ok("account.login", ["login": "kate", "password": "secret123"])
    }
}
