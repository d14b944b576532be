import Foundation
import GRDB
import Realtime
import Storage
import Venues

/// A row of the user's vote and request history.
struct TrackActionRow: Sendable {
    var user: String
    var kind: String
    var track: Track
    var at: Double
}

extension VenueActor {
    // MARK: Owner operations (UC19–UC24)

    public func setPlaylist(by user: String, uri: String, creator: String, tracks: [Track]) async throws(ProtocolError) -> JSON {
        try await requireOwner(user, "set the playlist")
        try apply { try $0.setPlaylist(uri: uri, creator: creator, tracks: tracks, now: Date().timeIntervalSince1970) }
        try await persist()
        return snapshotJSON
    }

    public func resetPlaylist(by user: String) async throws(ProtocolError) -> JSON {
        try await requireOwner(user, "reset the playlist")
        try apply { try $0.reset() }
        try await persist()
        return snapshotJSON
    }

    public func clearVotes(by user: String) async throws(ProtocolError) -> JSON {
        try await requireOwner(user, "clear the votes")
        try apply { try $0.clearVotes() }
        try await persist()
        return snapshotJSON
    }

    public func removePlaylist(by user: String) async throws(ProtocolError) {
        try await requireOwner(user, "remove the playlist")
        try apply { try $0.removePlaylist() }
        try await persist()
    }

    public func setExplicitAllowed(by user: String, _ allowed: Bool) async throws(ProtocolError) -> Bool {
        try await requireOwner(user, "change the explicit lyrics setting")
        try apply { $0.setExplicitAllowed(allowed) }
        try await persist()
        return jukebox.explicitAllowed
    }

    public func setSettings(by user: String, _ settings: VenueSettings) async throws(ProtocolError) -> JSON {
        try await requireOwner(user, "change the venue's settings")
        try apply { try $0.setSettings(settings) }
        try await persist()
        return settingsJSON
    }

    /// The owner's player reports what is playing.
    public func nowPlaying(by user: String, uri: String?) async throws(ProtocolError) {
        try await requireOwner(user, "report what is playing")
        try apply { try $0.nowPlaying(uri: uri) }
        try await persist()
    }

    /// The owner's player reports a track ended: it leaves the queue, its votes go.
    public func trackEnded(by user: String, uri: String) async throws(ProtocolError) {
        try await requireOwner(user, "report a track ended")
        try apply { try $0.trackEnded(uri: uri, now: Date().timeIntervalSince1970) }
        try await persist()
    }

    // MARK: Patron operations (UC8–UC12)

    public func vote(by user: String, uri: String) async throws(ProtocolError) -> JSON {
        let now = Date().timeIntervalSince1970
        try apply(cause: ["action": "vote", "by": .string(user), "track": .string(uri)]) { try $0.vote(user: user, uri: uri, now: now) }
        let track = jukebox.track(of: uri)
        try await persist(track.map { [TrackActionRow(user: user, kind: "vote", track: $0, at: now)] } ?? [])
        return ["track": .string(uri), "votes": .int(jukebox.voteCount(of: uri))]
    }

    public func unvote(by user: String, uri: String) async throws(ProtocolError) -> JSON {
        try apply(cause: ["action": "unvote", "by": .string(user), "track": .string(uri)]) { try $0.unvote(user: user, uri: uri) }
        try await persist()
        return ["track": .string(uri), "votes": .int(jukebox.voteCount(of: uri))]
    }

    public func request(by user: String, track: Track) async throws(ProtocolError) -> JSON {
        let now = Date().timeIntervalSince1970
        let wasQueued = jukebox.contains(track.uri)
        try apply(cause: ["action": "request", "by": .string(user), "track": .string(track.uri)]) {
            try $0.request(user: user, track: track, now: now)
        }
        // A request carries the requester's vote: it shows in both of the user's lists (UC14, UC15);
        // requesting a track already queued is just a vote.
        var rows = [TrackActionRow(user: user, kind: "vote", track: track, at: now)]
        if !wasQueued { rows.append(TrackActionRow(user: user, kind: "request", track: track, at: now)) }
        try await persist(rows)
        return ["track": track.json, "votes": .int(jukebox.voteCount(of: track.uri))]
    }

    /// UC10/UC12: who voted for a track, and who requested it.
    public func voters(of uri: String) throws(ProtocolError) -> JSON {
        guard jukebox.contains(uri) else { throw .notFound("track \(uri) is not in the playlist") }
        return ["track": .string(uri), "voters": .array(jukebox.voters(of: uri).map { .string($0) }),
                "requester": jukebox.requester(of: uri).map { .string($0) } ?? .null]
    }

    public var currentSettings: VenueSettings { jukebox.settings }

