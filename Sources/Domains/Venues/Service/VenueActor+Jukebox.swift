import DomainSeam
import Foundation
import Realtime
import Venues

extension VenueActor {
    // MARK: Owner operations (UC19–UC24)

    func setPlaylist(by user: String, uri: String, creator: String, tracks: [Track], reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "set the playlist")
        let now = Date().timeIntervalSince1970
        try apply(cause: nil) { try $0.setPlaylist(uri: uri, creator: creator, tracks: tracks, now: now) }
        commit(.whole(jukebox.records), reply: reply, result: ["playlist": playlistJSON])
    }

    func resetPlaylist(by user: String, reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "reset the playlist")
        try apply(cause: nil) { try $0.reset() }
        commit(.whole(jukebox.records), reply: reply, result: ["playlist": playlistJSON])
    }

    func clearVotes(by user: String, reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "clear the votes")
        try apply(cause: nil) { try $0.clearVotes() }
        commit(.votesCleared, reply: reply, result: ["playlist": playlistJSON])
    }

    func removePlaylist(by user: String, reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "remove the playlist")
        try apply(cause: nil) { try $0.removePlaylist() }
        commit(.whole(jukebox.records), reply: reply, result: [:])
    }

    func setExplicitAllowed(by user: String, _ allowed: Bool, reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "change the explicit lyrics setting")
        try apply(cause: nil) { $0.setExplicitAllowed(allowed) }
        commit(.settings(jukebox.settings), reply: reply, result: ["explicitAllowed": .bool(jukebox.explicitAllowed)])
    }

    /// Changes the settings named in `patch`, keeping the others as they are at this moment (read
    /// and written in one step: two owners changing different settings at once both win).
    func changeSettings(by user: String, _ patch: VenueSettingsPatch, reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "change the venue's settings")
        try apply(cause: nil) { j in
            let settings = patch.applied(to: j.settings)
            return try j.setSettings(settings)
        }
        commit(.settings(jukebox.settings), reply: reply, result: ["settings": jukebox.settings.json])
    }

    /// The owner's player reports what is playing.
    func nowPlaying(by user: String, uri: String?, reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "report what is playing")
        try apply(cause: nil) { try $0.nowPlaying(uri: uri) }
        commit(.nowPlaying(jukebox.nowPlayingUri), reply: reply, result: [:])
    }

    /// The owner's player reports a track ended: it leaves the queue, its votes go.
    func trackEnded(by user: String, uri: String, reply: Replier) async throws(ProtocolError) {
        try await requireOwner(user, "report a track ended")
        let now = Date().timeIntervalSince1970
        try apply(cause: nil) { try $0.trackEnded(uri: uri, now: now) }
        // Plays are remembered for the no-repeat window, and at least a day (as the jukebox does).
        let keep = Double(max(jukebox.settings.noRepeatHours, 24)) * 3600
        commit(.ended(uri: uri, at: now, nowPlaying: jukebox.nowPlayingUri, forgetPlaysBefore: now - keep), reply: reply, result: [:])
    }

    // MARK: Patron operations (UC8–UC12)

    func vote(by user: String, uri: String, reply: Replier) throws(ProtocolError) {
        let now = Date().timeIntervalSince1970
        let counted = try apply(cause: cause(.vote, by: user, track: uri)) { try $0.vote(user: user, uri: uri, now: now) }
        commit(counted, now: now, reply: reply, result: .string(uri))
    }

    func unvote(by user: String, uri: String, reply: Replier) throws(ProtocolError) {
        try apply(cause: cause(.unvote, by: user, track: uri)) { try $0.unvote(user: user, uri: uri) }
        commit(.unvote(uri: uri, user: user), reply: reply, result: ["track": .string(uri), "votes": .int(jukebox.voteCount(of: uri))])
    }

    func request(by user: String, track: Track, reply: Replier) throws(ProtocolError) {
        let now = Date().timeIntervalSince1970
        switch try apply(cause: cause(.request, by: user, track: track.uri)) { try $0.request(user: user, track: track, now: now) } {
        case .voted(let counted): // already queued: the request was a vote
            commit(counted, now: now, reply: reply, result: track.json)
        case .requested(let r):
            commit(.request(r.queued, r.vote, nextSeq: r.nextSeq, history: TrackActionRow(kind: .request, user: user, track: track, at: now)),
                   reply: reply, result: ["track": track.json, "votes": .int(jukebox.voteCount(of: track.uri))])
        }
    }

    /// Writes a counted vote as the jukebox reported it; the reply names `track` and its votes.
    private func commit(_ counted: CountedVote, now: Double, reply: Replier, result track: JSON) {
        let history = TrackActionRow(kind: .vote, user: counted.vote.user, track: counted.track, at: now)
        commit(.vote(counted.vote, nextSeq: counted.nextSeq, history: history), reply: reply,
               result: ["track": track, "votes": .int(jukebox.voteCount(of: counted.vote.uri))])
    }

    /// UC10/UC12: who voted for a track, and who requested it.
    func voters(of uri: String) throws(ProtocolError) -> (voters: [String], requester: String?) {
        _ = try takeOver()
        guard jukebox.contains(uri) else { throw .notFound("track \(uri) is not in the playlist") }
        return (jukebox.voters(of: uri), jukebox.requester(of: uri))
    }

    /// UC19: the playlist as it is (a requester who hides their requests shows as `null`).
    var playlistJSON: JSON { jukebox.snapshotJSON { self.directory.hides(.requests, $0) } }

    /// Who did what, as everyone may see it: nameless when the user hides that kind of action.
    private func cause(_ action: Cause.Action, by user: String, track: String) -> Cause {
        var c = Cause(action: action, by: user, track: track)
        if directory.hides(c.list, user) { c.by = nil }
        return c
    }

    // MARK: Applying

    /// Applies a change in memory and pushes what it did; a refused change changes nothing. The
    /// caller hands the change's rows to `commit` in the same step.
    @discardableResult
    func apply<Outcome: JukeboxOutcome>(cause: Cause?, _ change: (inout Jukebox) throws -> Outcome) throws(ProtocolError) -> Outcome {
        if try takeOver() != nil { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        // Refused before anything changes: once applied and pushed, the store must take it.
        try writer.admit()
        let result: Outcome
        do {
            result = try change(&jukebox)
        } catch let e as JukeboxError {
            throw e.protocolError
        } catch {
            throw ProtocolError(.internal, "\(error)")
        }
        push(result.change, cause: cause)
        return result
    }

    /// The pushes a change calls for (protocol.md, pushes on `venue:<id>`), in order.
    private func push(_ change: JukeboxChange, cause: Cause?) {
        switch change {
        case .playlistSet, .reset:
            publish(.snapshot, playlistJSON)
        case .voted(let counted):
            publish(.trackMoved, jukebox.movedJSON(counted.vote.uri, index: counted.index, cause: cause))
        case .moved(let uri, let index):
            publish(.trackMoved, jukebox.movedJSON(uri, index: index, cause: cause))
        case .requested(let r):
            publish(.trackRequested, ["track": r.track.json, "by": directory.hides(.requests, r.by) ? .null : .string(r.by)])
            if let index = r.index {
                publish(.trackMoved, jukebox.movedJSON(r.track.uri, index: index, cause: cause))
            } else {
                publish(.reordered, jukebox.orderJSON(cause: cause))
            }
        case .votesCleared:
            publish(.votesCleared, [:])
            publish(.reordered, jukebox.orderJSON(cause: nil))
        case .removed:
            publish(.playlistRemoved, ["venue": .string(venue.id)])
        case .nowPlaying(let uri):
            publish(.nowPlayingChanged, ["track": uri.map { .string($0) } ?? .null])
            publish(.reordered, jukebox.orderJSON(cause: nil))
        case .ended(_, let cleared):
            if cleared { publish(.nowPlayingChanged, ["track": .null]) }
            publish(.reordered, jukebox.orderJSON(cause: nil))
        case .settingsChanged(let settings, let reordered):
            publish(.venueUpdated, ["venue": venue.json, "settings": settings.json])
            if reordered { publish(.reordered, jukebox.orderJSON(cause: nil)) }
        }
    }

}

