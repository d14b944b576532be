/// What a successful jukebox change did, i.e. what the venue's room should be told and what the
/// store should write. The venue's service maps each case to its pushes (protocol.md, pushes on
/// `venue:<id>`) and its rows.
public enum JukeboxChange: Sendable, Equatable {
    /// A new playlist replaced the queue: push `playlist.snapshot` (the whole `Jukebox.snapshot`).
    case playlistSet
    /// The queue is back to the playlist's original tracks, no votes, nothing playing:
    /// push `playlist.snapshot`.
    case reset
    /// A vote was counted (a vote, or a request of a queued track): push `track.moved {track,
    /// votes, index}`; nothing else moved.
    case voted(CountedVote)
    /// A vote was taken back and the track now stands at `index` of `order`; nothing else moved.
    /// Push `track.moved {track, votes, index}`.
    case moved(uri: String, index: Int)
    /// A new track entered the queue carrying its requester's vote: push `track.requested {track, by}`,
    /// then `track.moved` to `index` when nothing else moved, or `playlist.reordered` when `index`
    /// is nil (fair mode: the requester's other waiting tracks moved too).
    case requested(RequestedTrack)
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

/// What a change gives its caller: the change itself (`JukeboxChange`, for the pushes), and for a
/// vote or a request what the store keeps of it.
public protocol JukeboxOutcome: Sendable {
    var change: JukeboxChange { get }
}

extension JukeboxChange: JukeboxOutcome {
    public var change: JukeboxChange { self }
}

/// A vote the jukebox counted, as the store keeps it, and where its track now stands.
public struct CountedVote: JukeboxOutcome, Equatable {
    /// The vote's row.
    public var vote: VoteRecord
    /// The track voted for (the user's history names it).
    public var track: Track
    /// Where the track now stands in `order`.
    public var index: Int
    /// The counter after the vote (stored with it).
    public var nextSeq: Int64
    public var change: JukeboxChange { .voted(self) }
}

/// A track a request brought into the queue, as the store keeps it (its queue row, its
/// requester's vote), and where it stands: nil when fair mode moved the requester's other waiting
/// tracks too (the whole order is pushed).
public struct RequestedTrack: JukeboxOutcome, Equatable {
    public var queued: QueueRecord
    public var vote: VoteRecord
    public var index: Int?
    /// The counter after the request (stored with it).
    public var nextSeq: Int64
    public var track: Track { queued.track }
    public var by: String { vote.user }
    public var change: JukeboxChange { .requested(self) }
}

/// A request: a vote when the track was queued already, else a new track.
public enum RequestOutcome: JukeboxOutcome, Equatable {
    case voted(CountedVote)
    case requested(RequestedTrack)
    public var change: JukeboxChange {
        switch self {
        case .voted(let v): .voted(v)
        case .requested(let r): .requested(r)
        }
    }
}
