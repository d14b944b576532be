import DomainSeam
import Foundation
import Realtime
import Storage
import Tonight

/// `POST /api/feeds/affinity` (feeds.md): the seed's affinity text, read as it arrives. Each
/// block's header names an artist, resolved by name (case and accents aside; no match or several
/// matches is a reject); its recommendations, each by a known artist ID with a score from 0 to 1,
/// replace that artist's earlier ones. Artists the feed does not name keep theirs.
struct AffinityIngest: Sendable {
    let catalog: Catalog
    let store: Store
    let maxBodyBytes: Int
    /// Artists' recommendations written per transaction.
    var batch = 500
    /// Told which artists' recommendations changed once they are durable, before the ingest answers.
    var onChange: @Sendable ([String]) async -> Void = { _ in }

    var endpoint: HTTPEndpoint {
        HTTPEndpoint("POST", "/api/feeds/affinity", maxBodyBytes: maxBodyBytes) { request in await run(request.body) }
    }

    func run(_ body: RequestBody) async -> HTTPResponse {
        var report = IngestReport()
        var reader = AffinityReader()
        var blocks: [AffinityBlock] = []
        do {
            for try await chunk in body {
                chunk.withUnsafeBytes { reader.feed($0, onBlock: { blocks.append($0) }, onReject: { report.rejects.append(.init($0)) }) }
                if blocks.count >= batch {
                    try await apply(blocks, &report)
                    blocks.removeAll(keepingCapacity: true)
                }
            }
            reader.finish(onBlock: { blocks.append($0) }, onReject: { report.rejects.append(.init($0)) })
            try await apply(blocks, &report)
        } catch is RequestBody.Aborted {
            return .error(400, "the body did not arrive whole")
        } catch {
            return .error(503, "could not save the affinity feed; what was written before stays", headers: [("Retry-After", "5")])
        }
        report.rejects.sort { ($0.line ?? 0) < ($1.line ?? 0) }
        return .json(200, .object(report.fields()))
    }

    /// Resolves each block's artist and recommendations, writes the changed ones in one transaction.
    private func apply(_ blocks: [AffinityBlock], _ report: inout IngestReport) async throws {
        var writes: [(String, [EventCatalog.Recommendation])] = []
        for block in blocks {
            let matches = catalog.artists(named: block.header)
            guard matches.count == 1, let artist = matches.first else {
                let reason = matches.isEmpty ? "no artist is called \(block.header)" : "\(matches.count) artists are called \(block.header)"
                report.rejects.append(.init(record: "line \(block.line)", line: block.line, reason: reason))
                continue
            }
            var list: [EventCatalog.Recommendation] = []
            for r in block.recommendations {
                guard catalog.artist(r.artist) != nil else {
                    report.rejects.append(.init(record: "line \(r.line)", line: r.line, reason: "unknown artist ID \(r.artist)"))
                    continue
                }
                list.append(EventCatalog.Recommendation(artist: r.artist, score: r.score))
            }
            let old = catalog.recommendations(of: artist)
            if old.isEmpty {
                report.added += 1
            } else if old == EventCatalog.ordered(list) {
                report.unchanged += 1
                continue
            } else {
                report.changed += 1
            }
            writes.append((artist, list))
        }
        guard !writes.isEmpty else { return }
        let rows = writes
        try await store.write { db in for (artist, list) in rows { try CatalogRows.replaceRecommendations(of: artist, with: list, db) } }
        for (artist, list) in rows { catalog.setRecommendations(list, of: artist) }
        await onChange(rows.map(\.0))
    }
}
