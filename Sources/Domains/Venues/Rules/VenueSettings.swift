/// One venue's jukebox rules, set by its owners. Stored as columns of the venue's row.
/// Decoding fills every missing key with its default, so a partial update decodes too.
public struct VenueSettings: Sendable, Equatable, Hashable, Codable {
    /// Whether guests may request tracks with explicit lyrics (UC24).
    public var explicitAllowed: Bool
    /// Votes one user may cast in this venue in any sliding hour (1...10,000).
    public var votesPerUserPerHour: Int
    /// Requests one user may make in this venue in any sliding hour (1...10,000).
    public var requestsPerUserPerHour: Int
    /// A track that finished playing less than this many hours ago cannot be requested again;
    /// 0 turns the window off (0...168).
    public var noRepeatHours: Int
    /// Whether fair mode is on: see `fairModeMaxPendingPerUser` and `Jukebox.order`.
    public var fairMode: Bool
    /// In fair mode, the most requested tracks one user may have waiting in the queue (1...1,000).
    public var fairModeMaxPendingPerUser: Int

    public static let ranges: (votes: ClosedRange<Int>, requests: ClosedRange<Int>, noRepeatHours: ClosedRange<Int>,
                               fairPending: ClosedRange<Int>) = (1...10_000, 1...10_000, 0...168, 1...1_000)

    public init(explicitAllowed: Bool = true, votesPerUserPerHour: Int = 60, requestsPerUserPerHour: Int = 10,
                noRepeatHours: Int = 0, fairMode: Bool = false, fairModeMaxPendingPerUser: Int = 2) {
        self.explicitAllowed = explicitAllowed
        self.votesPerUserPerHour = votesPerUserPerHour
        self.requestsPerUserPerHour = requestsPerUserPerHour
        self.noRepeatHours = noRepeatHours
        self.fairMode = fairMode
        self.fairModeMaxPendingPerUser = fairModeMaxPendingPerUser
    }

    enum CodingKeys: String, CodingKey {
        case explicitAllowed, votesPerUserPerHour, requestsPerUserPerHour, noRepeatHours, fairMode, fairModeMaxPendingPerUser
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = VenueSettings()
        explicitAllowed = try c.decodeIfPresent(Bool.self, forKey: .explicitAllowed) ?? d.explicitAllowed
        votesPerUserPerHour = try c.decodeIfPresent(Int.self, forKey: .votesPerUserPerHour) ?? d.votesPerUserPerHour
        requestsPerUserPerHour = try c.decodeIfPresent(Int.self, forKey: .requestsPerUserPerHour) ?? d.requestsPerUserPerHour
        noRepeatHours = try c.decodeIfPresent(Int.self, forKey: .noRepeatHours) ?? d.noRepeatHours
        fairMode = try c.decodeIfPresent(Bool.self, forKey: .fairMode) ?? d.fairMode
        fairModeMaxPendingPerUser = try c.decodeIfPresent(Int.self, forKey: .fairModeMaxPendingPerUser)
            ?? d.fairModeMaxPendingPerUser
    }

    /// Throws `badRequest` naming the first field out of its range (`VenueSettings.ranges`).
    public func validate() throws(JukeboxError) {
        try Self.check(votesPerUserPerHour, Self.ranges.votes, "votesPerUserPerHour")
        try Self.check(requestsPerUserPerHour, Self.ranges.requests, "requestsPerUserPerHour")
        try Self.check(noRepeatHours, Self.ranges.noRepeatHours, "noRepeatHours")
        try Self.check(fairModeMaxPendingPerUser, Self.ranges.fairPending, "fairModeMaxPendingPerUser")
    }

    /// Every field brought into its range (used when restoring stored rows, which are not refused).
    public func clamped() -> VenueSettings {
        var s = self
        s.votesPerUserPerHour = Self.clamp(votesPerUserPerHour, Self.ranges.votes)
        s.requestsPerUserPerHour = Self.clamp(requestsPerUserPerHour, Self.ranges.requests)
        s.noRepeatHours = Self.clamp(noRepeatHours, Self.ranges.noRepeatHours)
        s.fairModeMaxPendingPerUser = Self.clamp(fairModeMaxPendingPerUser, Self.ranges.fairPending)
        return s
    }

    private static func check(_ v: Int, _ r: ClosedRange<Int>, _ field: String) throws(JukeboxError) {
        guard r.contains(v) else {
            throw .badRequest(field: field, message: "\(field) must be between \(r.lowerBound) and \(r.upperBound)")
        }
    }

    private static func clamp(_ v: Int, _ r: ClosedRange<Int>) -> Int { min(max(v, r.lowerBound), r.upperBound) }
}
