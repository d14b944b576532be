import Logging
import RoomLog

/// What the routes need to keep rooms on this node: the feed that delivers the intel shards' logs
/// and the corridors' pushes here, and the corridors' definitions and the names shown beside
/// items (`CorridorDirectory`).
public struct CorridorPublishing: Sendable {
    let feed: RoomFeed
    let directory: CorridorDirectory
    let logger: Logger
}
