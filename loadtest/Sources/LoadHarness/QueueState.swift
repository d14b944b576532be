import Realtime

/// Reads the jukebox queue out of a PlaylistState (a subscribe snapshot's `playlist`, or a
/// `playlist.snapshot` push's data).
public enum QueueState {
    /// The queue and the pinned track; nil when `state` is not a PlaylistState.
    public static func from(playlistState state: JSON) -> (queue: [QueuedTrack], nowPlaying: UInt64?)? {
        guard case .array(let tracks)? = state["tracks"] else { return nil }
        var queue: [QueuedTrack] = []
        queue.reserveCapacity(tracks.count)
        for t in tracks {
            guard case .string(let uri)? = t["track"]?["uri"], case .int(let votes)? = t["votes"] else { return nil }
            queue.append(QueuedTrack(track: nameHash(uri), votes: votes))
        }
        var pinned: UInt64?
        if case .string(let uri)? = state["nowPlaying"] { pinned = nameHash(uri) }
        return (queue, pinned)
    }
}
