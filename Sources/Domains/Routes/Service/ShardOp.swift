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
