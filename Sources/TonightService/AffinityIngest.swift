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

    var endpoint: HTTPEndpoint {
        HTTPEndpoint("POST", "/api/feeds/affinity", maxBodyBytes: maxBodyBytes) { request in await run(request.body) }
    }

    func run(_ body: RequestBody) async -> HTTPResponse {
        let started = Date()
        var reader = AffinityReader()
        var blocks: [AffinityBlock] = [], rejects: [FeedReject] = []
        var added = 0, changed = 0, unchanged = 0
        do {
            for try await chunk in body {
                chunk.withUnsafeBytes { reader.feed($0, onBlock: { blocks.append($0) }, onReject: { rejects.append($0) }) }
                if blocks.count >= batch {
                    try await apply(blocks, &rejects, &added, &changed, &unchanged)
                    blocks.removeAll(keepingCapacity: true)
                }
            }
            reader.finish(onBlock: { blocks.append($0) }, onReject: { rejects.append($0) })
            try await apply(blocks, &rejects, &added, &changed, &unchanged)
        } catch is RequestBody.Aborted {
            return .error(400, "the body did not arrive whole")
        } catch {
            return HTTPResponse(status: 503, contentType: "application/json",
                                body: Array((JSON.object([("error", .string("could not save the affinity feed; what was written before stays"))]).encoded + "\n").utf8),
                                headers: [("Retry-After", "5")])
        }
        rejects.sort { $0.line < $1.line }
        return .json(200, ["added": .int(added), "changed": .int(changed), "unchanged": .int(unchanged), "rejected": .int(rejects.count),
                           "rejects": .array(rejects.prefix(EventFeedIngest.listedRejects).map { r in
                               ["record": .string(r.record), "line": .int(r.line), "reason": .string(r.reason)]
                           }),
                           "ms": .int(Int(Date().timeIntervalSince(started) * 1000))])
    }

    /// Resolves each block's artist and recommendations, writes the changed ones in one transaction.
    private func apply(_ blocks: [AffinityBlock], _ rejects: inout [FeedReject], _ added: inout Int, _ changed: inout Int,
                       _ unchanged: inout Int) async throws {
        var writes: [(String, [Catalog.Recommendation])] = []
        for block in blocks {
            let matches = catalog.artists(named: block.header)
            guard matches.count == 1, let artist = matches.first else {
                let reason = matches.isEmpty ? "no artist is called \(block.header)" : "\(matches.count) artists are called \(block.header)"
                rejects.append(FeedReject(record: "line \(block.line)", line: block.line, reason: reason))
                continue
            }
            var list: [Catalog.Recommendation] = []
            for r in block.recommendations {
                guard catalog.artist(r.artist) != nil else {
                    rejects.append(FeedReject(record: "line \(r.line)", line: r.line, reason: "unknown artist ID \(r.artist)"))
                    continue
                }
                list.append(Catalog.Recommendation(artist: r.artist, score: r.score))
            }
            let old = catalog.recommendations(of: artist)
            if old.isEmpty {
                added += 1
            } else if Set(old.map { "\($0.artist)|\($0.score)" }) == Set(list.map { "\($0.artist)|\($0.score)" }) {
                unchanged += 1
                continue
            } else {
                changed += 1
            }
            writes.append((artist, list))
        }
        guard !writes.isEmpty else { return }
        let rows = writes
        try await store.write { db in for (artist, list) in rows { try CatalogRows.replaceRecommendations(of: artist, with: list, db) } }
        for (artist, list) in rows { catalog.setRecommendations(list, of: artist) }
    }
}
