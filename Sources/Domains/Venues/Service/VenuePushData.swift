import DomainSeam
import Realtime
import Venues

/// Venue pushes are `RoomEvent`s.
extension VenuePush: RoomEvent {}

/// Who did what, carried by the pushes a guest's action causes (clients and the load tester use
/// it to tell which action a push reflects).
struct Cause: Sendable {
    enum Action: String, Sendable {
        case vote, unvote, request
    }

    var action: Action
    /// Who; nil when they hide that kind of action (`privacy`): `by` is then `null` for everyone.
    var by: String?
    var track: String

    /// The list of its author's that an action belongs to.
    var list: PrivateList { action == .request ? .requests : .votes }

    /// `{action, by}` on `track.moved` (the track is the push's own `track`).
    var shortJSON: JSON { ["action": .string(action.rawValue), "by": by.map { .string($0) } ?? .null] }
    /// `{action, by, track}` on `playlist.reordered`.
    var json: JSON { ["action": .string(action.rawValue), "by": by.map { .string($0) } ?? .null, "track": .string(track)] }
}

extension Jukebox {
    /// `track.moved` data for `uri`, now at `index`.
    func movedJSON(_ uri: String, index: Int, cause: Cause?) -> JSON {
        var pairs: [(String, JSON)] = [("track", .string(uri)), ("votes", .int(voteCount(of: uri))), ("index", .int(index))]
        if let cause { pairs.append(("cause", cause.shortJSON)) }
        return .object(pairs)
    }

    /// `playlist.reordered` data: the whole order and every count.
    func orderJSON(cause: Cause?) -> JSON {
        var pairs: [(String, JSON)] = [("order", .array(order.map { .string($0) })),
                                       ("votes", .object(order.map { ($0, .int(voteCount(of: $0))) }))]
        if let cause { pairs.append(("cause", cause.json)) }
        return .object(pairs)
    }

    /// UC19: the current playlist (a subscribe's `snapshot.playlist`, `playlist.snapshot`,
    /// `venue.playlist.get`); a requester who hides their requests shows as `null`.
    func snapshotJSON(hidesRequests: (String) -> Bool) -> JSON {
        let s = snapshot
        return ["playlist": s.playlist.map { ["uri": .string($0.uri), "creator": .string($0.creator)] } ?? .null,
                "nowPlaying": s.nowPlaying.map { .string($0) } ?? .null,
                "tracks": .array(s.tracks.map { e in
                    ["track": e.track.json, "votes": .int(e.votes),
                     "requester": e.requester.flatMap { hidesRequests($0) ? nil : JSON.string($0) } ?? .null]
                }),
                "settings": settings.json]
    }
}

extension VenueSettings {
    /// As clients see it and as it is stored.
    var json: JSON {
        ["explicitAllowed": .bool(explicitAllowed), "votesPerUserPerHour": .int(votesPerUserPerHour),
         "requestsPerUserPerHour": .int(requestsPerUserPerHour), "noRepeatHours": .int(noRepeatHours),
         "fairMode": .bool(fairMode), "fairModeMaxPendingPerUser": .int(fairModeMaxPendingPerUser)]
    }

    /// Reads `json` back; missing or mistyped members keep their defaults.
    init(json: JSON) {
        self.init()
        if case .bool(let v)? = json["explicitAllowed"] { explicitAllowed = v }
        if case .int(let v)? = json["votesPerUserPerHour"] { votesPerUserPerHour = v }
        if case .int(let v)? = json["requestsPerUserPerHour"] { requestsPerUserPerHour = v }
        if case .int(let v)? = json["noRepeatHours"] { noRepeatHours = v }
        if case .bool(let v)? = json["fairMode"] { fairMode = v }
        if case .int(let v)? = json["fairModeMaxPendingPerUser"] { fairModeMaxPendingPerUser = v }
    }
}

extension Track {
    var json: JSON {
        ["uri": .string(uri), "title": .string(title), "artist": .string(artist), "explicit": .bool(explicit),
         "durationMs": durationMs.map { .int($0) } ?? .null, "coverUrl": coverUrl.map { .string($0) } ?? .null]
    }
}
