import Accounts
import Foundation
import HubbubTestSupport
import Realtime
import Storage
import XCTest

/// Password hashing at today's strength, on a bounded pool: full means `rate_limited` at once,
/// and a hash made with fewer iterations is redone at the next successful log-in.
final class PasswordsTests: XCTestCase {
    func testAFullPoolRefusesAtOnceWithTheWaitAndTakesJobsAgainOnceFreed() async throws {
        let passwords = Passwords(iterations: 1000, threads: 1, maxQueued: 1)
        var held: [Passwords.Slot] = [try passwords.admit(), try passwords.admit()] // one running, one waiting
        do {
            _ = try passwords.admit()
            XCTFail("a third job must be refused")
        } catch {
            XCTAssertGreaterThan(error.retryAfterMs, 0)
        }
        let (hash, salt, iterations) = await passwords.hash("secret123", in: held.removeLast())
        XCTAssertEqual(iterations, 1000)
        let ok = await passwords.verify("secret123", hash: hash, salt: salt, iterations: iterations, in: try passwords.admit())
        XCTAssertTrue(ok, "a finished job gives its place back")
        held.removeAll() // a place taken and never used is given back too
        let wrong = await passwords.verify("secret124", hash: hash, salt: salt, iterations: iterations, in: try passwords.admit())
        XCTAssertFalse(wrong)
        _ = try passwords.admit()
    }

    private func service(_ store: Store, iterations: Int) throws -> AccountService {
        var configuration = AccountService.Configuration()
        configuration.pbkdf2Iterations = iterations
        return try AccountService(store: store, secret: Array(repeating: 7, count: 32), configuration: configuration)
    }

    private func storedIterations(_ store: Store, _ user: String) throws -> Int? {
        try store.readNow { db in
            try SQLRow.fetchOne(db, sql: "SELECT password_iterations FROM user WHERE id = ?", arguments: [user])?["password_iterations"] as Int?
        }
    }

    /// Threads of this process named `hubbub-kdf-*` (Linux names a thread after `Thread.name`).
    private func kdfThreads() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { ((try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) ?? "").hasPrefix("hubbub-kdf") }.count
    }

    /// A pool whose owner goes away (a service stopped, a test's) ends its workers once they have
    /// nothing queued, even when they start after it went: no thread left behind, none touching
    /// freed memory.
    func testThePoolsWorkersEndWhenTheirOwnerGoes() async throws {
        let before = kdfThreads()
        var hashed: [Int] = []
        for round in 0..<20 {
            let passwords = Passwords(iterations: 1_000, threads: 2, maxQueued: 4)
            if round % 4 == 0 { hashed.append(await passwords.hash("pw", in: try passwords.admit()).hash.count) }
        }
        XCTAssertEqual(hashed, [32, 32, 32, 32, 32])
        var left = kdfThreads() - before
        await eventually(every: .milliseconds(10)) {
            left = kdfThreads() - before
            return left <= 0
        }
        XCTAssertEqual(left, 0, "every worker of the 20 pools ended")
    }

    func testAWeakerHashIsUpgradedAtTheNextLogIn() async throws {
        let store = try temporaryStore("hubbub-passwords", migrations: .of(AccountSchema.register)).store
        let old = try service(store, iterations: 1000)
        let (user, _) = try await old.signup(username: "ana", email: "ana@example.com", password: "secret123", confirmation: nil, from: "10.0.0.1")
        XCTAssertEqual(try storedIterations(store, user.id), 1000)

        let today = try service(store, iterations: 3000)
        do {
            _ = try await today.login("ana", password: "wrong-pass-1", from: "10.0.0.1")
            XCTFail("a wrong password logs no one in")
        } catch {}
        XCTAssertEqual(try storedIterations(store, user.id), 1000, "a failed log-in upgrades nothing")
        _ = try await today.login("ana", password: "secret123", from: "10.0.0.1")
        try await eventually(timeout: 10, every: .milliseconds(20)) { try storedIterations(store, user.id) == 3000 }
        XCTAssertEqual(try storedIterations(store, user.id), 3000, "upgraded after the log-in")
        _ = try await today.login("ana@example.com", password: "secret123", from: "10.0.0.1")
        do {
            _ = try await today.login("ana", password: "secret1234", from: "10.0.0.1")
            XCTFail("the upgraded hash still refuses a wrong password")
        } catch {
            XCTAssertEqual(error.code, .unauthorized)
        }
    }
}
