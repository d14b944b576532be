import Accounts
import DomainSeam
import Foundation
import HubbubServer
import HubbubTestSupport
import Realtime
import XCTest

/// Three nodes on one PostgreSQL (`HB_TEST_POSTGRES`, set by scripts/test-postgres.sh), in
/// this process on loopback ports: any client on any node sees one service.
final class ClusterTests: XCTestCase {
    var nodes: [TestServer] = []

    override func setUp() async throws {
        nodes = try await startNodes()
    }

    /// Three nodes on a fresh database of the test cluster, once each is healthy (it renewed its
    /// leases and hears the others' commits and events, as a load balancer would wait for);
    /// `configure` adds to each node's settings.
    func startNodes(clock: WallClock = .system, _ configure: (inout HubbubConfiguration) -> Void = { _ in }) async throws -> [TestServer] {
        guard let cluster = ProcessInfo.processInfo.environment["HB_TEST_POSTGRES"], !cluster.isEmpty else {
            XCTFail("ClusterTests need PostgreSQL: run scripts/test-postgres.sh (it starts one and sets HB_TEST_POSTGRES)")
            throw TestError("no HB_TEST_POSTGRES")
        }
        let url = try TestPostgres.database(for: "cluster-\(UUID().uuidString)", in: cluster)
        let started = try (0..<3).map { _ in
            try TestServer(clock: clock) { c in
                c.database.url = url
                c.cluster.leaseSeconds = 3
                // After the free failures an account waits this long: long enough to check every node.
                c.domainSettings[AccountsDomain.failureDelayMs] = 60_000
                configure(&c)
            }
        }
        for n in started {
            let healthy = try await eventually(timeout: 20, every: .milliseconds(50)) { try n.api("GET", "/healthz", key: nil).status == 200 }
            guard healthy else { throw TestError("a node did not become healthy in 20 s") }
        }
        return started
    }

    override func tearDown() async throws {
        for n in nodes { n.stop() }
        nodes = []
    }

    private let bar: JSON = ["name": "Bar", "address": "1 St", "postcode": "1", "city": "C", "country": "X", "lat": 1, "lon": 2]

    private func tracks(_ n: Int) -> JSON {
        .array((1...n).map { ["uri": .string("t\($0)"), "title": .string("Song \($0)"), "artist": "Band"] })
    }

    /// A user signed up on one node and logged in on `node` (accounts are the shared database's).
    func login(_ name: String, on node: Int) async throws -> ProtocolClient {
        let c = try await ProtocolClient(url: nodes[node].url)
        _ = try await c.ok("account.login", ["login": .string(name), "password": "secret123"])
        return c
    }

    private func venue(tracks n: Int) async throws -> (owner: ProtocolClient, id: String) {
        let (owner, _) = try await nodes[0].user("owner")
        let id = try await owner.ok("venue.register", bar)["venue"]?["id"]?.string ?? ""
        _ = try await owner.ok("venue.playlist.set", ["venue": .string(id), "playlistUri": "p", "creator": "dj", "tracks": tracks(n)])
        return (owner, id)
    }

    /// A lease holds while its node's heartbeat does: past several lease lengths its room is still
    /// its node's (a vote through another node is answered by it), and the renewals meanwhile moved
    /// the node's row alone, never the lease's (its row version, `xmin`, is the claim's).
    func testALeaseHoldsByItsNodesHeartbeatAndRenewalsRewriteNoLeaseRow() async throws {
        let (_, v) = try await venue(tracks: 3)
        let url = nodes[0].configuration.database.url, room = "venue:\(v)"
        let claimed = try TestPostgres.query(url, "SELECT node || ' ' || xmin::text FROM cluster_lease WHERE shard = '\(room)'")
        XCTAssertEqual(claimed.count, 1)
        let holder = try nodes[0].api("GET", "/healthz", key: nil).json?["node"]?.string
        XCTAssertEqual(claimed.first?.split(separator: " ").first.map(String.init), holder, "the node that registered the venue holds it")
        try await Task.sleep(for: .seconds(7)) // more than two lease lengths (3 s), a renewal every second
        XCTAssertEqual(try TestPostgres.query(url, "SELECT node || ' ' || xmin::text FROM cluster_lease WHERE shard = '\(room)'"), claimed,
                       "no renewal rewrote the lease's row")
        let heartbeat = try TestPostgres.query(url, """
            SELECT (expires > EXTRACT(EPOCH FROM clock_timestamp()))::text FROM cluster_node WHERE id = '\(holder ?? "?")'
            """)
        XCTAssertEqual(heartbeat, ["true"], "its node's heartbeat holds")
        _ = try await nodes[1].user("voter")
        let voter = try await login("voter", on: 1)
        _ = try await voter.ok("venue.vote", ["venue": .string(v), "track": "t2"])
        XCTAssertEqual(try TestPostgres.query(url, "SELECT node FROM cluster_lease WHERE shard = '\(room)'"), [holder ?? "?"], "the room did not move")
    }

