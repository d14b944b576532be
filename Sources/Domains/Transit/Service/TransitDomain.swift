import DomainSeam
import Foundation
import Logging
import RouteService
import ServiceLifecycle
import Storage
import Transit

/// Public transport's standard feeds on the seam (feeds.md, transit): GTFS feeds posted as zips
/// and kept per name, GTFS-Realtime alerts posted or polled and made into provider intel items on
/// the routes domain's stream (`NamedIntelFeed`). Its settings sit in the `routes.` section:
/// they are about the routes' intel.
public struct TransitDomain: Domain {
    public static let name = "transit"

    public static let gtfsMaxZipBytes = Setting("routes.gtfsMaxZipBytes", default: 512 << 20, range: 1_024...(1 << 36),
                                                help: "the largest GTFS zip POST /api/feeds/gtfs takes (413 beyond it)")
    public static let gtfsMaxUncompressedBytes = Setting("routes.gtfsMaxUncompressedBytes", default: 4 << 30, range: 1_024...(1 << 40),
                                                         help: "the most bytes a GTFS zip's files may inflate to, together (a zip bomb is refused beyond it)")
    public static let gtfsMaxStops = Setting("routes.gtfsMaxStops", default: 1_000_000, range: 1...100_000_000,
                                             help: "the most stops one GTFS feed may hold")
    public static let gtfsMaxTrips = Setting("routes.gtfsMaxTrips", default: 5_000_000, range: 1...100_000_000,
                                             help: "the most trips one GTFS feed may hold")
    public static let gtfsMaxStopsPerAlert = Setting("routes.gtfsMaxStopsPerAlert", default: 5_000, range: 1...1_000_000,
                                                     help: "the most stops one alert may be placed at (refused beyond it)")
    public static let gtfsRtMaxBytes = Setting("routes.gtfsRtMaxBytes", default: 16 << 20, range: 1_024...(1 << 30),
                                               help: "the largest GTFS-Realtime message taken, posted or polled")
    public static let gtfsRt = Setting("routes.gtfsRt", default: "",
                                       help: "operators' GTFS-Realtime URLs to poll: a JSON array of {\"feed\", \"url\", \"intervalSeconds\"}")
    public static let gtfsRtTimeoutSeconds = Setting("routes.gtfsRtTimeoutSeconds", default: 10.0, range: 0.1...600.0,
                                                     help: "seconds a poll of a GTFS-Realtime URL may take")
    public static let gtfsRtMaxBackoffSeconds = Setting("routes.gtfsRtMaxBackoffSeconds", default: 300.0, range: 1.0...86_400.0,
                                                        help: "the longest wait between polls of a failing GTFS-Realtime URL")

    public static var settings: [any AnySetting] {
        [gtfsMaxZipBytes, gtfsMaxUncompressedBytes, gtfsMaxStops, gtfsMaxTrips, gtfsMaxStopsPerAlert, gtfsRtMaxBytes, gtfsRt,
         gtfsRtTimeoutSeconds, gtfsRtMaxBackoffSeconds]
    }

    public static func migrations(_ migrator: inout SQLMigrations) { NetworkRows.register(&migrator) }

    public let networks: TransitNetworks
    private let upload: GTFSUpload
    private let realtime: RealtimeUpload
    private let poller: RealtimePoller?
    private let store: Store
    private let logger: Logger

    public init(context: DomainContext) throws {
        let s = context.settings
        store = context.store
        logger = context.logger
        networks = TransitNetworks(try context.store.readNow { db in try NetworkRows.all(db) })
        var limits = GTFSArchive.Limits()
        limits.maxUncompressedBytes = s[Self.gtfsMaxUncompressedBytes]
        limits.reader.maxStops = s[Self.gtfsMaxStops]
        limits.reader.maxTrips = s[Self.gtfsMaxTrips]
        upload = GTFSUpload(networks: networks, store: context.store,
                            spoolDirectory: (context.dataDirectory as NSString).appendingPathComponent("spool"),
                            maxBodyBytes: s[Self.gtfsMaxZipBytes], limits: limits, logger: context.logger)
        let ingest = AlertIngest(networks: networks, store: context.store, capabilities: context.capabilities,
                                 maxPointsPerAlert: s[Self.gtfsMaxStopsPerAlert])
        realtime = RealtimeUpload(ingest: ingest, maxBodyBytes: s[Self.gtfsRtMaxBytes])
        let sources = try RealtimeSource.parse(s[Self.gtfsRt])
        poller = sources.isEmpty ? nil
            : RealtimePoller(sources: sources, ingest: ingest, timeoutSeconds: s[Self.gtfsRtTimeoutSeconds],
                             maxBackoffSeconds: s[Self.gtfsRtMaxBackoffSeconds], maxBytes: s[Self.gtfsRtMaxBytes], logger: context.logger,
                             polling: { [capabilities = context.capabilities] in
                                 // Alerts go into the named items' shard: polled by its owner alone.
                                 await capabilities.resolve(LoggedRooms.self)?.holds(RoutesDomain.namedHome) ?? true
                             })
    }

    public var ops: [Op] { [] }
    public var endpoints: [HTTPEndpoint] { [upload.endpoint, realtime.endpoint] }
    public var services: [any Service] {
        let networks = self.networks, store = self.store, logger = self.logger
        // What uploads cut short by a crash left behind: deleted at start, then hourly.
        let sweep: @Sendable () async -> Void = {
            do {
                let n = try await NetworkRows.dropOrphans(writing: { networks.writing }, batch: 5_000, in: store)
                if n > 0 { logger.info("transit: rows of unfinished GTFS uploads deleted", metadata: ["rows": "\(n)"]) }
            } catch {
                logger.warning("transit: unfinished uploads not deleted yet", metadata: ["error": "\(error)"])
            }
        }
        return [Periodic(every: 3_600, atStart: sweep) { _ in await sweep() }] + (poller.map { [$0] } ?? [])
    }
}
