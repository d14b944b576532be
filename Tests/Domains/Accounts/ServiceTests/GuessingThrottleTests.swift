import Accounts
import XCTest

/// The guessing limits as a pure value, on a simulated clock.
final class GuessingThrottleTests: XCTestCase {
    func testTheAccountWaitGrowsAfterTheFreeFailures() {
        var t = GuessingThrottle()
        for i in 0..<5 {
            XCTAssertNil(t.check(account: "a", address: "10.0.0.1", now: Double(i)))
            t.failed(account: "a", address: "10.0.0.1", now: Double(i))
        }
        let first = t.check(account: "a", address: "10.0.0.1", now: 4.5)
        XCTAssertEqual(first?.rule, .account)
        XCTAssertEqual(first?.retryAfter ?? 0, 0.5, accuracy: 1e-9, "1 s after the fifth failure")
        XCTAssertNil(t.check(account: "a", address: "10.0.0.1", now: 5))
        t.failed(account: "a", address: "10.0.0.1", now: 5)
        XCTAssertEqual(t.check(account: "a", address: "10.0.0.1", now: 5)?.retryAfter ?? 0, 2, accuracy: 1e-9, "then 2 s")
        XCTAssertEqual(t.delay(after: 5 + 40), 900, "capped at maxDelay")
    }

    func testAnAddressThatNeverFailedIsNotHeldByTheAccountWait() {
        var t = GuessingThrottle()
        for i in 0..<20 { t.failed(account: "a", address: "10.0.0.1", now: Double(i) * 0.001) }
        XCTAssertNotNil(t.check(account: "a", address: "10.0.0.1", now: 1))
        XCTAssertNil(t.check(account: "a", address: "192.168.1.7", now: 1), "the owner elsewhere is evaluated")
        // Success takes the provisional failure back: the owner does not become a suspect.
        t.failed(account: "a", address: "192.168.1.7", now: 1)
        t.succeeded(account: "a", address: "192.168.1.7")
        XCTAssertNil(t.check(account: "a", address: "192.168.1.7", now: 1))
    }

    func testManyAddressesShareTheAccountWait() {
        let fromOne = GuessingThrottle.guessesEvaluated(fromAddresses: 1, inSeconds: 3600)
        let fromMany = GuessingThrottle.guessesEvaluated(fromAddresses: 100, inSeconds: 3600)
        print("guesses evaluated per account in one hour: from 1 address \(fromOne), from 100 addresses \(fromMany)")
        // 5 free, then waits of 1, 2, 4 … 512 s, then one per 900 s.
        XCTAssertLessThanOrEqual(fromOne, 20)
        // Each new address gets its first guess (the owner must not be locked out), then shares the wait.
        XCTAssertLessThanOrEqual(fromMany, 100 + 20)
    }

    func testAnAddressHasABudgetAcrossAccounts() {
        var configuration = GuessingThrottle.Configuration()
        configuration.addressFailuresPerHour = 10
        var t = GuessingThrottle(configuration: configuration)
        for i in 0..<10 {
            XCTAssertNil(t.check(account: "user\(i)", address: "10.0.0.1", now: 0))
            t.failed(account: "user\(i)", address: "10.0.0.1", now: 0)
        }
        let refusal = t.check(account: "fresh", address: "10.0.0.1", now: 0)
        XCTAssertEqual(refusal?.rule, .address)
        XCTAssertEqual(refusal?.retryAfter ?? 0, 360, accuracy: 1e-6, "one failure back every 6 minutes")
        XCTAssertNil(t.check(account: "fresh", address: "10.0.0.1", now: 360))
        XCTAssertNil(t.check(account: "fresh", address: "10.0.0.2", now: 0))
    }

    func testIPv6IsCountedByItsSlash64() {
        XCTAssertEqual(AddressBudget.key("2001:db8:0:1::5"), AddressBudget.key("2001:0DB8:0000:0001:ffff::1"))
        XCTAssertNotEqual(AddressBudget.key("2001:db8:0:1::5"), AddressBudget.key("2001:db8:0:2::5"))
        XCTAssertEqual(AddressBudget.key("::ffff:10.1.2.3"), "10.1.2.3")
        XCTAssertEqual(AddressBudget.key("10.1.2.3"), "10.1.2.3")
        XCTAssertEqual(AddressBudget.key("fe80::1%eth0"), "fe80:0:0:0::/64")
    }

    func testMemoryStaysBoundedUnderRandomUsernamesAndAddresses() {
        var configuration = GuessingThrottle.Configuration()
        configuration.maxTracked = 10_000
        var t = GuessingThrottle(configuration: configuration)
        var rng = SystemRandomNumberGenerator()
        for i in 0..<200_000 {
            let account = "?" + String(rng.next() as UInt64, radix: 36)
            let address = "10.\(rng.next() as UInt8).\(rng.next() as UInt8).\(rng.next() as UInt8)"
            let now = Double(i) * 0.001
            if t.check(account: account, address: address, now: now) == nil { t.failed(account: account, address: address, now: now) }
            let tracked = t.tracked
            XCTAssertLessThanOrEqual(max(tracked.accounts, tracked.suspects, tracked.addresses), 10_000)
            if max(tracked.accounts, tracked.suspects, tracked.addresses) > 10_000 { break }
        }
    }

    func testAnAccountUnderAttackOutlivesTheChurnOfRandomNames() {
        var configuration = GuessingThrottle.Configuration()
        configuration.maxTracked = 1_000
        var t = GuessingThrottle(configuration: configuration)
        // 50,000 random names from many addresses flush the tables many times over, while one
        // address keeps guessing at the victim as fast as it is let.
        var now = 1000.0, evaluated = 0
        for i in 0..<50_000 {
            now += 0.01
            t.failed(account: "?r\(i)", address: "10.9.\(i / 256 % 256).\(i % 256)", now: now)
            if t.check(account: "victim", address: "10.0.0.1", now: now) == nil {
                t.failed(account: "victim", address: "10.0.0.1", now: now)
                evaluated += 1
            }
        }
        // In 500 s: 5 free, then waits of 1, 2 … 128 s (255 s in all), then 256 s: 13 guesses. Had the
        // victim or its suspect been dropped, the count would have started again with 5 free.
        XCTAssertEqual(evaluated, 13, "the victim's failures were forgotten under churn")
    }
}
