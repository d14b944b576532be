import DomainSeam
import Foundation
import Realtime
import RoomLog
import Routes
import Synchronization

/// An item as a node holds it for its corridors: decoded from its shard's log and encoded once for
/// every corridor here that shows it (each adds its own distance).
final class LiveItem: Sendable {
    let item: IntelItem
    let encoded: EncodedItem
    /// The item's translations' tags, sorted (a push has a version for each).
    let languages: [String]

    init(_ item: IntelItem, aliases: Aliases) {
        self.item = item
        encoded = EncodedItem(item, aliases: aliases)
        languages = item.translations.keys.sorted()
    }
}

/// What a shard's entry means for one corridor (decided by the node's `CorridorHost`, which finds
/// the corridors whose band holds the item).
enum CorridorAction: Sendable {
    /// The item arrives in the corridor: `intel.added`.
    case add(LiveItem)
    /// The item, still in the corridor, changed: `intel.updated`.
    case update(LiveItem)
    /// The item expired, ended or left the corridor: `intel.expired`.
    case remove(String)
    /// Two items were linked (each as it now is): `intel.linked`.
    case link(LiveItem, to: LiveItem)
}

/// What one shard's entry means for one corridor: its actions, and the shard log's head at that
/// entry (the corridor's position in that shard once it is taken).
struct CorridorStep: Sendable {
    let actions: [CorridorAction]
    let shard: String
    let at: RoomHead
}

