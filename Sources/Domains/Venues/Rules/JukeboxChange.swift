/// What a successful jukebox change did, i.e. what the venue's room should be told and what the
/// store should write. The venue's service maps each case to its pushes (protocol.md, pushes on
/// `venue:<id>`) and its rows.
public enum JukeboxChange: Sendable, Equatable {
    /// A new playlist replaced the queue: push `playlist.snapshot` (the whole `Jukebox.snapshot`).
    case playlistSet
    /// The queue is back to the playlist's original tracks, no votes, nothing playing:
    /// push `playlist.snapshot`.
    case reset
    /// One track's votes changed (a vote, an unvote, or a request of a queued track) and it now
    /// stands at `index` of `order`; nothing else moved. Push `track.moved {track, votes, index}`.
    case moved(uri: String, index: Int)
    /// A new track entered the queue carrying its requester's vote: push `track.requested {track, by}`,
    /// then `track.moved` to `index` when nothing else moved, or `playlist.reordered` when `index`
    /// is nil (fair mode: the requester's other waiting tracks moved too).
    case requested(Track, by: String, index: Int?)
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
}
