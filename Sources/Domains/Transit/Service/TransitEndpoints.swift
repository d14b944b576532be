import DomainSeam
import Foundation
import Logging
import Realtime
import RouteService
import Storage
import Transit

/// `?feed=<name>` of the transit endpoints: 1–64 letters, digits, `-`, `_` or `.` (it names the
/// items' `source` and scopes their references, so never a `/`).
enum FeedName {
    /// The feed's name, or the 400 that says what is wrong with it.
    static func parse(_ request: HTTPRequest) -> (name: String?, refusal: HTTPResponse?) {
        guard let name = request.query["feed"], !name.isEmpty else {
            return (nil, .error(400, "field feed: give the feed's name in the query (?feed=<name>)"))
        }
        guard name.count <= 64, name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil || "-_.".unicodeScalars.contains($0)) })
        else { return (nil, .error(400, "field feed: 1 to 64 letters, digits, - _ or .")) }
        return (name, nil)
    }
}

/// `POST /api/feeds/gtfs?feed=<name>`: a GTFS zip, spooled to a file in the data directory (a zip
/// is read from its end), read (`GTFSArchive`) off the concurrency pool, stored as a new version
/// and put in force whole; the spool file is deleted whatever happens.
struct GTFSUpload: Sendable {
    let networks: TransitNetworks
    let store: Store
    let spoolDirectory: String
    let maxBodyBytes: Int
    let limits: GTFSArchive.Limits
    let logger: Logger
    /// Rows per transaction while a version is written.
    var batch = 5_000
    let turns = Turns()

    var endpoint: HTTPEndpoint {
        HTTPEndpoint("POST", "/api/feeds/gtfs", maxBodyBytes: maxBodyBytes) { request in await handle(request) }
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let (name, refusal) = FeedName.parse(request)
        guard let feed = name else { return refusal! }
        var report = IngestReport()
        let url = URL(fileURLWithPath: spoolDirectory).appendingPathComponent("gtfs-\(UUID().uuidString).zip")
        defer { try? FileManager.default.removeItem(at: url) }
        guard (try? FileManager.default.createDirectory(atPath: spoolDirectory, withIntermediateDirectories: true)) != nil,
              FileManager.default.createFile(atPath: url.path, contents: nil),
              let file = try? FileHandle(forWritingTo: url) else {
            logger.error("transit: cannot spool a GTFS zip", metadata: ["directory": "\(spoolDirectory)"])
            return .error(503, "could not spool the zip to disk", headers: [("Retry-After", "5")])
        }
        do {
            defer { try? file.close() }
            var received = 0
            for try await chunk in request.body {
                received += chunk.count
                guard received <= maxBodyBytes else { return .error(413, "the zip is larger than \(maxBodyBytes) bytes (routes.gtfsMaxZipBytes)") }
                try file.write(contentsOf: chunk)
            }
        } catch {
            return .error(400, "the body did not arrive: \(error)")
        }
        let limits = self.limits, readStarted = Date()
        let read: Result<GTFSReader, GTFSArchive.Refusal> = await withCheckedContinuation { done in
            // Seconds of CPU for a large city: on a thread of its own, not the concurrency pool's.
            Thread.detachNewThread { done.resume(returning: Result { () throws(GTFSArchive.Refusal) in try GTFSArchive.read(url, limits: limits) }) }
        }
        let reader: GTFSReader
        switch read {
        case .success(let r): reader = r
        case .failure(let refusal):
            logger.warning("transit: GTFS feed refused", metadata: ["feed": "\(feed)", "reason": "\(refusal.reason)"])
            return .error(400, "\(refusal.reason); the feed in force is unchanged")
        }
        let network = reader.finished()
        guard !network.stops.isEmpty, !network.routes.isEmpty else {
            return .json(400, .object([("error", .string("no stop or no route survived the checks; the feed in force is unchanged"))]
                                      + report.withRejects(reader).fields()))
        }
        let readSeconds = Date().timeIntervalSince(readStarted), storeStarted = Date()
        let version = Int64.random(in: 1...Int64.max), now = report.started.timeIntervalSince1970
        // One upload stores and swaps at a time, so the version in force on disk and in memory is
        // the same one: the last to finish.
        await turns.enter()
        networks.beginWriting(version)
        do {
            try await NetworkRows.write(feed, version: version, network, batch: batch, to: store)
            try await store.write { db in try NetworkRows.commit(feed, version: version, at: now, db) }
        } catch {
            networks.endWriting(version)
            await turns.leave()
            return .error(503, "could not store the feed; the feed in force is unchanged", headers: [("Retry-After", "1")])
        }
        networks.replace(feed, with: network, version: version)
        networks.endWriting(version)
        let storeSeconds = Date().timeIntervalSince(storeStarted)
        do {
            // The version replaced (and any other not in force, sparing uploads still writing theirs).
            let networks = self.networks
            _ = try await NetworkRows.dropOrphans(writing: { networks.writing }, batch: batch, in: store)
        } catch {
            logger.warning("transit: old versions of a feed not deleted yet", metadata: ["feed": "\(feed)", "error": "\(error)"])
        }
        await turns.leave()
        report = report.withRejects(reader)
        report.added = network.stops.count + network.routes.count
        logger.info("transit: GTFS feed in force", metadata: ["feed": "\(feed)", "stops": "\(network.stops.count)",
                                                              "routes": "\(network.routes.count)", "trips": "\(network.tripCount)",
                                                              "rejected": "\(reader.rejectCount)", "readMs": "\(Int(readSeconds * 1000))",
                                                              "storeMs": "\(Int(storeSeconds * 1000))"])
        return .json(200, .object(report.fields([("feed", .string(feed)), ("agencies", .int(network.agencies.count)),
                                                 ("stops", .int(network.stops.count)), ("routes", .int(network.routes.count)),
                                                 ("trips", .int(network.tripCount))])))
    }
}

