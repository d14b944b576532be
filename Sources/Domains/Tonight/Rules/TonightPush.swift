/// The pushes of `user:<id>` and `event:<id>` rooms (protocol.md), by their names on the wire:
/// the server sends these, and clients and the load harness tell pushes apart by them.
public enum TonightPush: String, Sendable, CaseIterable {
    /// `{event, reason}`: an event entered the user's tonight set (once per user and event, ever).
    case suggested = "tonight.suggested"
    /// `{event, reason}`: a favourite artist's new event near the user (once per user and event).
    case announced = "event.announced"
    /// `{event, changed, previous}`: a followed event's venue, start, status or price changed.
    case changed = "event.changed"
    /// `{event, minutes}`: a followed event starts soon.
    case reminder = "event.reminder"
    /// `{status?, text?, score?, at}`: a provider's live update of the event (on `event:` rooms).
    case live = "event.live"

    /// A user's own room (suggestions, announcements, changes and reminders): `user:<id>`.
    public static let userRoomPrefix = "user"
    /// An event's room (live updates): `event:<id>`.
    public static let eventRoomPrefix = "event"
    /// The room of user `id`.
    public static func userRoom(_ id: String) -> String { "\(userRoomPrefix):\(id)" }
    /// The room of event `id`.
    public static func eventRoom(_ id: String) -> String { "\(eventRoomPrefix):\(id)" }
}
