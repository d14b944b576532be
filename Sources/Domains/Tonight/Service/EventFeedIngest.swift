import DomainSeam
import Foundation
import Realtime
import Storage
import StreamingXML
import Tonight

/// What a feed's ingest added and changed, for telling users: the events (as they were, nil when
/// new; as they are) and the notes that keep them until users were told.
struct FeedChanges: Sendable {
    var events: [(old: FeedEvent?, new: FeedEvent)]
    var notes: [Int64]
}

/// `POST /api/feeds/events` (feeds.md): the event-info XML, parsed as it arrives and written while
/// it is read. Records go to the store in batches (only those that changed), each batch committing
/// on the store's thread while the next is parsed (`maxInFlight`); the catalog takes a batch once
/// it is durable, so it never holds what the store does not. An event whose venue or performers
/// the feed has not given yet waits for the end of the feed (records come in any order), then is
/// checked and written like the others. A body that is not XML (or is cut off, or hostile)
/// answers 400 with the position; what was read before it is kept and counted.
struct EventFeedIngest: Sendable {
    let catalog: Catalog
    let store: Store
    let maxBodyBytes: Int
    /// Records per durable write.
    var batch = 2_000
    /// Batches committing at once while the feed is read on.
    var maxInFlight = 2
    /// Told of the events added or changed (as they were, as they are) once they are durable,
    /// before the ingest answers: users' suggestions, announcements and changes.
    var onEvents: @Sendable (FeedChanges) async -> Void = { _ in }

    var endpoint: HTTPEndpoint {
        HTTPEndpoint("POST", "/api/feeds/events", maxBodyBytes: maxBodyBytes) { request in await run(request.body) }
    }

    /// A record's identity across kinds (a venue and an event may share an ID, not a row).
    private struct Key: Hashable {
        var kind: UInt8
        var row: Int64

        init(_ r: FeedRecord, row: Int64) {
            switch r {
            case .category: kind = 0
            case .artist: kind = 1
            case .venue: kind = 2
            case .event: kind = 3
            }
            self.row = row
        }
    }

    /// One ingest's progress.
    private struct Progress {
        var report = IngestReport()
        /// Venues without coordinates.
        var unlocated = 0
        /// Events added or changed: as they were (nil: new) and as they are.
        var events: [(old: FeedEvent?, new: FeedEvent)] = []
        /// Venues and artists this feed gave (accepted): events may refer to them before the
        /// catalog holds them, while their batch commits.
        var venues = Set<String>(), artists = Set<String>()
        /// Records handed to the store that the catalog does not hold yet.
        var inFlight: [Key: FeedRecord] = [:]
        /// The batches committing, oldest first, with their records' keys.
        var writes: [(task: Task<Int64?, Error>, keys: [Key])] = []
        /// The notes of the batches written (`CatalogRows.note`).
        var notes: [Int64] = []
        /// Time zone names met, and whether each is one (looking one up costs more than a record).
        var zones: [String: Bool] = [:]

        mutating func knownZone(_ name: String) -> Bool {
            if let known = zones[name] { return known }
            let known = TimeZone(identifier: name) != nil
            zones[name] = known
            return known
        }
    }

    /// The ingest's second stage, behind the parser: sorting, counting and writing what was read,
    /// one batch after another, on threads other than the parser's. Its state is touched only by
    /// the chain of tasks `then` makes, one at a time.
    private final class Stage: @unchecked Sendable {
        var progress = Progress()
        /// Events whose venue or performers the feed has not given yet.
        var waiting: [(FeedEvent, Int)] = []
        var failed: Error?
        private var last: Task<Void, Never>?

        /// Runs `work` after everything handed over before it, unless something failed.
        @discardableResult
        func then(_ work: @escaping @Sendable (Stage) async throws -> Void) -> Task<Void, Never> {
            let previous = last
            let task = Task {
                await previous?.value
                guard self.failed == nil else { return }
                do { try await work(self) } catch { self.failed = error }
            }
            last = task
            return task
        }
    }