    // MARK: Applying and persisting

    /// Applies a change in memory and pushes what it did; a refused change changes nothing.
    /// `cause` (who did what) is added to the `playlist.reordered` push, so clients — and the
    /// load tester measuring action → push latency — can tell which action a push reflects.
    func apply(cause: JSON? = nil, _ change: (inout Jukebox) throws -> JukeboxChange) throws(ProtocolError) {
        guard !gone else { throw .notFound("no venue \(venue.id)") }
        guard !retired else { throw ProtocolError(.unavailable, "the venue is reloading; try again") }
        let result: JukeboxChange
        do {
            result = try change(&jukebox)
        } catch let e as JukeboxError {
            throw e.protocolError
        } catch {
            throw ProtocolError(.internal, "\(error)")
        }
        for event in result.events {
            var data = pushData(event, result)
            if event == "playlist.reordered", let cause, case .object(var pairs) = data {
                pairs.append(("cause", cause))
                data = .object(pairs)
            }
            publish(event: event, data: data)
        }
    }

    private func pushData(_ event: String, _ change: JukeboxChange) -> JSON {
        switch event {
        case "playlist.snapshot": return snapshotJSON
        case "playlist.reordered": return orderJSON
        case "track.requested":
            if case .requested(let track, let by) = change { return ["track": track.json, "by": .string(by)] }
            return [:]
        case "votes.cleared": return [:]
        case "playlist.removed": return ["venue": .string(venue.id)]
        case "nowplaying.changed": return ["track": jukebox.nowPlayingUri.map { .string($0) } ?? .null]
        case "venue.updated": return ["venue": venue.json, "settings": settingsJSON]
        default: return [:]
        }
    }

    var orderJSON: JSON {
        ["order": .array(jukebox.order.map { .string($0) }),
         "votes": .object(jukebox.order.map { ($0, .int(jukebox.voteCount(of: $0))) })]
    }

    /// UC19: the current playlist (also a snapshot's `playlist`).
    public var snapshotJSON: JSON {
        let s = jukebox.snapshot
        return ["playlist": s.playlist.map { ["uri": .string($0.uri), "creator": .string($0.creator)] } ?? .null,
                "nowPlaying": s.nowPlaying.map { .string($0) } ?? .null,
                "tracks": .array(s.tracks.map { e in
                    ["track": e.track.json, "votes": .int(e.votes), "requester": e.requester.map { .string($0) } ?? .null]
                }),
                "settings": settingsJSON]
    }

    var settingsJSON: JSON {
        let s = jukebox.settings
        return ["explicitAllowed": .bool(s.explicitAllowed), "votesPerUserPerHour": .int(s.votesPerUserPerHour),
                "requestsPerUserPerHour": .int(s.requestsPerUserPerHour), "noRepeatHours": .int(s.noRepeatHours),
                "fairMode": .bool(s.fairMode), "fairModeMaxPendingPerUser": .int(s.fairModeMaxPendingPerUser)]
    }

    private func requireOwner(_ user: String, _ action: String) async throws(ProtocolError) {
        guard try await directory.isOwner(user, of: venue.id) else { throw .forbidden("only an owner can \(action)") }
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

extension Track {
    var json: JSON {
        ["uri": .string(uri), "title": .string(title), "artist": .string(artist), "explicit": .bool(explicit),
         "durationMs": durationMs.map { .int($0) } ?? .null, "coverUrl": coverUrl.map { .string($0) } ?? .null]
    }

    /// A `Track` argument: `{uri, title, artist, explicit, durationMs?, coverUrl?}`; errors name the field.
    public init(args: Args, field: String) throws(ProtocolError) {
        func text(_ k: String) throws(ProtocolError) -> String {
            guard args.has(k) else { throw .badRequest("missing field \(field).\(k)") }
            do { return try args.string(k, maxLength: 500) } catch {
                throw ProtocolError(error.code, error.message.replacingOccurrences(of: "field \(k)", with: "field \(field).\(k)"))
            }
        }
        let uri = try text("uri"), title = try text("title"), artist = try text("artist")
        let explicit: Bool
        do { explicit = try args.optionalBool("explicit") ?? false } catch { throw .badRequest("\(field).explicit must be true or false") }
        let duration: Int?
        do { duration = try args.optionalInt("durationMs") } catch { throw .badRequest("\(field).durationMs must be an integer") }
        let cover: String?
        do { cover = try args.optionalString("coverUrl", maxLength: 2000) } catch { throw .badRequest("\(field).coverUrl must be a string") }
        self.init(uri: uri, title: title, artist: artist, explicit: explicit, durationMs: duration, coverUrl: cover)
    }
}