/// The settings a `venue.settings.set` names; the others stay as they are.
struct VenueSettingsPatch: Sendable {
    var explicitAllowed: Bool?
    var votesPerUserPerHour: Int?
    var requestsPerUserPerHour: Int?
    var noRepeatHours: Int?
    var fairMode: Bool?
    var fairModeMaxPendingPerUser: Int?

    func applied(to current: VenueSettings) -> VenueSettings {
        var s = current
        if let v = explicitAllowed { s.explicitAllowed = v }
        if let v = votesPerUserPerHour { s.votesPerUserPerHour = v }
        if let v = requestsPerUserPerHour { s.requestsPerUserPerHour = v }
        if let v = noRepeatHours { s.noRepeatHours = v }
        if let v = fairMode { s.fairMode = v }
        if let v = fairModeMaxPendingPerUser { s.fairModeMaxPendingPerUser = v }
        return s
    }
}

extension JukeboxError {
    var protocolError: ProtocolError {
        switch self {
        case .badRequest(let field, let message): return .badRequest(message.contains(field) ? message : "\(field): \(message)")
        case .notFound(let m): return .notFound(m)
        case .conflict(let m): return .conflict(m)
        case .explicitNotAllowed: return .forbidden(message)
        case .rateLimited(let ms): return ProtocolError(.rateLimited, message, retryAfterMs: ms)
        }
    }
}