    func run(_ body: RequestBody) async -> HTTPResponse {
        let stage = Stage()
        var read: [(FeedRecord, Int)] = [], rejects: [FeedReject] = []
        // Records arrive during `feed` below; they are only collected here.
        let reader = EventFeedReader(onRecord: { record, line in read.append((record, line)) }, onReject: { rejects.append($0) })
        let parser = StreamingXMLParser(handler: reader)
        var failure: StreamingXMLParser.Failure?
        var queued: [Task<Void, Never>] = []
        /// Hands what was read to the second stage; at most `maxInFlight` batches wait there.
        func handOver() async {
            let batch = read
            read.removeAll(keepingCapacity: true)
            queued.append(stage.then { s in try await self.hand(self.sorting(batch, into: &s.waiting, &s.progress), &s.progress) })
            while queued.count > maxInFlight { await queued.removeFirst().value }
        }
        var aborted = false
        do {
            for try await chunk in body {
                if let stop = chunk.withUnsafeBytes({ bytes -> StreamingXMLParser.Failure? in
                    do throws(StreamingXMLParser.Failure) { try parser.feed(bytes) } catch { return error }
                    return nil
                }) {
                    failure = stop
                    break
                }
                if read.count >= batch { await handOver() }
                if stage.failed != nil { break }
            }
            if failure == nil {
                do throws(StreamingXMLParser.Failure) { try parser.finish() } catch { failure = error }
            }
        } catch {
            aborted = true // the transport has answered already
        }
        if !aborted { await handOver() }
        // The whole feed is read: every event that waited is checked once more, then all is written.
        let complete = !aborted
        await stage.then { s in
            guard complete else { return }
            var resolved: [(FeedRecord, Int)] = []
            for (e, line) in s.waiting {
                if let reason = self.unresolved(e, s.progress) {
                    s.progress.report.rejects.append(IngestReport.Reject(record: "Event \(e.id)", line: line, reason: reason))
                } else {
                    resolved.append((.event(e), line))
                }
                if resolved.count >= self.batch { try await self.hand(resolved, &s.progress); resolved.removeAll(keepingCapacity: true) }
            }
            try await self.hand(resolved, &s.progress)
        }.value
        do { try await drain(&stage.progress) } catch { stage.failed = stage.failed ?? error }
        var progress = stage.progress
        await onEvents(FeedChanges(events: progress.events, notes: progress.notes))
        if aborted { return .error(400, "the body did not arrive whole") }
        if let error = stage.failed {
            return .error(503, "could not save the feed; what was written before stays: \(error)", headers: [("Retry-After", "5")])
        }
        progress.report.rejects += rejects.map(IngestReport.Reject.init)
        progress.report.rejects.sort { ($0.line ?? 0) < ($1.line ?? 0) }
        let counts = progress.report.fields([("unlocated", .int(progress.unlocated))])
        guard let failure else { return .json(200, .object(counts)) }
        return .error(400, failure.message, [("line", .int(failure.line)), ("column", .int(failure.column)), ("offset", .int(failure.offset))] + counts)
    }

    /// Why an event cannot be kept, if it cannot (its venue unknown, or every performer).
    private func unresolved(_ e: FeedEvent, _ p: Progress) -> String? {
        if !p.venues.contains(e.venue), !catalog.hasVenue(e.venue) { return "unknown venue \(e.venue)" }
        if !e.performers.contains(where: p.artists.contains), catalog.knownArtists(e.performers) == 0 { return "every performer unknown" }
        return nil
    }

    /// Takes what was read: events whose references are not known yet go to `waiting`, the rest is returned.
    private func sorting(_ read: [(FeedRecord, Int)], into waiting: inout [(FeedEvent, Int)], _ p: inout Progress) -> [(FeedRecord, Int)] {
        var ready: [(FeedRecord, Int)] = []
        ready.reserveCapacity(read.count)
        for (record, line) in read {
            switch record {
            case .event(let e) where unresolved(e, p) != nil: waiting.append((e, line))
            case .venue(let v):
                if let zone = v.timeZone, !p.knownZone(zone) {
                    p.report.rejects.append(IngestReport.Reject(record: "Venue \(v.id)", line: line, reason: "VenueTimeZone \(zone) is not a time zone"))
                    continue
                }
                p.venues.insert(v.id)
                ready.append((record, line))
            case .artist(let a):
                p.artists.insert(a.id)
                ready.append((record, line))
            default: ready.append((record, line))
            }
        }
        return ready
    }

    /// Counts records against what the catalog (or a batch still committing) holds and hands the
    /// changed ones to the store, each to its row, without waiting, unless `maxInFlight` batches
    /// already commit.
    private func hand(_ records: [(FeedRecord, Int)], _ p: inout Progress) async throws {
        var changed: [(row: Int64, record: FeedRecord)] = [], keys: [Key] = []
        let eventsBefore = p.events.count
        // Each record's row and what the catalog holds there, in one look (its lock taken once per batch).
        let held = catalog.with { c in records.map { c.row(for: $0.0) } }
        for ((record, _), (row, catalogHeld)) in zip(records, held) {
            if case .venue(let v) = record, v.latitude == nil { p.unlocated += 1 }
            let key = Key(record, row: row)
            let before = (p.inFlight.isEmpty ? nil : p.inFlight[key]) ?? catalogHeld
            if before == record { p.report.unchanged += 1; continue }
            if before == nil { p.report.added += 1 } else { p.report.changed += 1 }
            if case .event(let e) = record {
                let old: FeedEvent? = if case .event(let o)? = before { o } else { nil }
                p.events.append((old, e))
            }
            p.inFlight[key] = record
            changed.append((row, record))
            keys.append(key)
        }
        guard !changed.isEmpty else { return }
        let rows = changed, store = self.store, catalog = self.catalog, events = Array(p.events[eventsBefore...])
        p.writes.append((Task {
            let note = try await store.write { db -> Int64? in
                for (row, record) in rows { try CatalogRows.upsert(record, row: row, db) }
                // Users are told once the whole feed is read: noted here, so a stop before then loses nothing.
                return events.isEmpty ? nil : try CatalogRows.note(events, db)
            }
            catalog.apply(rows.lazy.map(\.record))
            return note
        }, keys))
        while p.writes.count > maxInFlight { try await finishOldest(&p) }
    }

    /// Waits for the oldest batch; its records are in the catalog now.
    private func finishOldest(_ p: inout Progress) async throws {
        let (task, keys) = p.writes.removeFirst()
        if let note = try await task.value { p.notes.append(note) }
        for k in keys { p.inFlight[k] = nil }
    }

    /// Waits for every batch; after a failed one, for the others too, then throws its error.
    private func drain(_ p: inout Progress) async throws {
        var firstError: Error?
        while !p.writes.isEmpty {
            do { try await finishOldest(&p) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }
}
