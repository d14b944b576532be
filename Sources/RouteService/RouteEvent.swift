import Realtime
import Routes

/// The pushes of a `route:` room (protocol.md).
enum RouteEvent: String, RoomEvent {
    /// `{item}`: a new item inside the corridor.
    case added = "intel.added"
    /// `{item}`: an item as it now is (a like, a comment, a provider's update).
    case updated = "intel.updated"
    /// `{item: id}`: the item left the corridor's list.
    case expired = "intel.expired"
    /// `{item, to}`: two items were linked.
    case linked = "intel.linked"
}

/// The names shown beside users' intel and comments (`UserDirectory.aliases`); a user missing from
/// it was deleted and is shown without their id.
typealias Aliases = [String: String]

/// How a user is shown: `{user, alias}`, or `{alias: "deleted user"}` once the account is gone.
func author(_ user: String, _ aliases: Aliases) -> JSON {
    guard let alias = aliases[user] else { return ["alias": "deleted user"] }
    return ["user": .string(user), "alias": .string(alias)]
}

extension IntelItem {
    /// The poster, if a traveller.
    var user: String? { if case .user(let u) = author { return u } else { return nil } }

    /// The item as clients see it; `destination` adds `distanceToDestinationMeters`.
    func json(distanceTo destination: GeoPoint? = nil, aliases: Aliases) -> JSON {
        var fields: [(String, JSON)] = [
            ("id", .string(id)), ("lat", .double(point.lat)), ("lon", .double(point.lon)), ("kind", .string(kind.rawValue)),
            ("origin", .string(origin.rawValue)), ("tags", .array(tags.map { .string($0) })),
            ("modes", .array(modes.map { .string($0.rawValue) })), ("body", .string(body)), ("at", .double(at)),
            ("expiresAt", .double(expiresAt)), ("likes", .int(likes)), ("comments", .int(comments)),
            ("links", .array(links.map { .string($0) })),
        ]
        switch self.author {
        case .user(let user): fields.append(("by", RouteService.author(user, aliases)))
        case .provider(let source): fields.append(("by", ["source": .string(source)]))
        }
        if let destination { fields.append(("distanceToDestinationMeters", .int(Int(point.distance(to: destination).rounded())))) }
        return .object(fields)
    }
}
