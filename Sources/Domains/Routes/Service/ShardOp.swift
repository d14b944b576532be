import DomainSeam
import Realtime
import Routes

/// Where each intel shard's owner is, as `IntelHub` asks before it runs a shard's part of a change
/// that spans shards (a provider's batch, a link): `call` runs the node op on the owner when that
/// is another node and returns its result; nil when this node holds the shard (run it here).
public protocol ShardOwners: Sendable {
    func call(_ op: String, args: JSON, on lease: String) async throws(ProtocolError) -> JSON?
}

/// The shard ops one node asks of another (`Op.node`: never a client's): their names, their
/// arguments as sent, their results as read back. Each is homed by its `shard`, so the owner
/// refuses one whose shard moved meanwhile (`unavailable`: the caller asks again).
enum ShardOp {
    /// Drafts of one shard posted by its owner: `{shard, now, drafts: [{lat, lon, kind, body,
    /// tags, modes, at?, user | source}]}` → `{results: [{item} | {error: {code, message}}]}`.
    static let post = "cluster.intel.post"
    /// One half of a link (`IntelShard.linkHalf`): `{item, to: <item as shown>, side, by, now}`
    /// → `{item: <as shown>, made}`.
    static let linkHalf = "cluster.intel.linkHalf"

    /// Part of a provider's named items (a GTFS-Realtime message, read on the node that received
    /// it) applied by the `named` shard's owner (`IntelHub.apply`): `{scope, now, items: [{name,
    /// source, points: [[lat, lon]], kind, tags, modes, body, translations, endsAt?}], ending:
    /// {listed: [name]} | {allOthersBut: [name]}}` → `{added, changed, ended, unchanged}`.
    static let apply = "cluster.intel.apply"

    /// At most this many drafts per call: a large batch goes in several, so no message is large.
    static let maxDrafts = 500

    static func postArguments(_ drafts: [(IntelHub.Draft, IntelItem.Author)], shard: String, now: Double) -> JSON {
        let list: [JSON] = drafts.map { draft, author in
            var fields: [(String, JSON)] = [("lat", .double(draft.point.lat)), ("lon", .double(draft.point.lon)),
                                            ("kind", .string(draft.kind.rawValue)), ("body", .string(draft.body)),
                                            ("tags", .array(draft.tags.map { .string($0) })), ("modes", .array(draft.modes.map { .string($0.rawValue) }))]
            if let at = draft.at { fields.append(("at", .double(at))) }
            switch author {
            case .user(let user): fields.append(("user", .string(user)))
            case .provider(let source): fields.append(("source", .string(source)))
            }
            return .object(fields)
        }
        return ["shard": .string(shard), "now": .double(now), "drafts": .array(list)]
    }

    /// The results of `post` as the owner answered them, one per draft sent.
    static func posted(_ answer: JSON, count: Int) throws(ProtocolError) -> [Result<IntelHub.Posted, ProtocolError>] {
        guard case .array(let list)? = answer["results"], list.count == count else {
            throw ProtocolError(.internal, "a node answered a shard's post without its results")
        }
        return list.map { entry in
            var aliases: Aliases = [:]
            if let shown = entry["item"], let item = IntelItem(shown: shown, aliases: &aliases) { return .success(.init(item: item, json: shown)) }
            guard case .string(let c)? = entry["error"]?["code"], let code = ErrorCode(rawValue: c), case .string(let message)? = entry["error"]?["message"] else {
                return .failure(ProtocolError(.internal, "a node answered a draft without a result"))
            }
            return .failure(ProtocolError(code, message))
        }
    }

    static func results(_ posted: [Result<IntelHub.Posted, ProtocolError>]) -> JSON {
        ["results": .array(posted.map { result in
            switch result {
            case .success(let p): ["item": p.json]
            case .failure(let e): ["error": ["code": .string(e.code.rawValue), "message": .string(e.message)]]
            }
        })]
    }

