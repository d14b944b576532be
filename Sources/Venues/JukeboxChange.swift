/// What a successful jukebox change did, i.e. what the venue's room should be told.
/// `events` lists the push event names (protocol.md, pushes on `venue:<id>`) in the order to send them.
public enum JukeboxChange: Sendable, Equatable {
    /// A new playlist replaced the queue: push `playlist.snapshot` (the whole `Jukebox.snapshot`).
    case playlistSet
    /// The queue is back to the playlist's original tracks, no votes, nothing playing:
    /// push `playlist.snapshot`.
    case reset
    /// Votes changed: push `playlist.reordered {order, votes}`.
    case reordered
    /// A new track entered the queue carrying its requester's vote: push `track.requested {track, by}`,
    /// then `playlist.reordered`.
    case requested(Track, by: String)
    /// Every vote is gone, the queue is kept: push `votes.cleared`, then `playlist.reordered`.
    case votesCleared
    /// The playlist and its queue are gone: push `playlist.removed`.
    case removed
    /// The pinned track changed (nil: none): push `nowplaying.changed {track}`, then `playlist.reordered`.
    case nowPlaying(String?)
    /// A track finished and left the queue: push `playlist.reordered`; when it was the pinned
    /// track, also `nowplaying.changed {track: null}` first.
    case ended(String, clearedNowPlaying: Bool)
    /// The venue's settings changed (explicit allowance, limits, fair mode): push `venue.updated`;
    /// `reordered` is true when the order changed too (fair mode toggled), then push `playlist.reordered`.
    case settingsChanged(VenueSettings, reordered: Bool)

    /// The push events this change calls for, in order.
    public var events: [String] {
        switch self {
        case .playlistSet, .reset: ["playlist.snapshot"]
        case .reordered: ["playlist.reordered"]
        case .requested: ["track.requested", "playlist.reordered"]
        case .votesCleared: ["votes.cleared", "playlist.reordered"]
        case .removed: ["playlist.removed"]
        case .nowPlaying: ["nowplaying.changed", "playlist.reordered"]
        case .ended(_, let cleared): cleared ? ["nowplaying.changed", "playlist.reordered"] : ["playlist.reordered"]
        case .settingsChanged(_, let reordered): reordered ? ["venue.updated", "playlist.reordered"] : ["venue.updated"]
        }
    }
}
