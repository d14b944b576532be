import Foundation
import Logging
import Metrics
import RoomLog
import ServiceLifecycle
import Storage

/// Keeps this node's `RoomFeed` level with what other nodes commit (PostgreSQL only): listens to
/// `RoomNotification.channel` on a connection of its own and hands each notification to the feed.
/// Whenever the listening connection is (re)established, every room watched here is checked
/// against the log's heads and caught up, so notifications missed while it was down cost a read,
/// never a push. Reconnects with backoff while the database is unreachable.
public struct RoomLogFollower: Service {
    let store: Store
    let feed: RoomFeed
    let logger: Logger
    /// Whether notifications are being heard now (`/healthz`, metrics).
    public let state: ClusterHealth

    public init(store: Store, feed: RoomFeed, health: ClusterHealth, logger: Logger) {
        self.store = store
        self.feed = feed
        self.state = health
        self.logger = logger
    }

    public func run() async throws {
        let notifications = Counter(label: "hubbub_room_notifications_total")
        // Notifications of rooms nobody here watches: every node hears every room's, and this
        // share is what that costs a node (docs/plans/routes-shards.md, "Still to do").
        let ignored = Counter(label: "hubbub_room_notifications_ignored_total")
        let lag = Timer(label: "hubbub_room_notification_lag_seconds")
        await cancelWhenGracefulShutdown {
            var delay = 0.1
            while !Task.isCancelled {
                do {
                    try await store.listen(RoomNotification.channel, listening: {
                        state.setListening(true)
                        let behind = await feed.catchUpAll()
                        if behind > 0 { logger.info("room log: caught up after (re)connecting", metadata: ["rooms": "\(behind)"]) }
                    }, received: { text in
                        // Notes of rooms nobody here watches are passed over unread.
                        guard let (notes, skipped) = RoomNotification.all(in: text, wanted: feed.watches) else {
                            logger.warning("room log: a notification that is not one", metadata: ["text": "\(text.prefix(80))"])
                            return
                        }
                        notifications.increment(by: Int64(skipped))
                        ignored.increment(by: Int64(skipped))
                        for note in notes {
                            notifications.increment()
                            if note.at > 0 { lag.recordSeconds(max(0, Date().timeIntervalSince1970 - note.at)) }
                            if !feed.notice(note) { ignored.increment() }
                        }
                    })
                } catch {
                    if Task.isCancelled { break }
                    if state.listening {
                        logger.warning("room log: notifications lost; reconnecting", metadata: ["error": "\(error)"])
                        // The server likely went away (restart, failover): the store's other
                        // connections are as dead; do not wait for the driver to find out.
                        store.dropConnections()
                    }
                }
                state.setListening(false)
                try? await Task.sleep(for: .seconds(delay))
                delay = min(delay * 2, 5)
            }
        }
    }
}
