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
    /// At most this many rejects are listed (all are counted).
    static let listedRejects = 100

    var endpoint: HTTPEndpoint {
        HTTPEndpoint("POST", "/api/feeds/events", maxBodyBytes: maxBodyBytes) { request in await run(request.body) }
    }

    /// What one ingest did.
    struct Tally {
        var added = 0, changed = 0, unchanged = 0, unlocated = 0
        var rejects: [FeedReject] = []
    }

    /// Hands the parser's elements to the reader (the reader reads text only for the fields it keeps).
    final class Adapter: XMLElementHandler {
        let reader: EventFeedReader
        init(_ reader: EventFeedReader) { self.reader = reader }
        func start(_ name: String, attributes: [String: String], line: Int) { reader.start(name, attributes: attributes, line: line) }
        func end(_ name: String, text: XMLText) { reader.end(name, text: { text.string }) }
    }

    func run(_ body: RequestBody) async -> HTTPResponse {
        let started = Date()
        var tally = Tally()
        var pending: [(FeedRecord, Int)] = [], events: [(FeedEvent, Int)] = []
        let reader = EventFeedReader(onRecord: { record, line in
            if case .event(let e) = record { events.append((e, line)) } else { pending.append((record, line)) }
        }, onReject: { tally.rejects.append($0) })
        let parser = StreamingXMLParser(handler: Adapter(reader))
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
            return HTTPResponse(status: 503, contentType: "application/json",
                                body: Array((JSON.object([("error", .string("could not save the feed; what was written before stays: \(error)"))]).encoded + "\n").utf8),
                                headers: [("Retry-After", "5")])
        }
        var fields: [(String, JSON)] = [
            ("added", .int(tally.added)), ("changed", .int(tally.changed)), ("unchanged", .int(tally.unchanged)),
            ("rejected", .int(tally.rejects.count)),
            ("rejects", .array(tally.rejects.prefix(Self.listedRejects).map { r in
                ["record": .string(r.record), "line": .int(r.line), "reason": .string(r.reason)]
            })),
            ("unlocated", .int(tally.unlocated)), ("ms", .int(Int(Date().timeIntervalSince(started) * 1000))),
        ]
        guard let failure else { return .json(200, .object(fields)) }
        fields.insert(("error", .string(failure.message)), at: 0)
        fields.insert(contentsOf: [("line", .int(failure.line)), ("column", .int(failure.column)), ("offset", .int(failure.offset))], at: 1)
        return .json(400, .object(fields))
    }

    /// Events whose venue is known and at least one of whose performers is, now that the whole feed is read.
    private func resolveAndWrite(_ events: [(FeedEvent, Int)], _ tally: inout Tally) async throws {
        var kept: [(FeedRecord, Int)] = []
        for (e, line) in events {
            if !catalog.hasVenue(e.venue) {
                tally.rejects.append(FeedReject(record: "Event \(e.id)", line: line, reason: "unknown venue \(e.venue)"))
            } else if catalog.knownArtists(e.performers) == 0 {
                tally.rejects.append(FeedReject(record: "Event \(e.id)", line: line, reason: "every performer unknown"))
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
        for (record, line) in records {
            if case .venue(let v) = record {
                if let zone = v.timeZone, TimeZone(identifier: zone) == nil {
                    tally.rejects.append(FeedReject(record: "Venue \(v.id)", line: line, reason: "VenueTimeZone \(zone) is not a time zone"))
                    continue
                }
                if v.latitude == nil { tally.unlocated += 1 }
            }
            switch catalog.change(record) {
            case .added: tally.added += 1; changed.append(record)
            case .changed: tally.changed += 1; changed.append(record)
            case .unchanged: tally.unchanged += 1
            }
        }
        guard !changed.isEmpty else { return }
        let rows = changed
        try await store.write { db in for r in rows { try CatalogRows.upsert(r, db) } }
        catalog.apply(rows)
    }
}
