import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Realtime
import ServiceLifecycle

/// An operator's GTFS-Realtime URL that the server polls (`routes.gtfsRt`).
struct RealtimeSource: Sendable, Equatable {
    var feed: String
    var url: String
    var intervalSeconds: Double

    /// `routes.gtfsRt`: a JSON array of `{feed, url, intervalSeconds}`; errors name the entry and field.
    static func parse(_ text: String) throws -> [RealtimeSource] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return [] }
        struct Bad: Error, CustomStringConvertible { var description: String }
        guard case .array(let entries) = try? JSONParser.parse(Array(trimmed.utf8)) else {
            throw Bad(description: "routes.gtfsRt must be a JSON array of {\"feed\", \"url\", \"intervalSeconds\"}")
        }
        return try entries.enumerated().map { i, entry in
            guard case .string(let feed)? = entry["feed"], !feed.isEmpty, feed.count <= 64, !feed.contains("/") else {
                throw Bad(description: "routes.gtfsRt[\(i)].feed must be a feed name (1 to 64 characters, no /)")
            }
            guard case .string(let url)? = entry["url"], let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""),
                  parsed.host != nil else {
                throw Bad(description: "routes.gtfsRt[\(i)].url must be an http or https URL")
            }
            let interval: Double
            switch entry["intervalSeconds"] {
            case .int(let n)?: interval = Double(n)
            case .double(let d)?: interval = d
            case nil: interval = 30
            default: throw Bad(description: "routes.gtfsRt[\(i)].intervalSeconds must be a number of seconds")
            }
            guard interval >= 1, interval <= 86_400 else { throw Bad(description: "routes.gtfsRt[\(i)].intervalSeconds must be 1 to 86400") }
            return RealtimeSource(feed: feed, url: url, intervalSeconds: interval)
        }
    }
}

/// Polls each `RealtimeSource` on its interval with async-http-client: a conditional GET (the last
/// 200's `ETag` and `Last-Modified` sent back), a timeout, a body limit. A 200 is ingested like a
/// posted message; a 304 changes nothing; anything else (an error status, a timeout, a refused
/// message) is logged, counted in `hubbub_gtfs_rt_poll_failures_total{feed}`, and retried after
/// an exponential backoff with jitter (the interval doubled per failure, up to `maxBackoffSeconds`).
/// With several nodes only the intel hub's node polls (`polling`); the others wait their turn.
struct RealtimePoller: Service {
    let sources: [RealtimeSource]
    let ingest: AlertIngest
    let timeoutSeconds: Double
    let maxBackoffSeconds: Double
    let maxBytes: Int
    let logger: Logger
    /// Whether this node polls now (it holds the intel hub).
    let polling: @Sendable () async -> Bool

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                for source in sources { group.addTask { await poll(source) } }
            }
        }
    }

    /// What the last 200 said, to ask for changes only.
    private struct Validators {
        var etag: String?
        var lastModified: String?
    }

    private func poll(_ source: RealtimeSource) async {
        var validators = Validators()
        var failures = 0
        let polls = { (result: String) in Counter(label: "hubbub_gtfs_rt_polls_total", dimensions: [("feed", source.feed), ("result", result)]) }
        let failed = Counter(label: "hubbub_gtfs_rt_poll_failures_total", dimensions: [("feed", source.feed)])
        while !Task.isCancelled {
            guard await polling() else {
                // Another node polls; when this one takes over it asks for the whole message again.
                validators = Validators()
                do { try await Task.sleep(for: .seconds(min(source.intervalSeconds, 1))) } catch { return }
                continue
            }
            do {
                let changed = try await fetch(source, &validators)
                polls(changed ? "ok" : "not_modified").increment()
                failures = 0
            } catch {
                if Task.isCancelled { return }
                failures += 1
                failed.increment()
                logger.warning("transit: GTFS-Realtime poll failed", metadata: ["feed": "\(source.feed)", "url": "\(source.url)",
                                                                               "failures": "\(failures)", "error": "\(error)"])
            }
            // Backoff: the interval doubled per failure in a row, capped, with jitter so operators are not hit in step.
            let wait = failures == 0 ? source.intervalSeconds
                : min(maxBackoffSeconds, source.intervalSeconds * pow(2, Double(min(failures, 20)))) * Double.random(in: 0.5...1)
            do { try await Task.sleep(for: .seconds(wait)) } catch { return }
        }
    }

    struct PollError: Error, CustomStringConvertible {
        var description: String
    }

    /// One conditional GET; whether it brought a new message.
    private func fetch(_ source: RealtimeSource, _ validators: inout Validators) async throws -> Bool {
        var request = HTTPClientRequest(url: source.url)
        request.headers.add(name: "Accept", value: "application/x-protobuf, application/octet-stream")
        if let etag = validators.etag { request.headers.add(name: "If-None-Match", value: etag) }
        if let modified = validators.lastModified { request.headers.add(name: "If-Modified-Since", value: modified) }
        let response = try await HTTPClient.shared.execute(request, timeout: .milliseconds(Int64(timeoutSeconds * 1000)))
        switch response.status {
        case .notModified:
            return false
        case .ok:
            let body = try await response.body.collect(upTo: maxBytes)
            let started = Date()
            do {
                let outcome = try await ingest.ingest(Array(buffer: body), feed: source.feed, started: started)
                logger.debug("transit: GTFS-Realtime message", metadata: ["feed": "\(source.feed)", "added": "\(outcome.report.added)",
                                                                          "changed": "\(outcome.report.changed)", "ended": "\(outcome.ended)"])
            } catch {
                throw PollError(description: "message refused: \(error.message)")
            }
            // Remembered only once the message is in: a refused one is asked for again in full.
            validators = Validators(etag: response.headers.first(name: "ETag"), lastModified: response.headers.first(name: "Last-Modified"))
            return true
        default:
            throw PollError(description: "HTTP \(response.status.code)")
        }
    }
}
