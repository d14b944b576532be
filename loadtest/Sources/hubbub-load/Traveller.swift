import LoadHarness
import Realtime
import Routes

/// One simulated commuter: its client, its route, and what it checks and remembers of its
/// corridor's pushes. Loop-confined (its client's loop), like the client.
final class Traveller: @unchecked Sendable {
    let client: SimClient
    let route: CommuteRoute
    /// `route:<corridor id>`: the room the server must answer `route.subscribe` with.
    let room: String
    let ledger: PostLedger
    var watch: RouteWatch
    /// Items seen in the corridor that are not its own (ids, newest last, at most `memory`): what
    /// it likes and comments on.
    private(set) var seen: [String] = []
    /// Items it liked (a user likes an item once).
    var liked: Set<String> = []
    static let memory = 64

    init(client: SimClient, routeIndex: Int, route: CommuteRoute, ledger: PostLedger) {
        self.client = client
        self.route = route
        let corridor = route.corridor
        room = RoutePush.room(corridor.id)
        self.ledger = ledger
        watch = RouteWatch(route: routeIndex, corridor: corridor)
        client.onRoomPush = { [unowned self] push, now in self.received(push, at: now) }
    }

    /// `route.subscribe`'s arguments for its commute.
    var subscribeArgs: JSON {
        func point(_ p: GeoPoint) -> JSON { ["lat": .double(p.lat), "lon": .double(p.lon)] }
        return ["from": point(route.from), "to": point(route.to), "via": .array(route.via.map(point)),
                "widthMeters": .double(route.widthMeters)]
    }

    /// The `route.subscribe` reply (loop thread, before any push after it): the window opens; the
    /// room must be the corridor's, and every listed item must lie in it.
    func joined(_ result: JSON, at now: UInt64) {
        watch.began(at: now)
        if result["room"] != .string(room) { client.meter.now.errors["route.subscribe: not the corridor's room", default: 0] += 1 }
        guard case .array(let items)? = result["items"] else { return }
        for item in items {
            guard case .string(let id)? = item["id"], let lat = item["lat"]?.number, let lon = item["lon"]?.number,
                  let point = GeoPoint(lat: lat, lon: lon) else {
                client.meter.now.errors["route.subscribe: unreadable item", default: 0] += 1
                continue
            }
            client.meter.now.violations += watch.updated(at: point)
            if case .string(let by)? = item["by"]?["user"], nameHash(by) == client.userHash { continue }
            remember(id)
        }
    }

    /// A live push of its room (already checked for seq and epoch).
    private func received(_ push: ScannedPush, at now: UInt64) {
        guard push.event == .intelAdded || push.event == .intelUpdated else { return }
        guard let item = push.intel, let point = GeoPoint(lat: item.lat, lon: item.lon) else {
            client.meter.now.violations.outsideCorridor += 1 // no place on Earth is inside the corridor
            return
        }
        if push.event == .intelUpdated {
            client.meter.now.violations += watch.updated(at: point)
            return
        }
        let post = ledger.lookup(item.body)
        if let post, now > post.sentAt {
            if post.byProvider {
                client.meter.now.recordProviderLatency(nanos: now - post.sentAt)
            } else {
                client.meter.now.recordLatency(nanos: now - post.sentAt)
            }
        }
        client.meter.now.violations += watch.added(at: point, post: post?.index)
        if item.by != client.userHash { remember(item.id) }
    }

    private func remember(_ id: String) {
        if seen.count >= Self.memory { seen.removeFirst(seen.count - Self.memory + 1) }
        seen.append(id)
    }

    /// A seen item it has not liked yet, if any.
    func itemToLike() -> String? {
        let candidates = seen.filter { !liked.contains($0) }
        return candidates.randomElement()
    }

    /// A seen item to comment on, if any.
    func itemToComment() -> String? { seen.randomElement() }
}

extension JSON {
    /// An integer or decimal as a Double.
    var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
}