    /// Votes through A and B reach a patron on C, every push once, in seq order without gaps, and
    /// the queue the patron rebuilds from them is the one every node answers.
    func testVotesOnTwoNodesReachAPatronOnAThirdInOrder() async throws {
        let (_, v) = try await venue(tracks: 10)
        _ = try await nodes[2].user("patron")
        let patron = try await login("patron", on: 2)
        let sub = try await patron.ok("subscribe", ["room": .string("venue:\(v)")])
        let start = try XCTUnwrap(sub["seq"]?.int)
        var voters: [ProtocolClient] = []
        for i in 0..<6 {
            _ = try await nodes[i % 2].user("voter\(i)")
            voters.append(try await login("voter\(i)", on: i % 2))
        }
        var expected = 0
        for (i, voter) in voters.enumerated() {
            for t in [1 + i, 10 - i] {
                let r = try await voter.ok("venue.vote", ["venue": .string(v), "track": .string("t\(t)")])
                XCTAssertEqual(r["track"]?.string, "t\(t)")
                expected += 1
            }
        }
        // A vote pushes one event (track.moved or playlist.reordered).
        let pushes = try await patron.waitForPushes(expected)
        XCTAssertEqual(pushes.compactMap { $0["seq"]?.int }, Array((start + 1)...(start + expected)), "every push once, in order")
        XCTAssertEqual(Set(pushes.compactMap { $0["epoch"]?.string }), [sub["epoch"]?.string ?? ""])
        // Every node answers the same queue.
        var queues: [JSON] = []
        for n in 0..<3 {
            let c = try await login("patron", on: n)
            queues.append(try await c.ok("venue.playlist.get", ["venue": .string(v)])["playlist"] ?? .null)
        }
        XCTAssertEqual(queues[0], queues[1])
        XCTAssertEqual(queues[1], queues[2])
        // Each node says it reaches the database, and which node it is.
        var ids: Set<String> = []
        for n in nodes {
            let health = try n.api("GET", "/healthz", key: nil)
            XCTAssertEqual(health.status, 200)
            XCTAssertEqual(health.json?["database"]?.string, "reachable")
            ids.insert(health.json?["node"]?.string ?? "")
        }
        XCTAssertEqual(ids.count, 3)
    }

    /// A token from one node is good on the others (the key is the shared database's).
    func testATokenFromOneNodeWorksOnTheOthers() async throws {
        let (_, _) = try await nodes[0].user("roamer")
        let c = try await ProtocolClient(url: nodes[0].url)
        let token = try await c.ok("account.login", ["login": "roamer", "password": "secret123"])["token"]
        for n in nodes.dropFirst() {
            let other = try await ProtocolClient(url: n.url)
            let r = try await other.ok("auth", ["token": token ?? .null])
            XCTAssertEqual(r["user"]?["username"]?.string, "roamer")
        }
    }

