/// The pushes of a `venue:<id>` room (protocol.md), by their names on the wire: the server sends
/// these, and clients and the load harness tell pushes apart by them (no other spelling). Their
/// data is built in VenueService (`VenuePushData.swift`).
public enum VenuePush: String, Sendable, CaseIterable {
    /// The whole playlist state (a new playlist, or a reset).
    case snapshot = "playlist.snapshot"
    /// One track's new vote count and place: `{track, votes, index, cause}`. A vote, an unvote or
    /// a request costs one of these, whatever the queue's length.
    case trackMoved = "track.moved"
    /// The whole order with every count: only for changes that move many tracks at once.
    case reordered = "playlist.reordered"
    /// A new track entered the queue: `{track, by}` (a `track.moved` or `playlist.reordered` follows).
    case trackRequested = "track.requested"
    case votesCleared = "votes.cleared"
    case playlistRemoved = "playlist.removed"
    case nowPlayingChanged = "nowplaying.changed"
    /// The venue's profile or settings changed.
    case venueUpdated = "venue.updated"
    case venueRemoved = "venue.removed"
    /// `{checkedIn}`: how many patrons have checked in.
    case presenceChanged = "presence.changed"

    /// The rooms these are sent on: `venue:<id>`.
    public static let roomPrefix = "venue"
    /// The room of venue `id`.
    public static func room(_ id: String) -> String { "\(roomPrefix):\(id)" }
}
