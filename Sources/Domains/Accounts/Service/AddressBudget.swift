/// A budget per source address: `perHour` events an hour, refilled steadily (a token bucket per
/// address). Failed log-ins and sign-ups each have one. At most `maxTracked` addresses are held:
/// a full table drops the addresses whose buckets have refilled (a fresh bucket says the same),
/// then keeps the three quarters that have spent most.
public struct AddressBudget: Sendable {
    /// One address's bucket: `tokens` at time `at`.
    struct Bucket {
        var tokens: Double
        var at: Double
    }

    public let perHour: Int
    public let maxTracked: Int
    private var buckets: [String: Bucket] = [:]

    public init(perHour: Int, maxTracked: Int) {
        self.perHour = perHour
        self.maxTracked = maxTracked
    }

    /// Addresses held.
    public var count: Int { buckets.count }

    /// nil when `address` may spend one more now, else the seconds until it may.
    public func wait(_ address: String, now: Double) -> Double? {
        guard let bucket = buckets[address] else { return nil }
        let tokens = refilled(bucket, now: now)
        return tokens >= 1 ? nil : (1 - tokens) / perSecond
    }

    /// Spends one for `address` (it may go below zero: the wait grows with what was overspent).
    public mutating func spend(_ address: String, now: Double) {
        let tokens = buckets[address].map { refilled($0, now: now) } ?? full
        buckets[address] = Bucket(tokens: tokens - 1, at: now)
        if buckets.count > maxTracked { shrink(now: now) }
    }

    /// Gives back one spent (an event that turned out not to count).
    public mutating func refund(_ address: String) {
        guard var bucket = buckets[address] else { return }
        bucket.tokens = min(full, bucket.tokens + 1)
        buckets[address] = bucket
    }

    private var full: Double { Double(perHour) }
    private var perSecond: Double { Double(max(perHour, 1)) / 3600 }

    private func refilled(_ bucket: Bucket, now: Double) -> Double {
        min(full, bucket.tokens + max(0, now - bucket.at) * perSecond)
    }

    private mutating func shrink(now: Double) {
        buckets = buckets.filter { refilled($0.value, now: now) < full }
        let keep = max(1, maxTracked * 3 / 4)
        if buckets.count > keep {
            buckets = Dictionary(uniqueKeysWithValues: buckets.sorted { $0.value.tokens < $1.value.tokens }.prefix(keep).map { ($0.key, $0.value) })
        }
    }

    /// The unit an address is counted in: an IPv4 address as it is (an IPv4-mapped IPv6 address as
    /// its IPv4 form), an IPv6 address by its /64, the block one subscriber usually holds.
    public static func key(_ address: String) -> String {
        guard address.contains(":") else { return address }
        let lower = address.lowercased()
        if lower.hasPrefix("::ffff:"), lower.dropFirst(7).contains(".") { return String(lower.dropFirst(7)) }
        return IPv6.prefix64(lower) ?? lower
    }
}

/// IPv6 text forms, as far as budgets need them.
enum IPv6 {
    /// The first four groups of an IPv6 address, expanded and without leading zeros
    /// (`2001:0db8::1` → `2001:db8:0:0::/64`); nil when the text is not an IPv6 address.
    static func prefix64(_ text: String) -> String? {
        let unzoned = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        let halves = unzoned.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ s: String) -> [Substring] { s.isEmpty ? [] : s.split(separator: ":", omittingEmptySubsequences: false) }
        let head = groups(halves[0]), tail = halves.count == 2 ? groups(halves[1]) : []
        let compressed = halves.count == 2
        guard compressed ? head.count + tail.count <= 7 : head.count == 8 else { return nil }
        let all = head + Array(repeating: "0", count: 8 - head.count - tail.count) + tail
        guard all.prefix(4).allSatisfy({ !$0.isEmpty && $0.count <= 4 && $0.allSatisfy(\.isHexDigit) }) else { return nil }
        return all.prefix(4).map { String(UInt16($0, radix: 16)!, radix: 16) }.joined(separator: ":") + "::/64"
    }
}
