import DomainSeam
import Foundation
import HubbubCrypto
import Realtime
import Routes
import WebSocket

/// One corridor, live: its `route:` room (seq, epoch, history, recovery like every room). Items
/// live in the `IntelHub`; the corridor asks it for the ones inside its band when someone joins,
/// and publishes what the hub's changes mean for it.
public actor CorridorActor: RoomHost {
    public nonisolated let id: String
    public nonisolated let corridor: Corridor
    /// Whose recorded path it follows, if it does: then only that user may join it.
    nonisolated let owner: CorridorOwner?
    let hub: IntelHub
    let sink: any PushSink
    let directory: CorridorDirectory
    private var room: Room
    private var lastActivity = Date().timeIntervalSince1970
    /// Taken out of the directory by a sweep; a late joiner puts it back (or goes to its successor).
    private var retired = false

    init(id: String, corridor: Corridor, owner: CorridorOwner?, directory: CorridorDirectory, hub: IntelHub, sink: any PushSink,
         history: Room.HistoryLimits) {
        self.id = id
        self.corridor = corridor
        self.owner = owner
        self.directory = directory
        self.hub = hub
        self.sink = sink
        room = Room(name: "route:\(id)", epoch: Digest.randomToken(length: 8), limits: history)
    }

    /// The live actor for this corridor: this one (put back in the directory if a sweep took it
    /// out), or the one that replaced it. Joining happens in the same step, so no joiner is ever
    /// left in a room the directory has forgotten.
    private func live() -> CorridorActor? {
        guard retired else { return nil }
        let current = directory.reinstate(self)
        if current === self { retired = false; return nil }
        return current
    }

    /// `route.subscribe`: joins the room and answers `{room, seq, epoch, corridor, items}` with the
    /// caller's filter and order applied to the list (pushes are the room's: the same for all).
    func open(reply: Replier, filter: IntelFilter, sort: IntelSort) async {
        let items = await hub.items(in: corridor)
        let names = await directory.aliases(items.compactMap(\.user))
        if let successor = live() { return await successor.open(reply: reply, filter: filter, sort: sort) }
        lastActivity = Date().timeIntervalSince1970
        _ = room.join(reply.member, since: nil, now: lastActivity)
        let language = directory.language(reply.member)
        reply.success(["room": .string(room.name), "seq": .int(Int(room.seq)), "epoch": .string(room.epoch), "corridor": corridorJSON,
                       "items": .array(Self.list(items, filter: filter, sort: sort, to: corridor.to, aliases: names, language: language))])
    }

    /// `subscribe {room: "route:<id>", since?}`: recovery, or a snapshot of every live item inside.
    public func subscribe(reply: Replier, since: Since?) async throws(ProtocolError) {
        let items = await hub.items(in: corridor)
        let names = await directory.aliases(items.compactMap(\.user))
        if let successor = live() { return try await successor.subscribe(reply: reply, since: since) }
        lastActivity = Date().timeIntervalSince1970
        let language = directory.language(reply.member)
        room.subscribe(reply.member, since: since, now: lastActivity, reply: reply, language: language) {
            ["corridor": corridorJSON,
             "items": .array(Self.list(items, filter: IntelFilter(), sort: .distance, to: corridor.to, aliases: names, language: language))]
        }
    }

    public func unsubscribe(_ member: ConnectionID) {
        room.leave(member)
        lastActivity = Date().timeIntervalSince1970
    }

    /// Pushes an event about an item inside the corridor.
    func publish(_ event: RouteEvent, _ data: JSON) {
        lastActivity = Date().timeIntervalSince1970
        room.publish(event, data: data, now: lastActivity, sink: sink)
    }

    /// An item inside the corridor, as this corridor shows it (with its distance to the destination),
    /// to each member in their language when the item has translations.
    func publish(_ event: RouteEvent, item: IntelItem, encoded: EncodedItem) {
        lastActivity = Date().timeIntervalSince1970
        let distance = Int(item.distance(to: corridor.to).rounded()), directory = self.directory
        room.publish(event, languages: item.translations.keys.sorted(), data: { tag in ["item": encoded.json(tag: tag, distance: distance)] },
                     languageOf: { directory.language($0) }, now: lastActivity, sink: sink)
    }

    /// Trims the history, and leaves the directory when nobody has watched for `seconds`.
    func sweep(now: Double, retireAfter seconds: Double) {
        room.trimHistory(now: now)
        guard !retired, room.memberCount == 0, now - lastActivity > seconds else { return }
        retired = true
        directory.forget(self)
    }

    var corridorJSON: JSON {
        ["from": corridor.from.json, "to": corridor.to.json, "via": .array(corridor.path.dropFirst().dropLast().map(\.json)),
         "widthMeters": .double(corridor.widthMeters), "recorded": .bool(owner != nil)]
    }

    /// Items filtered, then newest first or closest to `destination` first (ties by id, so the order is stable).
    static func list(_ items: [IntelItem], filter: IntelFilter, sort: IntelSort, to destination: GeoPoint, aliases: Aliases,
                     language: String?) -> [JSON] {
        let kept = items.filter(filter.matches)
        let ordered: [IntelItem]
        switch sort {
        case .time: ordered = kept.sorted { ($0.at, $0.id) > ($1.at, $1.id) }
        case .distance:
            let keyed = kept.map { ($0.distance(to: destination), $0) }
            ordered = keyed.sorted { ($0.0, $0.1.id) < ($1.0, $1.1.id) }.map(\.1)
        }
        return ordered.map { $0.json(distanceTo: destination, aliases: aliases, language: language) }
    }
}

extension GeoPoint {
    var json: JSON { ["lat": .double(lat), "lon": .double(lon)] }
}
