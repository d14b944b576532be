import Realtime
import Routes

/// Route pushes are `RoomEvent`s.
extension RoutePush: RoomEvent {}

/// The names shown beside users' intel and comments (`UserDirectory.aliases`); a user missing from
/// it was deleted and is shown without their id.
typealias Aliases = [String: String]

/// How a user is shown: `{user, alias}`, or `{alias: "deleted user"}` once the account is gone.
func author(_ user: String, _ aliases: Aliases) -> JSON {
    guard let alias = aliases[user] else { return ["alias": "deleted user"] }
    return ["user": .string(user), "alias": .string(alias)]
}

extension IntelItem {
    /// The scope of a named item (`NamedItem.scope`): its reference up to the first `/`.
    var scope: String? { reference.map { String($0[..<($0.firstIndex(of: "/") ?? $0.endIndex)]) } }

    /// The poster, if a traveller.
    var user: String? { if case .user(let u) = author { return u } else { return nil } }

    /// The translation a reader of `language` gets (a key of `translations`), if one matches.
    func translation(for language: String?) -> String? {
        guard let language, !translations.isEmpty else { return nil }
        return LanguageTag.match(language, in: translations.keys)
    }

    /// How far its nearest point is from `destination`, in meters.
    func distance(to destination: GeoPoint) -> Double {
        points.count == 1 ? point.distance(to: destination) : points.map { $0.distance(to: destination) }.min()!
    }

    /// The item as clients see it; `destination` adds `distanceToDestinationMeters`; the body is
    /// in `language` (the reader's) when a translation matches it. `points` is there when
    /// the item is at more than one place, `translations` when it has some.
    func json(distanceTo destination: GeoPoint? = nil, aliases: Aliases, language: String? = nil) -> JSON {
        var fields: [(String, JSON)] = [
            ("id", .string(id)), ("lat", .double(point.lat)), ("lon", .double(point.lon)), ("kind", .string(kind.rawValue)),
            ("origin", .string(origin.rawValue)), ("tags", .array(tags.map { .string($0) })),
            ("modes", .array(modes.map { .string($0.rawValue) })), ("body", .string(translation(for: language).flatMap { translations[$0] } ?? body)),
            ("at", .double(at)), ("expiresAt", .double(expiresAt)), ("likes", .int(likes)), ("comments", .int(comments)),
            ("links", .array(links.map { .string($0) })),
        ]
        if points.count > 1 { fields.append(("points", .array(points.map(\.json)))) }
        if !translations.isEmpty {
            fields.append(("translations", .object(translations.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })))
        }
        switch self.author {
        case .user(let user): fields.append(("by", RouteService.author(user, aliases)))
        case .provider(let source): fields.append(("by", ["source": .string(source)]))
        }
        if let destination { fields.append(("distanceToDestinationMeters", .int(Int(distance(to: destination).rounded())))) }
        return .object(fields)
    }
}

/// An item encoded once for all the corridors that show it: its JSON without the closing brace,
/// in the original language and in each of its translations'. Each corridor adds its own
/// `distanceToDestinationMeters` and the brace (a transit alert reaches dozens of corridors, in
/// several languages: encoding it per corridor and language was most of a burst's time).
struct EncodedItem: Sendable {
    private let original: String
    private let translated: [String: String]

    init(_ item: IntelItem, aliases: Aliases) {
        func open(_ tag: String?) -> String {
            var text = item.json(aliases: aliases, language: tag).encoded
            text.removeLast() // the object's closing brace
            return text
        }
        original = open(nil)
        var translated: [String: String] = [:]
        for tag in item.translations.keys { translated[tag] = open(tag) }
        self.translated = translated
    }

    /// The item in its original language, as a reply shows it (no corridor: no distance).
    var json: JSON { .raw(original + "}") }

    /// The item for readers of translation `tag` (nil: the original), `distance` from a corridor's destination.
    func json(tag: String?, distance: Int) -> JSON {
        .raw((tag.flatMap { translated[$0] } ?? original) + ",\"distanceToDestinationMeters\":\(distance)}")
    }
}
