import SwiftProtobuf
import Transit

/// A GTFS-Realtime `FeedMessage` read into Transit's alerts: each entity with an alert (or marked
/// deleted) becomes a `TransitAlert`; an entity with no id, or with neither, is refused with a
/// reason. Bytes that are not a FeedMessage (truncated, not protobuf) are refused whole.
public enum GTFSRealtimeDecoder {
    /// What a message held.
    public struct Message: Sendable, Equatable {
        /// A full dataset: alerts missing from it are over. (Otherwise differential: only what
        /// it names changes.)
        public var isFullDataset: Bool
        public var timestamp: UInt64?
        public var alerts: [TransitAlert]
        /// Entities refused: their id (or position) and why.
        public var refused: [(entity: String, reason: String)]

        public static func == (a: Message, b: Message) -> Bool {
            a.isFullDataset == b.isFullDataset && a.timestamp == b.timestamp && a.alerts == b.alerts
                && a.refused.elementsEqual(b.refused) { $0.entity == $1.entity && $0.reason == $1.reason }
        }
    }

    /// Why a message was refused whole.
    public struct Failure: Error, Sendable, Equatable {
        public var reason: String
    }

    public static func decode(_ bytes: [UInt8]) throws(Failure) -> Message {
        let feed: TransitRealtime_FeedMessage
        do {
            feed = try TransitRealtime_FeedMessage(serializedBytes: bytes)
        } catch {
            throw Failure(reason: "not a GTFS-Realtime FeedMessage (\(error))")
        }
        guard feed.hasHeader else { throw Failure(reason: "the FeedMessage has no header") }
        var out = Message(isFullDataset: feed.header.incrementality == .fullDataset,
                          timestamp: feed.header.hasTimestamp ? feed.header.timestamp : nil, alerts: [], refused: [])
        for (i, entity) in feed.entity.enumerated() {
            guard entity.hasID, !entity.id.isEmpty else {
                out.refused.append(("entity \(i + 1)", "no id"))
                continue
            }
            if entity.isDeleted {
                out.alerts.append(TransitAlert(id: entity.id, isDeleted: true))
                continue
            }
            guard entity.hasAlert else {
                out.refused.append((entity.id, "not an alert (trip updates and vehicle positions are not read)"))
                continue
            }
            out.alerts.append(alert(entity.id, entity.alert))
        }
        return out
    }

    static func alert(_ id: String, _ a: TransitRealtime_Alert) -> TransitAlert {
        func texts(_ s: TransitRealtime_TranslatedString) -> [TransitAlert.Translation] {
            s.translation.filter(\.hasText).map { TransitAlert.Translation($0.text, language: $0.hasLanguage && !$0.language.isEmpty ? $0.language : nil) }
        }
        return TransitAlert(
            id: id,
            activePeriods: a.activePeriod.map { (start: $0.hasStart ? $0.start : nil, end: $0.hasEnd ? $0.end : nil) },
            entities: a.informedEntity.map { e in
                TransitAlert.Entity(agency: e.hasAgencyID ? e.agencyID : nil, route: e.hasRouteID ? e.routeID : nil,
                                    routeType: e.hasRouteType ? Int(e.routeType) : nil,
                                    trip: e.hasTrip && e.trip.hasTripID ? e.trip.tripID : nil,
                                    tripRoute: e.hasTrip && e.trip.hasRouteID ? e.trip.routeID : nil, stop: e.hasStopID ? e.stopID : nil)
            },
            header: texts(a.headerText), description: texts(a.descriptionText))
    }
}
