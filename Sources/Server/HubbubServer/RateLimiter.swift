import DomainSeam

/// Token buckets per class of operation, for one session. A request over its class's budget
/// gets `rate_limited` with the wait; a session that keeps hammering after that is abusive.
struct RateLimiter: Sendable {
    /// One class's budget: `perSecond` sustained, `burst` at once.
    struct Budget: Sendable, Equatable {
        var perSecond: Double
        var burst: Double
    }

    private var budgets: [RateClass: Budget]
    private var tokens: [RateClass: Double] = [:]
    private var updated: [RateClass: Double] = [:]
    /// Requests refused in a row; reset by any accepted one.
    private(set) var refusedInARow = 0

    init(budgets: [RateClass: Budget]) {
        self.budgets = budgets
    }

    /// Counts a request refused for another reason (malformed, unknown op, not logged in).
    mutating func refused() { refusedInARow += 1 }

    /// Takes one token of `c` at time `now` (seconds); returns nil, or the wait in ms.
    mutating func take(_ c: RateClass, now: Double) -> Int? {
        guard let b = budgets[c] else { return nil }
        let last = updated[c] ?? now
        var t = min(b.burst, (tokens[c] ?? b.burst) + (now - last) * b.perSecond)
        updated[c] = now
        if t >= 1 {
            t -= 1
            tokens[c] = t
            refusedInARow = 0
            return nil
        }
        tokens[c] = t
        refusedInARow += 1
        return max(1, Int(((1 - t) / b.perSecond * 1000).rounded(.up)))
    }
}
