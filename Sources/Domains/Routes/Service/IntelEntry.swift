import Realtime
import RoomLog
import Routes

/// The one event of an intel shard's log (room `intel:<shard>`, never subscribed to by clients):
/// each entry is one change of the shard's items.
public enum IntelLogEvent: String, RoomEvent {
    case entry = "intel.entry"
}

/// One change of a shard's items as its log keeps it: what every corridor that may contain the
/// item needs to make its own push, and what a node's copy of the shard needs to stay level. The
/// item travels as clients see it (its poster's alias included), so a corridor's push is made
/// from it without a lookup. A pure value: `json` and `init?(json:)` are each other's inverse.
public struct IntelEntry: Sendable, Equatable {
    /// Which side of a link an entry speaks for (a link between two shards is an entry in each).
    public enum LinkSide: String, Sendable {
        /// Both items are in this shard: corridors holding either hear of it.
        case both
        /// The entry in `item`'s shard: corridors holding `item`.
        case item
        /// The entry in `to`'s shard: corridors holding `to` and not `item` (those heard of it from the other).
        case to
    }

    /// What happened.
    public enum Change: Sendable, Equatable {
        /// A new item.
        case added(IntelItem)
        /// An item changed in place (a like, a comment).
        case updated(IntelItem)
        /// A provider's new version of a named item, which was at `before`.
        case revised(IntelItem, before: [GeoPoint])
        /// The item expired or its provider ended it.
        case removed(IntelItem)
        /// `item` was linked to `to` (both as they now are).
        case linked(IntelItem, to: IntelItem, side: LinkSide)
    }

    public var change: Change
    /// The names shown beside the items' posters (what the pushes show).
    public var aliases: [String: String]

    /// The items the entry carries.
    public var items: [IntelItem] {
        switch change {
        case .added(let i), .updated(let i), .revised(let i, _), .removed(let i): [i]
        case .linked(let a, let b, _): [a, b]
        }
    }

    public var json: JSON {
        func item(_ i: IntelItem) -> JSON { i.json(aliases: aliases) }
        switch change {
        case .added(let i): return ["change": "added", "item": item(i)]
        case .updated(let i): return ["change": "updated", "item": item(i)]
        case .revised(let i, let before): return ["change": "revised", "item": item(i), "before": .array(before.map(\.json))]
        case .removed(let i): return ["change": "removed", "item": item(i)]
        case .linked(let a, let b, let side): return ["change": "linked", "item": item(a), "to": item(b), "side": .string(side.rawValue)]
        }
    }

    /// An entry as `json` wrote it; nil if it is not one.
    public init?(json: JSON) {
        var aliases: Aliases = [:]
        func item(_ key: String) -> IntelItem? { json[key].flatMap { IntelItem(shown: $0, aliases: &aliases) } }
        guard case .string(let name)? = json["change"], let first = item("item") else { return nil }
        switch name {
        case "added": change = .added(first)
        case "updated": change = .updated(first)
        case "removed": change = .removed(first)
        case "revised":
            guard case .array(let list)? = json["before"], let before = GeoPoint.list(list) else { return nil }
            change = .revised(first, before: before)
        case "linked":
            guard let to = item("to"), case .string(let s)? = json["side"], let side = LinkSide(rawValue: s) else { return nil }
            change = .linked(first, to: to, side: side)
        default: return nil
        }
        self.aliases = aliases
    }

    public init(_ change: Change, aliases: [String: String]) {
        self.change = change
        self.aliases = aliases
    }

    /// The entry a logged push of an intel shard carries; nil if it is not one.
    public init?(push: LoggedPush) {
        guard let envelope = try? JSONParser.parse(push.message.payload, limits: .trusted),
              envelope["event"] == .string(IntelLogEvent.entry.rawValue), let data = envelope["data"] else { return nil }
        self.init(json: data)
    }
}

extension IntelItem {
    /// An item as clients see it (`json(aliases:)` in its original language), back into a value
    /// that shows the same: who liked it is not shown, only how many (`restore(likes:...)`). Its
    /// poster's alias goes to `aliases`. Nil if it is not an item.
    init?(shown json: JSON, aliases: inout Aliases) {
        func number(_ key: String) -> Double? { json[key]?.number }
        func strings(_ key: String) -> [String]? {
            guard case .array(let list)? = json[key] else { return nil }
            return list.compactMap { if case .string(let s) = $0 { s } else { nil } }
        }
        guard case .string(let id)? = json["id"], case .string(let kindName)? = json["kind"], let kind = IntelKind(rawValue: kindName),
              case .string(let body)? = json["body"], let lat = number("lat"), let lon = number("lon"), let first = GeoPoint(lat: lat, lon: lon),
              let at = number("at"), let expiresAt = number("expiresAt"), let tags = strings("tags"), let modes = strings("modes"),
              let links = strings("links"), case .object? = json["by"] else { return nil }
        var points = [first]
        if case .array(let list)? = json["points"], let all = GeoPoint.list(list), !all.isEmpty { points = all }
        let by = json["by"]!
        let author: IntelItem.Author
        if case .string(let source)? = by["source"] {
            author = .provider(source: source)
        } else if case .string(let user)? = by["user"] {
            author = .user(user)
            if case .string(let alias)? = by["alias"] { aliases[user] = alias }
        } else {
            author = .user("") // a deleted user's: shown as one
        }
        self.init(id: id, points: points, kind: kind, author: author, tags: tags, modes: modes.compactMap(TravelMode.init(rawValue:)),
                  body: body, at: at, expiresAt: expiresAt)
        comments = Int(number("comments") ?? 0)
        if case .object(let fields)? = json["translations"] {
            for (tag, value) in fields { if case .string(let text) = value { translations[tag] = text } }
        }
        restore(likes: Int(number("likes") ?? 0), links: links, expiresAt: expiresAt)
    }
}

extension GeoPoint {
    /// Points as `json` writes them (`[{lat, lon}, ...]`); nil if any is not one.
    static func list(_ values: [JSON]) -> [GeoPoint]? {
        var out: [GeoPoint] = []
        for value in values {
            guard case .object = value, let lat = value["lat"]?.number, let lon = value["lon"]?.number,
                  let p = GeoPoint(lat: lat, lon: lon) else { return nil }
            out.append(p)
        }
        return out
    }
}

extension JSON {
    /// A number as parsing gives it (an integer or not), as a `Double`.
    var number: Double? {
        switch self {
        case .double(let d): d
        case .int(let i): Double(i)
        default: nil
        }
    }
}
