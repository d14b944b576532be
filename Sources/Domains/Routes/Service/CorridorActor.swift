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

/// One live corridor on this node, the brief's actor per route corridor: its room `route:<id>`
/// (a `LocalRoom`: made here, from its shards' logs, on every node where someone watches it), the
/// items inside its band as of the entries it has taken, and the pushes it makes from them. The
/// host hands it actions in each shard's order through its mailbox; it takes them in batches, and
/// its pushes reach this node's watchers at once: the entries they come from are durable already,
/// so nothing is written (a fifth of a node's CPU in rush hour when each push was a row).
actor CorridorActor {
    nonisolated let id: String
    nonisolated let corridor: Corridor
    /// Whose recorded path it follows, if it does: then only that user may watch it.
    nonisolated let owner: CorridorOwner?
    nonisolated let room: String
    /// Its room's epoch on this node (this load's).
    nonisolated let epoch: String
    /// The items inside the band, by id, as of the last action taken.
    private var items: [String: LiveItem]
    private var pushes: LocalRoom
    private nonisolated let mailbox = Mutex(Mailbox())
    /// When someone last subscribed, resumed or was told of it here (seconds since 1970).
    private nonisolated let activity: Mutex<Double>
    /// Whether this actor is still its corridor's live one here (the host drops and reloads a
    /// corridor whose shard's log began a new epoch): one that is not takes nothing more.
    private let current: @Sendable (CorridorActor) -> Bool

    /// `items`: as of the shards' heads it starts at; `pushes`: its room, just loaded (hosted by
    /// the node's feed: see `CorridorHost.load`).
    init(id: String, corridor: Corridor, owner: CorridorOwner?, items: [String: LiveItem], pushes: LocalRoom, now: Double,
         current: @escaping @Sendable (CorridorActor) -> Bool) {
        self.id = id
        self.corridor = corridor
        self.owner = owner
        self.items = items
        self.current = current
        self.pushes = pushes
        room = pushes.name
        epoch = pushes.head.epoch
        activity = Mutex(now)
    }

    /// `{from, to, via, widthMeters, recorded}` as `route.subscribe` and snapshots show it.
    nonisolated var json: JSON {
        ["from": corridor.from.json, "to": corridor.to.json, "via": .array(corridor.path.dropFirst().dropLast().map(\.json)),
         "widthMeters": .double(corridor.widthMeters), "recorded": .bool(owner != nil)]
    }

    nonisolated var lastActivity: Double { activity.withLock { $0 } }
    nonisolated func touch(at now: Double) { activity.withLock { $0 = max($0, now) } }

    /// Hands the corridor what a shard's entry means for it (in each shard's order); it makes
    /// their pushes soon, several entries' at a time.
    nonisolated func enqueue(_ actions: [CorridorAction]) {
        guard !actions.isEmpty else { return }
        let start = mailbox.withLock { m -> Bool in
            m.actions += actions
            defer { m.draining = true }
            return !m.draining
        }
        if start { Task { await self.drain() } }
    }

    private struct Mailbox {
        var actions: [CorridorAction] = []
        /// A drain is scheduled or running.
        var draining = false
    }

    private func drain() {
        while true {
            let batch = mailbox.withLock { m -> [CorridorAction] in
                if m.actions.isEmpty { m.draining = false }
                defer { m.actions = [] }
                return m.actions
            }
            guard !batch.isEmpty else { return }
            take(batch)
        }
    }

    /// Applies `batch` and hands its pushes to this node's watchers.
    private func take(_ batch: [CorridorAction]) {
        guard current(self) else { return }
        let now = Date().timeIntervalSince1970
        for action in batch {
            var added = false
            switch action {
            case .add(let live): added = items.updateValue(live, forKey: live.item.id) == nil
            case .update(let live): items[live.item.id] = live
            case .remove(let id): items[id] = nil
            case .link(let a, let b): for live in [a, b] where items[live.item.id] != nil { items[live.item.id] = live }
            }
            stage(action, added: added, at: now)
        }
        pushes.publish()
    }

    /// Makes `action`'s push (`added`: an add of an item the room did not show, `intel.added`;
    /// else `intel.updated`).
    private func stage(_ action: CorridorAction, added: Bool, at now: Double) {
        switch action {
        case .add(let live), .update(let live):
            let event: RoutePush = if case .add = action, added { .added } else { .updated }
            let distance = Int(live.item.distance(to: corridor.to).rounded())
            pushes.stage(event, languages: live.languages, data: { tag in ["item": live.encoded.json(tag: tag, distance: distance)] }, at: now)
        case .remove(let id):
            pushes.stage(RoutePush.expired, data: ["item": .string(id)], at: now)
        case .link(let a, let b):
            pushes.stage(RoutePush.linked, data: ["item": .string(a.item.id), "to": .string(b.item.id)], at: now)
        }
    }

    /// Room `route:<id>` for a new subscriber: `{corridor, items}`, the items as `view` asks, in
    /// `language`, and the room's head at that point (every push up to it delivered already).
    func snapshot(view: CorridorView, language: String?, aliases: @Sendable ([String]) async -> Aliases) async throws(ProtocolError) -> RoomSnapshot {
        let head = pushes.head
        // An item past its time whose expiry its shard has not written yet (it fell due while no
        // node held the shard) is not shown.
        let now = Date().timeIntervalSince1970
        let shown = items.values.map(\.item).filter { $0.expiresAt > now }
        touch(at: now)
        // The items and the head are taken together; the names may be looked up after.
        let names = await aliases(shown.compactMap(\.user))
        let list = view.list(shown, to: corridor.to, aliases: names, language: language)
        return RoomSnapshot(head: head, data: ["corridor": json, "items": .array(list)])
    }
}

extension GeoPoint {
    var json: JSON { ["lat": .double(lat), "lon": .double(lon)] }
}
