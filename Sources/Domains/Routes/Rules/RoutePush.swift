/// The pushes of a `route:<corridor>` room (protocol.md), by their names on the wire: the server
/// sends these, and clients and the load harness tell pushes apart by them (no other spelling).
public enum RoutePush: String, Sendable, CaseIterable {
    /// `{item}`: a new item inside the corridor.
    case added = "intel.added"
    /// `{item}`: an item as it now is (a like, a comment, a provider's update).
    case updated = "intel.updated"
    /// `{item: id}`: the item left the corridor's list.
    case expired = "intel.expired"
    /// `{item, to}`: two items were linked.
    case linked = "intel.linked"

    /// The rooms these are sent on: `route:<corridor id>`.
    public static let roomPrefix = "route"
    /// The room of corridor `id`.
    public static func room(_ id: String) -> String { "\(roomPrefix):\(id)" }
}
