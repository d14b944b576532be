import HubbubCrypto
import Realtime
import WebSocket

/// A room made on each node that has members, from logs that are durable already (a corridor's,
/// from its intel shards'): its pushes are numbered here and handed to this node's `RoomFeed` at
/// once, never written (they can be made again from those logs at any time). Its epoch is random
/// and new each time a node loads it, and stored nowhere: `since` recovers within that load on
/// that node, from the feed's history; anywhere else the member takes a snapshot
/// (`RoomPlacement.local`).
///
/// One owner (an actor) stages and publishes, in its own isolation, and takes its snapshots there
/// too: what a snapshot shows and the `seq` it names meet exactly, and the feed, which tracks the
/// room for as long as it is loaded (`RoomFeed.host`, until the owner's host calls `unhost`), has
/// every push after it for the new member.
public struct LocalRoom: Sendable {
    private var staged: StagedRoom
    private let feed: RoomFeed

    /// Loads `name` on this node in a new epoch. If the feed still tracks it (members of an earlier
    /// load), its `seq` goes on, so they get the new epoch's pushes and see the epoch change.
    public init(_ name: String, feed: RoomFeed) {
        self.feed = feed
        staged = StagedRoom(name: name, head: feed.host(name, epoch: Digest.randomToken(length: 8)))
    }

    /// The room's name.
    public var name: String { staged.name }
    /// The last push made (and delivered).
    public var head: RoomHead { staged.head }

    /// Makes the next push (delivered by `publish`).
    public mutating func stage(_ event: some RoomEvent, data: JSON, at now: Double) {
        staged.stage(event, data: data, at: now)
    }

    /// Makes the next push in each reader's language (see `StagedRoom.stage(_:languages:data:at:)`).
    public mutating func stage(_ event: some RoomEvent, languages: [String], data: (String?) -> JSON, at now: Double) {
        staged.stage(event, languages: languages, data: data, at: now)
    }

    /// Hands the pushes staged since the last call to this node's members, in `seq` order.
    public mutating func publish() {
        let pushes = staged.take()
        if !pushes.isEmpty { feed.deliver(pushes) }
    }
}
