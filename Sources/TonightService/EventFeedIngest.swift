import DomainSeam
import Foundation
import Realtime
import Storage
import StreamingXML
import Tonight

/// `POST /api/feeds/events` (feeds.md): the event-info XML, parsed as it arrives. Categories,
/// artists and venues are written in batches as they come (only those that changed); events wait
/// for the end of the feed, because their venue and performers may come after them, then are
/// checked against the catalog and written the same way. A body that is not XML (or is cut off,
/// or hostile) answers 400 with the position; what was read before it is kept and counted.
struct EventFeedIngest: Sendable {
    let catalog: Catalog
    let store: Store
    let maxBodyBytes: Int
    /// Records per durable write.
    var batch = 2_000
    /// Told of the events added or changed (as they were, as they are) once they are durable,
    /// before the ingest answers: users' suggestions, announcements and changes.
    var onEvents: @Sendable ([(old: FeedEvent?, new: FeedEvent)]) async -> Void = { _ in }
    var endpoint: HTTPEndpoint {
        HTTPEndpoint("POST", "/api/feeds/events", maxBodyBytes: maxBodyBytes) { request in await run(request.body) }
    }

    /// What one ingest did: feeds.md's counts, and the venues without coordinates.
    struct Tally {
        var report = IngestReport()
        var unlocated = 0
        /// Events added or changed: as they were (nil: new) and as they are.
        var events: [(old: FeedEvent?, new: FeedEvent)] = []
    }

    func run(_ body: RequestBody) async -> HTTPResponse {
        var tally = Tally()
        var pending: [(FeedRecord, Int)] = [], events: [(FeedEvent, Int)] = []
        let reader = EventFeedReader(onRecord: { record, line in
            if case .event(let e) = record { events.append((e, line)) } else { pending.append((record, line)) }
        }, onReject: { tally.report.rejects.append(.init($0)) })
        let parser = StreamingXMLParser(handler: reader)
        var failure: StreamingXMLParser.Failure?
        do {
            for try await chunk in body {
                if let stop = chunk.withUnsafeBytes({ bytes -> StreamingXMLParser.Failure? in
                    do throws(StreamingXMLParser.Failure) { try parser.feed(bytes) } catch { return error }
                    return nil
                }) {
                    failure = stop
                    break
                }
                if pending.count >= batch {
                    try await write(pending, &tally)
                    pending.removeAll(keepingCapacity: true)
                }
            }
            if failure == nil {
                do throws(StreamingXMLParser.Failure) { try parser.finish() } catch { failure = error }
            }
            try await write(pending, &tally)
            try await resolveAndWrite(events, &tally)
        } catch is RequestBody.Aborted {
            return .error(400, "the body did not arrive whole") // the transport has answered already
        } catch {
            await onEvents(tally.events)
            return .error(503, "could not save the feed; what was written before stays: \(error)", headers: [("Retry-After", "5")])
        }
        await onEvents(tally.events)
        let counts = tally.report.fields([("unlocated", .int(tally.unlocated))])
        guard let failure else { return .json(200, .object(counts)) }
        return .error(400, failure.message, [("line", .int(failure.line)), ("column", .int(failure.column)), ("offset", .int(failure.offset))] + counts)
    }

    /// Events whose venue is known and at least one of whose performers is, now that the whole feed is read.
    private func resolveAndWrite(_ events: [(FeedEvent, Int)], _ tally: inout Tally) async throws {
        var kept: [(FeedRecord, Int)] = []
        for (e, line) in events {
            if !catalog.hasVenue(e.venue) {
                tally.report.rejects.append(IngestReport.Reject(record: "Event \(e.id)", line: line, reason: "unknown venue \(e.venue)"))
            } else if catalog.knownArtists(e.performers) == 0 {
                tally.report.rejects.append(IngestReport.Reject(record: "Event \(e.id)", line: line, reason: "every performer unknown"))
            } else {
                kept.append((.event(e), line))
            }
            if kept.count >= batch {
                try await write(kept, &tally)
                kept.removeAll(keepingCapacity: true)
            }
        }
        try await write(kept, &tally)
    }

    /// Writes what changed in one transaction, then updates the catalog and the counts.
    private func write(_ records: [(FeedRecord, Int)], _ tally: inout Tally) async throws {
        var changed: [FeedRecord] = []
        var events: [(old: FeedEvent?, new: FeedEvent)] = []
        for (record, line) in records {
            if case .venue(let v) = record {
                if let zone = v.timeZone, TimeZone(identifier: zone) == nil {
                    tally.report.rejects.append(IngestReport.Reject(record: "Venue \(v.id)", line: line, reason: "VenueTimeZone \(zone) is not a time zone"))
                    continue
                }
                if v.latitude == nil { tally.unlocated += 1 }
            }
            switch catalog.change(record) {
            case .added: tally.report.added += 1; changed.append(record)
            case .changed: tally.report.changed += 1; changed.append(record)
            case .unchanged: tally.report.unchanged += 1; continue
            }
            if case .event(let e) = record { events.append((catalog.event(e.id), e)) }
        }
        guard !changed.isEmpty else { return }
        let rows = changed
        try await store.write { db in for r in rows { try CatalogRows.upsert(r, db) } }
        catalog.apply(rows)
        tally.events += events
    }
}
