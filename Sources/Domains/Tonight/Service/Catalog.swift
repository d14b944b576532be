import Storage
import Synchronization
import Tonight

/// The catalog, durable and shared: the `EventCatalog` value behind a lock. Ingests compare each
/// record with it and apply what they wrote; ops and users' actors read it.
public final class Catalog: Sendable {
    private let state: Mutex<EventCatalog>

    public init(rules: EventCatalog.Rules = .init(), _ records: [FeedRecord] = []) {
        state = Mutex(EventCatalog(rules: rules, records))
    }

    /// The catalog of what the store holds, each record in its row.
    public init(rules: EventCatalog.Rules, stored: [(row: Int64, record: FeedRecord)]) {
        state = Mutex(EventCatalog(rules: rules, stored: stored))
    }

    /// Runs `body` on the catalog under its lock (keep it short: every reader waits).
    public func with<T>(_ body: (inout EventCatalog) throws -> T) rethrows -> T {
        try state.withLock { try body(&$0) }
    }

    public var rules: EventCatalog.Rules { state.withLock { $0.rules } }

    /// The catalog as the store holds it now, recommendations included (this node took tonight's
    /// lease: another node's feeds changed it meanwhile).
    func reload(from store: Store) async throws {
        let (stored, recommendations) = try await store.read { db in (try CatalogRows.all(db), try CatalogRows.recommendations(db)) }
        var fresh = EventCatalog(rules: rules, stored: stored)
        for (artist, list) in recommendations { fresh.setRecommendations(list, of: artist) }
        state.withLock { $0 = fresh }
    }
    /// Records now durable.
    public func apply(_ records: some Collection<FeedRecord>) { state.withLock { $0.apply(records) } }
    public func artists(named name: String) -> Set<String> { state.withLock { $0.artists(named: name) } }
    public func recommendations(of artist: String) -> [EventCatalog.Recommendation] { state.withLock { $0.recommendations[artist] ?? [] } }
    /// An artist's recommendations now durable (replacing the earlier ones).
    public func setRecommendations(_ list: [EventCatalog.Recommendation], of artist: String) {
        state.withLock { $0.setRecommendations(list, of: artist) }
    }
    public func hasVenue(_ id: String) -> Bool { state.withLock { $0.venues[id] != nil } }
    public func knownArtists(_ ids: [String]) -> Int { state.withLock { s in ids.filter { s.artists[$0] != nil }.count } }
    public func event(_ id: String) -> FeedEvent? { state.withLock { $0.events[id] } }
    public func artist(_ id: String) -> FeedArtist? { state.withLock { $0.artists[id] } }
    public func startsAt(_ event: String) -> Double? { state.withLock { $0.startsAt(event) } }

}