extension IngestReport {
    /// With the GTFS reader's rejects (its first ones listed; `rejected` counts them all).
    fileprivate func withRejects(_ reader: GTFSReader) -> IngestReport {
        var out = self
        out.rejects = reader.rejects.map { .init(record: $0.file.rawValue, line: $0.line, reason: $0.reason) }
        out.unlisted = reader.rejectCount - reader.rejects.count
        return out
    }
}

/// `POST /api/feeds/gtfs-rt?feed=<name>`: one GTFS-Realtime FeedMessage (`AlertIngest`).
struct RealtimeUpload: Sendable {
    let ingest: AlertIngest
    let maxBodyBytes: Int

    var endpoint: HTTPEndpoint {
        // Read and placed on the node that received it; the items go to the `named` shard's owner
        // in parts (`NamedIntelFeed`), not the message.
        HTTPEndpoint("POST", "/api/feeds/gtfs-rt", maxBodyBytes: maxBodyBytes) { request in await handle(request) }
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = Date()
        let (name, refusal) = FeedName.parse(request)
        guard let feed = name else { return refusal! }
        let (body, tooLarge) = await request.wholeBody(upTo: maxBodyBytes, setting: "routes.gtfsRtMaxBytes")
        guard let bytes = body else { return tooLarge! }
        do {
            let outcome = try await ingest.ingest(bytes, feed: feed, started: started)
            return .json(200, .object(outcome.report.fields([("ended", .int(outcome.ended))])))
        } catch {
            return .error(error.status, error.message, headers: error.status == 503 ? [("Retry-After", "1")] : [])
        }
    }
}

/// Takes turns: one holder at a time, the others wait in order (an async lock).
actor Turns {
    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        guard held else { held = true; return }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the turn to the next waiting, if any.
    func leave() {
        if waiting.isEmpty { held = false } else { waiting.removeFirst().resume() }
    }
}
