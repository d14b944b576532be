import DomainSeam
import Foundation
import GRDB
import Storage
import Tonight

/// Tonight's events (seeds 000, 004, 002) on the seam. So far: the event-info feed's ingest
/// (`POST /api/feeds/events`) and the affinity feed's (`POST /api/feeds/affinity`) into a durable
/// catalog; users, suggestions and rooms come next.
public struct TonightDomain: Domain {
    public static let name = "tonight"

    /// feeds.md names it `api.maxFeedBytes`.
    public static let maxFeedBytes = Setting("api.maxFeedBytes", default: 512 << 20, range: 1_024...(1 << 36),
                                             help: "the largest feed body POST /api/feeds/... takes (413 beyond it)")
    public static let ingestBatch = Setting("tonight.ingestBatch", default: 2_000, range: 1...100_000,
                                            help: "feed records written per transaction while a feed is ingested")

    public static var settings: [any AnySetting] { [maxFeedBytes, ingestBatch] }

    public static func migrations(_ migrator: inout DatabaseMigrator) { TonightSchema.register(&migrator) }

    public let catalog: Catalog
    private let ingest: EventFeedIngest
    private let affinity: AffinityIngest

    public init(context: DomainContext) throws {
        catalog = Catalog(try context.store.readNow { db in try CatalogRows.all(db) })
        for (artist, list) in try context.store.readNow({ db in try CatalogRows.recommendations(db) }) {
            catalog.setRecommendations(list, of: artist)
        }
        var ingest = EventFeedIngest(catalog: catalog, store: context.store, maxBodyBytes: context.settings[Self.maxFeedBytes])
        ingest.batch = context.settings[Self.ingestBatch]
        self.ingest = ingest
        affinity = AffinityIngest(catalog: catalog, store: context.store, maxBodyBytes: context.settings[Self.maxFeedBytes])
    }

    public var ops: [Op] { [] }
    public var endpoints: [HTTPEndpoint] { [ingest.endpoint, affinity.endpoint] }
}
