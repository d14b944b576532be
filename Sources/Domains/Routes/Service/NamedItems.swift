import Routes

/// An item a provider names and keeps up to date: what a transit alert becomes. A later batch
/// with the same `reference` revises it (`intel.updated`); a batch that ends it, or a full dataset
/// of its `scope` that leaves it out, expires it (`intel.expired`).
public struct NamedItem: Sendable, Equatable {
    /// The provider's feed it comes from (a full dataset replaces everything of its scope).
    public var scope: String
    /// Its name within the scope (a GTFS-Realtime entity id).
    public var name: String
    /// Shown as `by: {source}`.
    public var source: String
    /// Never empty.
    public var points: [GeoPoint]
    public var kind: IntelKind
    public var tags: [String]
    public var modes: [TravelMode]
    public var body: String
    public var translations: [String: String]
    /// When it ends; nil: `ttlSeconds` after it was last seen (renewed while it keeps coming).
    public var endsAt: Double?

    public init(scope: String, name: String, source: String, points: [GeoPoint], kind: IntelKind, tags: [String], modes: [TravelMode],
                body: String, translations: [String: String], endsAt: Double?) {
        self.scope = scope
        self.name = name
        self.source = source
        self.points = points
        self.kind = kind
        self.tags = tags
        self.modes = modes
        self.body = body
        self.translations = translations
        self.endsAt = endsAt
    }

    /// `IntelItem.reference`: `<scope>/<name>`.
    public var reference: String { "\(scope)/\(name)" }
}

/// What a provider's batch did to one item; its corridors push it.
public enum NamedChange: Sendable {
    /// New, or back after it had ended: `intel.added`.
    case added(IntelItem)
    /// Its places, text or end changed: `intel.updated` where it stays, `intel.added` where it
    /// arrives, `intel.expired` where it leaves.
    case revised(before: IntelItem, after: IntelItem)
    /// Ended by its provider: `intel.expired`.
    case ended(IntelItem)
}

/// What a provider's batch ends besides the items it names.
public enum NamedEnding: Sendable, Equatable {
    /// Only the items it lists (a differential message's deletions), by name within the scope.
    case listed([String])
    /// Every live item of the scope the batch does not name (a full dataset).
    case allOthers
    /// Every live item of the scope the batch does not name, but for those named here: the last
    /// part of a full dataset sent in parts names every item of the earlier parts.
    case allOthersBut([String])
}
