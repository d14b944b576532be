import Synchronization
import Tonight

/// The event feed's catalog in memory: every category, artist, venue and event by id, as durable.
/// Ingests compare each record with it (added, changed, unchanged) and apply what they wrote.
public final class Catalog: Sendable {
    /// How a record compares with what the catalog holds.
    public enum Change: Sendable { case added, changed, unchanged }

    /// One recommended artist of an artist (the affinity feed).
    public struct Recommendation: Sendable, Equatable {
        public var artist: String
        public var score: Double
        public init(artist: String, score: Double) {
            self.artist = artist
            self.score = score
        }
    }

    struct State {
        var categories: [String: FeedCategory] = [:]
        var artists: [String: FeedArtist] = [:]
        /// Artist ids by `NameKey` of their names (affinity headers, search).
        var artistsByName: [String: Set<String>] = [:]
        /// Each artist's recommendations, best score first.
        var recommendations: [String: [Recommendation]] = [:]
        var venues: [String: FeedVenue] = [:]
        var events: [String: FeedEvent] = [:]
    }

    private let state = Mutex(State())

    public init(_ records: [FeedRecord] = []) { apply(records) }

    public func change(_ record: FeedRecord) -> Change {
        state.withLock { s in
            let held: FeedRecord? = switch record {
            case .category(let c): s.categories[c.id].map(FeedRecord.category)
            case .artist(let a): s.artists[a.id].map(FeedRecord.artist)
            case .venue(let v): s.venues[v.id].map(FeedRecord.venue)
            case .event(let e): s.events[e.id].map(FeedRecord.event)
            }
            guard let held else { return .added }
            return held == record ? .unchanged : .changed
        }
    }

    /// Records now durable.
    public func apply(_ records: [FeedRecord]) {
        state.withLock { s in
            for r in records {
                switch r {
                case .category(let c): s.categories[c.id] = c
                case .artist(let a):
                    if let old = s.artists[a.id] { s.artistsByName[NameKey.of(old.name)]?.remove(a.id) }
                    s.artists[a.id] = a
                    s.artistsByName[NameKey.of(a.name), default: []].insert(a.id)
                case .venue(let v): s.venues[v.id] = v
                case .event(let e): s.events[e.id] = e
                }
            }
        }
    }

    /// The ids of the artists called `name` (case and accents aside).
    public func artists(named name: String) -> Set<String> { state.withLock { $0.artistsByName[NameKey.of(name)] ?? [] } }

    public func recommendations(of artist: String) -> [Recommendation] { state.withLock { $0.recommendations[artist] ?? [] } }

    /// An artist's recommendations now durable (replacing the earlier ones).
    public func setRecommendations(_ list: [Recommendation], of artist: String) {
        let ordered = Self.ordered(list)
        state.withLock { $0.recommendations[artist] = ordered }
    }

    /// Recommendations as the catalog keeps them: best score first, ties by artist id.
    public static func ordered(_ list: [Recommendation]) -> [Recommendation] {
        list.sorted { ($0.score, $1.artist) > ($1.score, $0.artist) }
    }

    public func hasVenue(_ id: String) -> Bool { state.withLock { $0.venues[id] != nil } }
    public func knownArtists(_ ids: [String]) -> Int { state.withLock { s in ids.filter { s.artists[$0] != nil }.count } }
    public func event(_ id: String) -> FeedEvent? { state.withLock { $0.events[id] } }
    public func venue(_ id: String) -> FeedVenue? { state.withLock { $0.venues[id] } }
    public func artist(_ id: String) -> FeedArtist? { state.withLock { $0.artists[id] } }

    /// How many of each it holds.
    public var counts: (categories: Int, artists: Int, venues: Int, events: Int) {
        state.withLock { ($0.categories.count, $0.artists.count, $0.venues.count, $0.events.count) }
    }
}