    static func applyArguments(_ items: [NamedItem], scope: String, ending: NamedEnding, now: Double) -> JSON {
        let list: [JSON] = items.map { item in
            var fields: [(String, JSON)] = [
                ("name", .string(item.name)), ("source", .string(item.source)),
                ("points", .array(item.points.map { .array([.double($0.lat), .double($0.lon)]) })),
                ("kind", .string(item.kind.rawValue)), ("tags", .array(item.tags.map { .string($0) })),
                ("modes", .array(item.modes.map { .string($0.rawValue) })), ("body", .string(item.body)),
                ("translations", .object(item.translations.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ]
            if let end = item.endsAt { fields.append(("endsAt", .double(end))) }
            return .object(fields)
        }
        let end: JSON = switch ending {
        case .listed(let names): ["listed": .array(names.map { .string($0) })]
        case .allOthers: ["allOthersBut": .array([])]
        case .allOthersBut(let names): ["allOthersBut": .array(names.map { .string($0) })]
        }
        return ["scope": .string(scope), "now": .double(now), "items": .array(list), "ending": end]
    }

    static func applied(_ answer: JSON) throws(ProtocolError) -> NamedIntelFeed.Outcome {
        guard case .int(let added)? = answer["added"], case .int(let changed)? = answer["changed"],
              case .int(let ended)? = answer["ended"], case .int(let unchanged)? = answer["unchanged"] else {
            throw ProtocolError(.internal, "a node answered named items without their counts")
        }
        return .init(added: added, changed: changed, ended: ended, unchanged: unchanged)
    }

    static func outcome(_ o: NamedIntelFeed.Outcome) -> JSON {
        ["added": .int(o.added), "changed": .int(o.changed), "ended": .int(o.ended), "unchanged": .int(o.unchanged)]
    }

    static func linkArguments(_ id: String, to other: IntelItem, side: IntelEntry.LinkSide, by user: String, now: Double) -> JSON {
        ["item": .string(id), "to": other.json(aliases: [:]), "side": .string(side.rawValue), "by": .string(user), "now": .double(now)]
    }

    static func linked(_ answer: JSON) throws(ProtocolError) -> (item: IntelItem, made: Bool, aliases: [String: String]) {
        var aliases: Aliases = [:]
        guard let shown = answer["item"], let item = IntelItem(shown: shown, aliases: &aliases), case .bool(let made)? = answer["made"] else {
            throw ProtocolError(.internal, "a node answered a link's half without its item")
        }
        return (item, made, aliases)
    }
}

/// `cluster.intel.post`'s arguments.
struct ShardPostArgs: OpArguments {
    var shard: String
    var now: Double
    var drafts: [(IntelHub.Draft, IntelItem.Author)]

    init(_ a: Args) throws(ProtocolError) {
        shard = try a.string("shard", maxLength: 64)
        now = try a.double("now")
        drafts = []
        for value in try a.array("drafts", maxCount: ShardOp.maxDrafts) {
            guard case .object = value else { throw .badRequest("field drafts must be an array of drafts") }
            let entry = Args(value)
            let draft = try IntelPostArgs.draft(entry, at: try entry.optionalDouble("at"))
            let author: IntelItem.Author = if let user = try entry.optionalString("user", maxLength: 64) { .user(user) }
                else { .provider(source: try entry.string("source", maxLength: 64)) }
            drafts.append((draft, author))
        }
    }
}

/// `cluster.intel.linkHalf`'s arguments.
struct ShardLinkArgs: OpArguments {
    var item: String
    var to: IntelItem
    var side: IntelEntry.LinkSide
    var by: String
    var now: Double

    init(_ a: Args) throws(ProtocolError) {
        item = try a.string("item", maxLength: 64)
        var aliases: Aliases = [:]
        // The item as shown, read whole (its fields are the item's, not arguments).
        a.declare("to")
        guard let shown = a.value["to"], let other = IntelItem(shown: shown, aliases: &aliases) else { throw .badRequest("field to must be an item") }
        to = other
        guard let s = IntelEntry.LinkSide(rawValue: try a.string("side", maxLength: 8)), s != .both else { throw .badRequest("field side must be item or to") }
        side = s
        by = try a.string("by", maxLength: 64)
        now = try a.double("now")
    }
}

/// `cluster.intel.apply`'s arguments: the items as `ShardOp.applyArguments` wrote them.
struct ShardApplyArgs: OpArguments {
    var scope: String
    var now: Double
    var items: [NamedItem]
    var ending: NamedEnding

    init(_ a: Args) throws(ProtocolError) {
        scope = try a.string("scope", maxLength: 200)
        now = try a.double("now")
        items = []
        for value in try a.array("items", maxCount: NamedIntelFeed.defaultMaxPoints) {
            let entry = Args(value)
            var points: [GeoPoint] = []
            for p in try entry.array("points", maxCount: 1_000_000) {
                guard case .array(let pair) = p, pair.count == 2, let lat = Self.number(pair[0]), let lon = Self.number(pair[1]),
                      let point = GeoPoint(lat: lat, lon: lon) else { throw .badRequest("field items.points must hold [lat, lon] pairs") }
                points.append(point)
            }
            guard let kind = IntelKind(rawValue: try entry.string("kind", maxLength: 32)) else { throw .badRequest("field items.kind is not a kind") }
            var modes: [TravelMode] = []
            for m in try entry.array("modes", maxCount: 32) {
                guard case .string(let raw) = m, let mode = TravelMode(rawValue: raw) else { throw .badRequest("field items.modes is not a list of modes") }
                modes.append(mode)
            }
            var translations: [String: String] = [:]
            if case .object(let fields)? = value["translations"] {
                for (language, text) in fields { if case .string(let t) = text { translations[language] = t } }
            }
            items.append(NamedItem(scope: scope, name: try entry.string("name", maxLength: 1_000), source: try entry.string("source", maxLength: 200),
                                   points: points, kind: kind, tags: try entry.optionalStringArray("tags", maxCount: 1_000) ?? [], modes: modes,
                                   body: try entry.string("body", maxLength: 1 << 20), translations: translations,
                                   endsAt: try entry.optionalDouble("endsAt")))
        }
        let end = try a.object("ending")
        if let names = try end.optionalStringArray("listed", maxCount: 1_000_000, maxLength: 1_000) { ending = .listed(names) }
        else { ending = .allOthersBut(try end.optionalStringArray("allOthersBut", maxCount: 1_000_000, maxLength: 1_000) ?? []) }
    }

    private static func number(_ value: JSON) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
}
