import Realtime
import Venues

/// The stored form of a venue's playlist state, written by hand: Foundation's JSONEncoder was
/// most of the server's CPU on the vote path (the state is rewritten at every group commit).
/// The shape is exactly Codable's, so `JSONDecoder` reads it back.
extension JukeboxRecord {
    public var storedJSON: String {
        func opt(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }
        func opt(_ i: Int?) -> JSON { i.map { .int($0) } ?? .null }
        func opt(_ d: Double?) -> JSON { d.map { .double($0) } ?? .null }
        let s = settings
        var root: [(String, JSON)] = [
            ("settings", ["explicitAllowed": .bool(s.explicitAllowed), "votesPerUserPerHour": .int(s.votesPerUserPerHour),
                          "requestsPerUserPerHour": .int(s.requestsPerUserPerHour), "noRepeatHours": .int(s.noRepeatHours),
                          "fairMode": .bool(s.fairMode), "fairModeMaxPendingPerUser": .int(s.fairModeMaxPendingPerUser)]),
        ]
        if let p = playlist {
            root.append(("playlist", ["uri": .string(p.uri), "creator": .string(p.creator), "setAt": .double(p.setAt),
                                      "nowPlaying": opt(p.nowPlaying), "nextSeq": .int(Int(p.nextSeq))]))
        }
        root.append(("originalTracks", .array(originalTracks.map { t in
            ["position": .int(t.position), "uri": .string(t.uri), "title": .string(t.title), "artist": .string(t.artist),
             "explicit": .bool(t.explicit), "durationMs": opt(t.durationMs), "coverUrl": opt(t.coverUrl)]
        })))
        root.append(("queue", .array(queue.map { q in
            ["uri": .string(q.uri), "title": .string(q.title), "artist": .string(q.artist), "explicit": .bool(q.explicit),
             "durationMs": opt(q.durationMs), "coverUrl": opt(q.coverUrl), "seq": .int(Int(q.seq)),
             "requester": opt(q.requester), "requestedAt": opt(q.requestedAt)]
        })))
        root.append(("votes", .array(votes.map { v in
            ["uri": .string(v.uri), "user": .string(v.user), "at": .double(v.at), "seq": .int(Int(v.seq))]
        })))
        root.append(("plays", .array(plays.map { p in ["uri": .string(p.uri), "endedAt": .double(p.endedAt)] })))
        root.append(("actions", .array(actions.map { a in
            ["user": .string(a.user), "kind": .string(a.kind.rawValue), "at": .double(a.at)]
        })))
        return JSON.object(root).encoded
    }
}