/// One live corridor, the brief's actor per route corridor: its room `route:<id>`, the items inside
/// its band (as of the entries it has taken), and the pushes it makes from its shards' entries;
/// each push carries the corridor's position after the entry it came from (`CorridorPosition`).
/// The host hands it actions in each shard's order through its mailbox; it takes them in batches
/// and stages their pushes in the node's corridor writer (`CorridorHost`), which writes what every
/// corridor staged in one change: a post near a busy hub reaches hundreds of corridors, and a
/// change each cost a savepoint and a completion apiece (a third of a core in rush hour).
actor CorridorActor {
    nonisolated let id: String
    nonisolated let corridor: Corridor
    /// Whose recorded path it follows, if it does: then only that user may watch it.
    nonisolated let owner: CorridorOwner?
    nonisolated let room: String
    /// The items inside the band, by id, as of the last action taken.
    private var items: [String: LiveItem]
    /// Where its pushes stand in each shard's log (see `CorridorPosition`); staged with each push.
    private var position: CorridorPosition
    /// Whether its pushes carry its position (a node that never replays, `routes.corridorReplayEntries`
    /// 0, never reads one back: its pushes skip building and writing it).
    private let keepsPosition: Bool
    /// The node's corridor writer (shared by every corridor here).
    private let writer: RoomWriter
    private nonisolated let mailbox = Mutex(Mailbox())
    /// When someone last subscribed, resumed or was told of it here (seconds since 1970).
    private nonisolated let activity: Mutex<Double>
    /// Asks the host to write what was staged (soon, with what other corridors stage meanwhile).
    private let flush: @Sendable () -> Void
    /// Whether this actor is still its corridor's, on a node that still holds its lease: the host
    /// drops it otherwise (it was dropped and loaded again, or another node may take it now).
    private let current: @Sendable (CorridorActor) -> Bool

    private struct Mailbox {
        var steps: [CorridorStep] = []
        /// A drain is scheduled or running.
        var draining = false
    }

    /// `items` and `position`: as of the shards' heads it starts at. `replay`: the steps between
    /// the position its pushes were made to (`from`) and those heads (a corridor going on in its
    /// epoch): staged now, in order, each carrying the position after it, each item they add
    /// pushed as added (the room never showed it), before anything else.
    init(id: String, corridor: Corridor, owner: CorridorOwner?, items: [String: LiveItem], position: CorridorPosition,
         keepsPosition: Bool = true, replay: (from: CorridorPosition, steps: [CorridorStep])?, head: RoomHead, writer: RoomWriter,
         now: Double, flush: @escaping @Sendable () -> Void, current: @escaping @Sendable (CorridorActor) -> Bool) {
        self.id = id
        self.keepsPosition = keepsPosition
        self.corridor = corridor
        self.owner = owner
        self.items = items
        self.writer = writer
        self.flush = flush
        self.current = current
        room = RoutePush.room(id)
        activity = Mutex(now)
        writer.adopt(room, head: head)
        if var replayed = replay?.from {
            for step in replay?.steps ?? [] {
                replayed.move(step.shard, to: step.at)
                guard !step.actions.isEmpty else { continue }
                let text = replayed.text
                for action in step.actions { Self.stage(action, added: true, corridor: corridor, room: room, writer: writer, position: text, at: now) }
            }
        }
        self.position = position
    }

    /// `{from, to, via, widthMeters, recorded}` as `route.subscribe` and snapshots show it.
    nonisolated var json: JSON {
        ["from": corridor.from.json, "to": corridor.to.json, "via": .array(corridor.path.dropFirst().dropLast().map(\.json)),
         "widthMeters": .double(corridor.widthMeters), "recorded": .bool(owner != nil)]
    }

    nonisolated var lastActivity: Double { activity.withLock { $0 } }
    nonisolated func touch(at now: Double) { activity.withLock { $0 = max($0, now) } }

    /// Hands the corridor a shard entry's `step` (in each shard's order); it makes their pushes
    /// soon, in one write.
    nonisolated func enqueue(_ step: CorridorStep) {
        guard !step.actions.isEmpty else { return }
        let start = mailbox.withLock { m -> Bool in
            m.steps.append(step)
            defer { m.draining = true }
            return !m.draining
        }
        if start { Task { await self.drain() } }
    }

    private func drain() {
        while true {
            let batch = mailbox.withLock { m -> [CorridorStep] in
                if m.steps.isEmpty { m.draining = false }
                defer { m.steps = [] }
                return m.steps
            }
            guard !batch.isEmpty else { return }
            take(batch)
        }
    }

    /// Applies `batch` and stages its pushes (the host writes them without waiting: the next batch
    /// is taken meanwhile). The entries they come from are durable already, so the store's queue
    /// never refuses them. A corridor no longer current (dropped, its lease lapsing, its writer
    /// failed) takes nothing: its next node loads it from the position its durable pushes carry.
    private func take(_ batch: [CorridorStep]) {
        guard writer.holds(room), current(self) else { return }
        let now = Date().timeIntervalSince1970
        for step in batch {
            position.move(step.shard, to: step.at)
            let text = keepsPosition ? position.text : nil
            for action in step.actions {
                var added = false
                switch action {
                case .add(let live): added = items.updateValue(live, forKey: live.item.id) == nil
                case .update(let live): items[live.item.id] = live
                case .remove(let id): items[id] = nil
                case .link(let a, let b): for live in [a, b] where items[live.item.id] != nil { items[live.item.id] = live }
                }
                Self.stage(action, added: added, corridor: corridor, room: room, writer: writer, position: text, at: now)
            }
        }
        flush()
    }

    /// Stages `action`'s push in `room`, carrying `position` (`added`: an add of an item the room
    /// did not show, `intel.added`; else `intel.updated`).
    private static func stage(_ action: CorridorAction, added: Bool, corridor: Corridor, room: String, writer: RoomWriter,
                              position: String?, at now: Double) {
        switch action {
        case .add(let live), .update(let live):
            let event: RoutePush = if case .add = action, added { .added } else { .updated }
            let distance = Int(live.item.distance(to: corridor.to).rounded())
            writer.stage(event, languages: live.languages, data: { tag in ["item": live.encoded.json(tag: tag, distance: distance)] },
                         in: room, at: now, position: position)
        case .remove(let id):
            writer.stage(RoutePush.expired, data: ["item": .string(id)], in: room, at: now, position: position)
        case .link(let a, let b):
            writer.stage(RoutePush.linked, data: ["item": .string(a.item.id), "to": .string(b.item.id)], in: room, at: now, position: position)
        }
    }

    /// Room `route:<id>` for a new subscriber: `{corridor, items}`, the items as `view` asks, in
    /// `language`, and the room's head at that point (its pushes in flight included: the feed holds
    /// the answer until they are delivered).
    func snapshot(view: CorridorView, language: String?, aliases: @Sendable ([String]) async -> Aliases) async throws(ProtocolError) -> RoomSnapshot {
        guard let at = writer.snapshot(of: room) else { throw ProtocolError(.unavailable, "the corridor is reloading; try again") }
        // An item past its time whose expiry no hub wrote (it fell due while the hub moved between
        // nodes: the new one never loads it) is not shown.
        let now = Date().timeIntervalSince1970
        let shown = items.values.map(\.item).filter { $0.expiresAt > now }
        touch(at: now)
        // The items and the head are taken together; the names may be looked up after.
        let names = await aliases(shown.compactMap(\.user))
        let list = view.list(shown, to: corridor.to, aliases: names, language: language)
        return RoomSnapshot(head: at.head, data: ["corridor": json, "items": .array(list)], mark: at.mark)
    }
}

extension GeoPoint {
    var json: JSON { ["lat": .double(lat), "lon": .double(lon)] }
}
