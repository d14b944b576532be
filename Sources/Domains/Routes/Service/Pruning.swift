import Foundation
import Logging
import Storage

/// Keeps the disk bounded by what is recent: items expired more than `keepExpiredSeconds` ago
/// (with their likes, comments and links) and corridors nobody subscribed to for
/// `keepCorridorSeconds` are deleted, in batches, so one run never holds the writer long.
struct Pruning: Sendable {
    let store: Store
    /// The corridors watched on this node now (their `route:` rooms in the feed).
    let watched: @Sendable () -> [String]
    let interval: Double
    let keepExpiredSeconds: Double
    let keepCorridorSeconds: Double
    let logger: Logger
    /// Rows deleted per transaction.
    var batch = 2_000

    /// One pass; returns what it deleted (items, corridors).
    @discardableResult
    func run(now: Double) async -> (items: Int, corridors: Int) {
        var items = 0, corridors = 0
        do {
            while true {
                let cutoff = now - keepExpiredSeconds, batch = self.batch
                let n = try await store.write { db in try IntelRows.prune(expiredBefore: cutoff, batch: batch, db) }
                items += n
                if n < batch { break }
            }
            // Watched corridors are in use whatever their row says: touched first, in the same
            // transaction (read there, so one watched meanwhile is seen).
            let watched = self.watched, unused = now - keepCorridorSeconds, batch = self.batch
            var first = true
            while true {
                let touch = first
                let n = try await store.write { db in
                    if touch {
                        let live = watched().sorted() // every node locks rows in one order
                        for start in stride(from: 0, to: live.count, by: batch) {
                            let chunk = Array(live[start..<min(start + batch, live.count)])
                            try db.execute(sql: "UPDATE corridor SET last_used = ? WHERE id IN (\(sqlPlaceholders(count: chunk.count)))",
                                           arguments: [now] + SQLArguments(chunk))
                        }
                    }
                    return try db.changes(sql: "DELETE FROM corridor WHERE id IN (SELECT id FROM corridor WHERE last_used < ? LIMIT ?)",
                                          arguments: [unused, batch])
                }
                first = false
                corridors += n
                if n < batch { break }
            }
        } catch {
            logger.warning("routes: pruning failed; it is tried again at the next run", metadata: ["error": "\(error)"])
        }
        if items + corridors > 0 {
            logger.info("routes: pruned", metadata: ["expiredItems": "\(items)", "unusedCorridors": "\(corridors)"])
        }
        return (items, corridors)
    }
}