    /// A log-out on one node ends the same token's connections on the others, and no node takes
    /// the token again.
    func testALogOutOnOneNodeHoldsOnEveryNode() async throws {
        _ = try await nodes[0].user("leaver")
        let a = try await ProtocolClient(url: nodes[0].url)
        let token = try await a.ok("account.login", ["login": "leaver", "password": "secret123"])["token"] ?? .null
        let b = try await ProtocolClient(url: nodes[1].url)
        _ = try await b.ok("auth", ["token": token])
        _ = try await a.ok("account.logout")
        let (code, _) = await b.ws.waitForClose()
        XCTAssertEqual(code, .policyViolation, "node B closed the connection signed in with the revoked token")
        let c = try await ProtocolClient(url: nodes[2].url)
        let refused = try await c.errorCode("auth", ["token": token])
        XCTAssertEqual(refused, "unauthorized")
    }

    /// Password guesses spread over the nodes count together: the account is throttled after the
    /// free failures whichever nodes they went to.
    func testGuessingLimitsHoldAcrossNodes() async throws {
        _ = try await nodes[0].user("target")
        var codes: [String?] = []
        for i in 0..<5 { // accounts.freeFailures is 5
            let c = try await ProtocolClient(url: nodes[i % 3].url)
            codes.append(try await c.errorCode("account.login", ["login": "target", "password": .string("wrong\(i)")]))
            try await Task.sleep(for: .milliseconds(300)) // the other nodes hear of it (milliseconds; more on a loaded machine)
        }
        XCTAssertEqual(codes, Array(repeating: "unauthorized", count: 5))
        try await Task.sleep(for: .seconds(1))
        for n in nodes {
            let c = try await ProtocolClient(url: n.url)
            let code = try await c.errorCode("account.login", ["login": "target", "password": "wrong"])
            XCTAssertEqual(code, "rate_limited", "every node counts the failures made on the others")
        }
    }

    /// Sign-ups from one address are counted on every node: the budget spent through A and B is
    /// spent on C as well (and another address still signs up).
    func testSignUpBudgetsHoldAcrossNodes() async throws {
        for n in nodes { n.stop() }
        nodes = try await startNodes { $0.domainSettings[AccountsDomain.signupsPerAddressPerHour] = 2 }
        func signup(_ name: String, on node: Int, from address: String = "127.0.0.1") async throws -> JSON {
            let c = try await ProtocolClient(url: nodes[node].url, from: address)
            return try await c.call("account.signup", ["username": .string(name), "email": .string("\(name)@example.com"), "password": "secret123"])
        }
        for (i, name) in ["first", "second"].enumerated() {
            let reply = try await signup(name, on: i)
            XCTAssertEqual(reply["ok"], .bool(true), "\(reply)")
            try await Task.sleep(for: .milliseconds(300)) // the other nodes hear of it
        }
        let third = try await signup("third", on: 2)
        XCTAssertEqual(third["error"]?["code"]?.string, "rate_limited", "node C counts the sign-ups made through A and B")
        let elsewhere = try await signup("third", on: 2, from: "127.0.0.2")
        XCTAssertEqual(elsewhere["ok"], .bool(true), "\(elsewhere)")
    }

    /// Who hides their votes is known on every node: a vote through another node than the one
    /// where the user hid them shows no name in the push.
    func testPrivacySetOnOneNodeHoldsOnTheOthers() async throws {
        let (_, v) = try await venue(tracks: 3) // node 0 owns the venue
        _ = try await nodes[2].user("shy")
        let shy = try await login("shy", on: 2)
        _ = try await shy.ok("profile.update", ["privacy": ["votes": "nobody"]])
        try await Task.sleep(for: .milliseconds(300))
        _ = try await nodes[1].user("watcher")
        let watcher = try await login("watcher", on: 1)
        _ = try await watcher.ok("subscribe", ["room": .string("venue:\(v)")])
        _ = try await shy.ok("venue.vote", ["venue": .string(v), "track": "t3"])
        let push = try await watcher.waitForPushes(1).last
        XCTAssertEqual(push?["data"]?["cause"]?["by"], .null, "the owner node knows shy hides their votes: \(push?.encoded ?? "")")
    }

