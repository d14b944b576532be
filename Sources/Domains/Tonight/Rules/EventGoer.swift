/// What a user told Hubbub about their evenings (`prefs.set`): where they are, how far they go,
/// what they pay at most, which categories they want (none: every category).
public struct Preferences: Sendable, Equatable {
    public var location: Place
    public var radiusKm: Double
    /// In the events' currency, major units (25.5); nil: any price.
    public var maxPrice: Double?
    /// Chosen categories; empty: all.
    public var categories: Set<String>

    public init(location: Place, radiusKm: Double, maxPrice: Double? = nil, categories: Set<String> = []) {
        self.location = location
        self.radiusKm = radiusKm
        self.maxPrice = maxPrice
        self.categories = categories
    }
}

/// One user's tonight state (seeds 000, 004, 002): preferences, favourite artists and categories,
/// the events they follow (plans) and those they dismissed. A value: the user's actor owns it.
public struct EventGoer: Sendable, Equatable {
    public var user: String
    /// Nil until the first `prefs.set`: without a place nothing is tonight's.
    public var prefs: Preferences?
    public var artists: Set<String> = []
    public var categories: Set<String> = []
    /// Followed events ("I'm going"), with when they were followed.
    public var followed: [String: Double] = [:]
    public var dismissed: Set<String> = []

    public init(user: String, prefs: Preferences? = nil) {
        self.user = user
        self.prefs = prefs
    }

    /// Whether the user keeps `event` out of suggestions (following it already, or dismissed).
    public func excludes(_ event: String) -> Bool { followed[event] != nil || dismissed.contains(event) }
}

/// Why an event is suggested (protocol.md `reason`).
public enum Reason: Sendable, Equatable {
    /// One of the event's performers is a favourite.
    case favorite(artist: String)
    /// One of its categories is a favourite (seed 002's favourite games).
    case category(String)
    /// A performer is recommended (affinity feed) for the favourite `artist`, with that score.
    case similar(to: String, score: Double)
}

/// An event suggested to a user, with why.
public struct Suggestion: Sendable, Equatable {
    public var event: String
    public var reason: Reason
    /// When it starts (seconds since 1970).
    public var startsAt: Double

    public init(event: String, reason: Reason, startsAt: Double) {
        self.event = event
        self.reason = reason
        self.startsAt = startsAt
    }

    /// Tonight's order: favourites first, by start; then recommendations, best score first, then
    /// by start; ties by event id.
    public static func ordered(_ a: Suggestion, _ b: Suggestion) -> Bool {
        switch (a.reason, b.reason) {
        case (.similar(_, let x), .similar(_, let y)) where x != y: return x > y
        case (.similar, .similar): break
        case (.similar, _): return false
        case (_, .similar): return true
        default: break
        }
        return (a.startsAt, a.event) < (b.startsAt, b.event)
    }
}
