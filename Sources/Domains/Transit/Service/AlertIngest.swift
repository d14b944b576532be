import DomainSeam
import Foundation
import Realtime
import RouteService
import Routes
import Storage
import Transit
import TransitFeeds

/// A GTFS-Realtime message (posted or polled) made into named intel items (feeds.md): each alert
/// placed in the GTFS feed of the same name, at its informed stops, with its translations, modes
/// and tags from the routes it informs and its end from its active periods; deleted entities end
/// their item, and a full dataset ends every item of the feed it leaves out.
struct AlertIngest: Sendable {
    let networks: TransitNetworks
    let store: Store
    /// The routes domain's stream (resolved when used: domains are built in any order).
    let capabilities: Capabilities
    /// The most stops one alert may be at (an alert on many long routes is refused beyond it).
    let maxPointsPerAlert: Int

    /// Why a message changed nothing.
    enum Failure: Error, Equatable {
        /// No GTFS feed of that name to place alerts in (409).
        case noNetwork(String)
        /// Not a FeedMessage (400).
        case notAFeed(String)
        /// The store refused the change (503).
        case unavailable(String)

        var status: Int {
            switch self {
            case .noNetwork: 409
            case .notAFeed: 400
            case .unavailable: 503
            }
        }

        var message: String {
            switch self {
            case .noNetwork(let m), .notAFeed(let m), .unavailable(let m): m
            }
        }
    }

    /// What a message did.
    struct Outcome: Sendable {
        var report: IngestReport
        var ended = 0
    }

    func ingest(_ bytes: [UInt8], feed: String, started: Date = Date()) async throws(Failure) -> Outcome {
        let held: TransitNetwork?
        do { held = try await networks.current(feed, store: store) } catch {
            throw .unavailable("could not read the GTFS feed \(feed); try again")
        }
        guard let network = held else {
            throw .noNetwork("no GTFS feed \(feed): POST /api/feeds/gtfs?feed=\(feed) first (alerts are placed at its stops)")
        }
        guard let stream = capabilities.resolve(NamedIntelFeed.self) else { throw .unavailable("the routes domain is not running") }
        let message: GTFSRealtimeDecoder.Message
        do {
            message = try GTFSRealtimeDecoder.decode(bytes)
        } catch {
            throw .notAFeed(error.reason)
        }
        var report = IngestReport(started: started)
        for (entity, reason) in message.refused { report.rejects.append(.init(record: "alert \(entity)", reason: reason)) }
        var items: [NamedItem] = [], deleted: [String] = []
        for alert in message.alerts {
            if alert.isDeleted { deleted.append(alert.id); continue }
            switch PlacedAlert.place(alert, in: network) {
            case .failure(let refusal):
                report.rejects.append(.init(record: "alert \(alert.id)", reason: refusal.reason))
            case .success(let placed) where placed.points.count > maxPointsPerAlert:
                report.rejects.append(.init(record: "alert \(alert.id)",
                                            reason: "it informs \(placed.points.count) stops, more than \(maxPointsPerAlert) (routes.gtfsMaxStopsPerAlert)"))
            case .success(let placed):
                items.append(Self.item(placed, feed: feed))
            }
        }
        let outcome: NamedIntelFeed.Outcome
        do {
            outcome = try await stream.apply(items, scope: feed, ending: message.isFullDataset ? .allOthers : .listed(deleted),
                                             now: started.timeIntervalSince1970)
        } catch {
            throw .unavailable(error.message)
        }
        report.added = outcome.added
        report.changed = outcome.changed
        report.unchanged = outcome.unchanged
        return Outcome(report: report, ended: outcome.ended)
    }

    /// An alert as an item: a disruption for transit riders, tagged with the kinds of vehicle it concerns.
    static func item(_ placed: PlacedAlert, feed: String) -> NamedItem {
        var tags: [String] = []
        for name in placed.routeTypes.compactMap(TransitRoute.typeName) where !tags.contains(name) { tags.append(name) }
        return NamedItem(scope: feed, name: placed.id, source: feed, points: placed.points.compactMap { GeoPoint(lat: $0.lat, lon: $0.lon) },
                         kind: .disruption, tags: tags, modes: [.transit], body: placed.body, translations: placed.translations,
                         endsAt: placed.expiresAt)
    }
}