    /// The same vote sent through two nodes at once counts once: one `ok`, one `conflict`.
    func testADoubleVoteThroughTwoNodesCountsOnce() async throws {
        let (_, v) = try await venue(tracks: 3)
        _ = try await nodes[1].user("twice")
        let a = try await login("twice", on: 1)
        let b = try await login("twice", on: 2)
        async let first = a.call("venue.vote", ["venue": .string(v), "track": "t2"])
        async let second = b.call("venue.vote", ["venue": .string(v), "track": "t2"])
        let replies = try await [first, second]
        XCTAssertEqual(replies.filter { $0["ok"] == .bool(true) }.count, 1, "\(replies.map(\.encoded))")
        XCTAssertEqual(replies.compactMap { $0["error"]?["code"]?.string }, ["conflict"])
        let voters = try await a.ok("venue.track.voters", ["venue": .string(v), "track": "t2"])
        XCTAssertEqual(voters["voters"]?.items.count, 1)
    }

    /// A patron leaves node B and comes back on node C with `since`: exactly the pushes it missed.
    func testAClientMovesBetweenNodesWithSinceAndMissesNothing() async throws {
        let (owner, v) = try await venue(tracks: 5)
        _ = try await nodes[1].user("mover")
        let onB = try await login("mover", on: 1)
        let sub = try await onB.ok("subscribe", ["room": .string("venue:\(v)")])
        _ = try await owner.ok("venue.vote", ["venue": .string(v), "track": "t3"])
        let seen = try await onB.waitForPushes(1)
        let last = try XCTUnwrap(seen.last?["seq"]?.int)
        onB.close()
        // Missed: votes through A and C, and a check-in through B.
        _ = try await owner.ok("venue.vote", ["venue": .string(v), "track": "t5"])
        _ = try await nodes[2].user("other")
        let other = try await login("other", on: 2)
        _ = try await other.ok("venue.vote", ["venue": .string(v), "track": "t4"])
        let checker = try await login("other", on: 1)
        _ = try await checker.ok("venue.checkin", ["venue": .string(v)])
        let onC = try await login("mover", on: 2)
        let back = try await onC.ok("subscribe", ["room": .string("venue:\(v)"), "since": ["seq": .int(last), "epoch": sub["epoch"]!]])
        XCTAssertEqual(back["recovered"], .bool(true))
        let missed = try await onC.waitForPushes(3)
        XCTAssertEqual(missed.compactMap { $0["seq"]?.int }, [last + 1, last + 2, last + 3])
        XCTAssertEqual(missed.last?["event"]?.string, "presence.changed")
        XCTAssertEqual(missed.last?["data"]?["checkedIn"]?.int, 1)
        // And it keeps getting what follows.
        _ = try await other.ok("venue.vote", ["venue": .string(v), "track": "t1"])
        let next = try await onC.waitForPushes(4)
        XCTAssertEqual(next.last?["seq"]?.int, last + 4)
    }

    /// A node stopped gracefully gives its rooms back: the others take them at once and nothing
    /// acknowledged is lost.
    func testAStoppedOwnerHandsItsRoomsToTheOthers() async throws {
        let (owner, v) = try await venue(tracks: 4) // node 0 owns the venue (it set the playlist)
        _ = try await owner.ok("venue.vote", ["venue": .string(v), "track": "t4"])
        _ = try await nodes[2].user("late")
        let late = try await login("late", on: 2)
        let sub = try await late.ok("subscribe", ["room": .string("venue:\(v)")])
        nodes[0].stop()
        let voter = try await login("late", on: 1)
        let r = try await voter.ok("venue.vote", ["venue": .string(v), "track": "t3"])
        XCTAssertEqual(r["votes"]?.int, 1)
        let pushes = try await late.waitForPushes(1)
        XCTAssertEqual(pushes.last?["seq"]?.int, (sub["seq"]?.int ?? -1) + 1)
        XCTAssertEqual(pushes.last?["epoch"], sub["epoch"], "the room's log carries on")
        let queue = try await voter.ok("venue.playlist.get", ["venue": .string(v)])
        let votes = Dictionary((queue["playlist"]?["tracks"]?.items ?? []).map { ($0["track"]?["uri"]?.string ?? "", $0["votes"]?.int ?? -1) },
                               uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(votes["t4"], 1, "the vote acknowledged by the stopped node is there")
        XCTAssertEqual(votes["t3"], 1)
    }
}
