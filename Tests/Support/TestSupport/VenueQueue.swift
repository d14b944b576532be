import Realtime
import Venues

/// A client's copy of a venue's queue (protocol.md, pushes on `venue:<id>`), kept from a snapshot
/// and the room's pushes: `track.moved` moves one track, `track.requested` appends one,
/// `playlist.reordered` and `playlist.snapshot` replace the whole order.
public struct VenueQueue: Equatable, Sendable {
    /// Uris in queue order (the pinned, now-playing track first).
    public private(set) var order: [String] = []
    /// Votes per queued uri.
    public private(set) var votes: [String: Int] = [:]

    /// From a playlist snapshot: a subscribe's `snapshot.playlist`, `playlist.snapshot`'s data, or
    /// `venue.playlist.get`'s `playlist` (`{tracks: [{track: {uri}, votes}]}`).
    public init(playlist: JSON) { replace(with: playlist) }

    /// Applies one push of the venue's room (other events leave the queue as it is).
    public mutating func apply(event: String, data: JSON) {
        guard let push = VenuePush(rawValue: event) else { return }
        switch push {
        case .snapshot:
            replace(with: data)
        case .trackMoved:
            guard case .string(let uri)? = data["track"], case .int(let n)? = data["votes"], case .int(let index)? = data["index"] else { return }
            order.removeAll { $0 == uri }
            order.insert(uri, at: min(max(index, 0), order.count))
            votes[uri] = n
        case .trackRequested:
            guard case .string(let uri)? = data["track"]?["uri"], votes[uri] == nil else { return }
            order.append(uri)
            votes[uri] = 0
        case .reordered:
            guard case .array(let items)? = data["order"] else { return }
            order = items.compactMap { if case .string(let s) = $0 { s } else { nil } }
            votes = [:]
            for uri in order { if case .int(let n)? = data["votes"]?[uri] { votes[uri] = n } else { votes[uri] = 0 } }
        case .playlistRemoved:
            order = []
            votes = [:]
        case .votesCleared, .nowPlayingChanged, .venueUpdated, .venueRemoved, .presenceChanged:
            return
        }
    }

    /// Applies a push message (`{room, seq, epoch, event, data}`).
    public mutating func apply(push: JSON) {
        guard case .string(let event)? = push["event"] else { return }
        apply(event: event, data: push["data"] ?? .null)
    }

    private mutating func replace(with playlist: JSON) {
        order = []
        votes = [:]
        guard case .array(let tracks)? = playlist["tracks"] else { return }
        for t in tracks {
            guard case .string(let uri)? = t["track"]?["uri"] else { continue }
            order.append(uri)
            if case .int(let n)? = t["votes"] { votes[uri] = n } else { votes[uri] = 0 }
        }
    }
}
