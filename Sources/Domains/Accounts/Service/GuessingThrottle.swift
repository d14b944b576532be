/// Limits on password guessing across every connection of the server (OWASP's authentication
/// guidance: throttle, don't lock out). A pure value with a clock passed in: the account service
/// asks `check` before it evaluates a password, records the attempt as `failed` before evaluating
/// it (so attempts made at once cannot slip past), and takes that back with `succeeded` when the
/// password was right. A refused attempt is never evaluated.
///
/// The rules, in the order `check` applies them:
/// 1. **Per address**: each source address (an IPv6 address by its /64) may fail
///    `addressFailuresPerHour` log-ins an hour across all accounts (a token bucket that refills
///    steadily). An address out of budget is refused for every account, the right password included:
///    spraying one password over many accounts costs the same as guessing one.
/// 2. **Per account**: the failures on one account are counted from every address. Once there are
///    `freeFailures` of them, an address that has itself failed on the account waits
///    `baseDelay × 2^(failures − freeFailures)` (at most `maxDelay`) after the account's last
///    failure before its next attempt is evaluated. The wait is the account's, shared: a hundred
///    addresses guess no faster than one, once each has failed.
/// 3. **The owner still gets in**: an address that has not failed on the account is not held by the
///    account's wait, so an attacker cannot lock the real owner out from elsewhere. Its first
///    failure makes it one of the account's suspects.
///
/// Counts are forgotten `window` after an account's (or a suspect's) last failure. Memory is bounded:
/// each table holds at most `maxTracked` entries; a full table first drops what has expired, then
/// the entries of the accounts with the fewest failures (then the oldest): flooding the tables with
/// random names, one failure each, cannot push out an account under attack or its suspects.
public struct GuessingThrottle: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Failures an account takes from anyone before its suspects must wait.
        public var freeFailures = 5
        /// The first wait; it doubles with each further failure.
        public var baseDelay: Double = 1
        /// The longest wait.
        public var maxDelay: Double = 900
        /// How long a failure is remembered after an account's last one.
        public var window: Double = 3600
        /// Failed log-ins one address may make per hour, across all accounts.
        public var addressFailuresPerHour = 100
        /// Entries per table (accounts, suspects, addresses).
        public var maxTracked = 100_000

        public init() {}
    }

    /// Why an attempt is refused, and for how long.
    public struct Refusal: Error, Equatable, Sendable {
        /// Seconds until an attempt from this address may be evaluated.
        public var retryAfter: Double
        /// Which rule refused it.
        public var rule: Rule
    }

    public enum Rule: String, Sendable {
        case address
        case account
    }

    /// One account's failures.
    struct AccountFailures {
        var count: Int
        var last: Double
    }

    public let configuration: Configuration
    private var accounts: [String: AccountFailures] = [:]
    /// An address that failed on an account.
    struct Pair: Hashable {
        var account: String
        var address: String
    }

    /// When each suspect last failed on its account.
    private var suspects: [Pair: Double] = [:]
    private var addresses: AddressBudget

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        addresses = AddressBudget(perHour: configuration.addressFailuresPerHour, maxTracked: configuration.maxTracked)
    }

    /// Entries held, per table (tests and the memory report).
    public var tracked: (accounts: Int, suspects: Int, addresses: Int) { (accounts.count, suspects.count, addresses.count) }

    /// Whether an attempt on `account` from `address` may be evaluated now (nil) or must wait.
    public func check(account: String, address: String, now: Double) -> Refusal? {
        let address = AddressBudget.key(address)
        if let wait = addresses.wait(address, now: now) { return Refusal(retryAfter: wait, rule: .address) }
        guard let failures = live(accounts[account], now: now), failures.count >= configuration.freeFailures,
              let suspectAt = suspects[Pair(account: account, address: address)], now - suspectAt < configuration.window else { return nil }
        let until = failures.last + delay(after: failures.count)
        return now < until ? Refusal(retryAfter: until - now, rule: .account) : nil
    }

    /// Records an evaluated attempt that failed.
    public mutating func failed(account: String, address: String, now: Double) {
        let address = AddressBudget.key(address)
        var failures = live(accounts[account], now: now) ?? AccountFailures(count: 0, last: now)
        failures.count += 1
        failures.last = now
        accounts[account] = failures
        suspects[Pair(account: account, address: address)] = now
        addresses.spend(address, now: now)
        bound(now: now)
    }

    /// Takes back the failure recorded for an attempt that succeeded: the address is no longer a
    /// suspect of the account and gets its budget back. The account's other failures stay: an
    /// attacker elsewhere gains nothing from the owner logging in.
    public mutating func succeeded(account: String, address: String) {
        let address = AddressBudget.key(address)
        suspects[Pair(account: account, address: address)] = nil
        if let failures = accounts[account] {
            if failures.count <= 1 { accounts[account] = nil } else { accounts[account]?.count -= 1 }
        }
        addresses.refund(address)
    }

    /// How many guesses on one account the limits evaluate in `seconds` for an attacker using
    /// `addresses` addresses, each retrying as soon as it is told it may (every 10 ms otherwise):
    /// what a configuration allows, for the docs and the measurements.
    public static func guessesEvaluated(fromAddresses addresses: Int, inSeconds seconds: Double,
                                        configuration: Configuration = .init()) -> Int {
        var throttle = GuessingThrottle(configuration: configuration)
        var evaluated = 0, now = 0.0
        var next = [Double](repeating: 0, count: addresses)
        while now < seconds {
            for a in 0..<addresses where next[a] <= now {
                let address = "198.51.\(a / 256).\(a % 256)"
                if let refusal = throttle.check(account: "victim", address: address, now: now) {
                    next[a] = now + max(refusal.retryAfter, 0.01)
                } else {
                    throttle.failed(account: "victim", address: address, now: now)
                    evaluated += 1
                    next[a] = now + 0.01
                }
            }
            now = next.min()!
        }
        return evaluated
    }

    /// The wait after `count` failures (count ≥ freeFailures).
    public func delay(after count: Int) -> Double {
        let doublings = min(count - configuration.freeFailures, 62)
        return min(configuration.maxDelay, configuration.baseDelay * Double(UInt64(1) << UInt64(doublings)))
    }

    private func live(_ failures: AccountFailures?, now: Double) -> AccountFailures? {
        guard let failures, now - failures.last < configuration.window else { return nil }
        return failures
    }

    /// Keeps each table within `maxTracked`: when one is full, drops what expired, then down to three
    /// quarters, keeping the accounts with most failures. Amortised, each failure pays O(log n) for this.
    private mutating func bound(now: Double) {
        let limit = configuration.maxTracked, keep = max(1, limit * 3 / 4)
        let window = configuration.window
        if accounts.count > limit {
            accounts = accounts.filter { now - $0.value.last < window }
            if accounts.count > keep {
                let kept = accounts.sorted { ($0.value.count, $0.value.last) > ($1.value.count, $1.value.last) }.prefix(keep)
                accounts = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
            }
        }
        if suspects.count > limit {
            suspects = suspects.filter { now - $0.value < window }
            if suspects.count > keep {
                // Each pair's account count looked up once, not at every comparison.
                let ranked = suspects.map { (count: accounts[$0.key.account]?.count ?? 0, at: $0.value, pair: $0.key) }
                let kept = ranked.sorted { ($0.count, $0.at) > ($1.count, $1.at) }.prefix(keep)
                suspects = Dictionary(uniqueKeysWithValues: kept.map { ($0.pair, $0.at) })
            }
        }
    }

}
