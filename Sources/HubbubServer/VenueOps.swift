import Realtime
import Transport
import VenueService
import Venues

/// The venue ops of protocol.md (profiles, search, check-ins, rooms).
enum VenueOps {
    /// The venue id of a `venue:<id>` room name (nil: not a venue room).
    static func venueID(inRoom room: String) -> String? {
        room.hasPrefix("venue:") ? String(room.dropFirst("venue:".count)) : nil
    }

    typealias Directory = VenueDirectory<LoopSink>

    /// An op on a live venue: the caller's user id, the venue's actor and the request.
    static func live(_ name: String, _ opClass: RateLimiter.OpClass, _ venues: Directory,
                     _ body: @escaping @Sendable (String, VenueActor<LoopSink>, Request) async throws(ProtocolError) -> JSON)
        -> Operation {
        Operation(name: name, opClass: opClass, needsAuth: true) { session, r throws(ProtocolError) in
            let user = try await session.requireUser()
            let venue = try await venues.actor(for: try r.args.string("venue", maxLength: 64))
            return try await body(user.id, venue, r)
        }
    }

    static func all(_ venues: Directory) -> [Operation] {
        jukebox(venues) + profiles(venues)
    }

    static func jukebox(_ venues: Directory) -> [Operation] {
        [
            live("venue.playlist.set", .write, venues) { user, venue, r throws(ProtocolError) in
                let items = try r.args.array("tracks", maxCount: 5000)
                var tracks: [Track] = []
                for (i, item) in items.enumerated() {
                    guard case .object = item else { throw .badRequest("field tracks[\(i)] must be an object") }
                    tracks.append(try Track(args: Args(item), field: "tracks[\(i)]"))
                }
                return ["playlist": try await venue.setPlaylist(by: user, uri: try r.args.string("playlistUri", maxLength: 500),
                                                                creator: try r.args.string("creator", maxLength: 200), tracks: tracks)]
            },
            live("venue.playlist.reset", .write, venues) { user, venue, _ throws(ProtocolError) in
                ["playlist": try await venue.resetPlaylist(by: user)]
            },
            live("venue.playlist.clearVotes", .write, venues) { user, venue, _ throws(ProtocolError) in
                ["playlist": try await venue.clearVotes(by: user)]
            },
            live("venue.playlist.remove", .write, venues) { user, venue, _ throws(ProtocolError) in
                try await venue.removePlaylist(by: user)
                return [:]
            },
            live("venue.playlist.get", .read, venues) { _, venue, _ throws(ProtocolError) in
                ["playlist": await venue.snapshotJSON]
            },
            live("venue.explicit.set", .write, venues) { user, venue, r throws(ProtocolError) in
                ["explicitAllowed": .bool(try await venue.setExplicitAllowed(by: user, try r.args.bool("allowed")))]
            },
            live("venue.settings.set", .write, venues) { user, venue, r throws(ProtocolError) in
                var s = await venue.currentSettings
                if let v = try r.args.optionalBool("explicitAllowed") { s.explicitAllowed = v }
                if let v = try r.args.optionalInt("votesPerUserPerHour") { s.votesPerUserPerHour = v }
                if let v = try r.args.optionalInt("requestsPerUserPerHour") { s.requestsPerUserPerHour = v }
                if let v = try r.args.optionalInt("noRepeatHours") { s.noRepeatHours = v }
                if let v = try r.args.optionalBool("fairMode") { s.fairMode = v }
                if let v = try r.args.optionalInt("fairModeMaxPendingPerUser") { s.fairModeMaxPendingPerUser = v }
                return ["settings": try await venue.setSettings(by: user, s)]
            },
            live("venue.vote", .write, venues) { user, venue, r throws(ProtocolError) in
                try await venue.vote(by: user, uri: try r.args.string("track", maxLength: 500))
            },
            live("venue.unvote", .write, venues) { user, venue, r throws(ProtocolError) in
                try await venue.unvote(by: user, uri: try r.args.string("track", maxLength: 500))
            },
            live("venue.request", .write, venues) { user, venue, r throws(ProtocolError) in
                try await venue.request(by: user, track: try Track(args: try r.args.object("track"), field: "track"))
            },
            live("venue.track.voters", .read, venues) { _, venue, r throws(ProtocolError) in
                try await venue.voters(of: try r.args.string("track", maxLength: 500))
            },
            live("venue.nowPlaying", .write, venues) { user, venue, r throws(ProtocolError) in
                try await venue.nowPlaying(by: user, uri: try r.args.optionalString("track", maxLength: 500))
                return [:]
            },
            live("venue.track.ended", .write, venues) { user, venue, r throws(ProtocolError) in
                try await venue.trackEnded(by: user, uri: try r.args.string("track", maxLength: 500))
                return [:]
            },
            Operation(name: "user.votes", opClass: .read, needsAuth: true) { session, r throws(ProtocolError) in
                let me = try await session.requireUser()
                return ["votes": .array(try await venues.trackActions(of: try r.args.optionalString("user", maxLength: 64) ?? me.id, kind: "vote"))]
            },
            Operation(name: "user.requests", opClass: .read, needsAuth: true) { session, r throws(ProtocolError) in
                let me = try await session.requireUser()
                return ["requests": .array(try await venues.trackActions(of: try r.args.optionalString("user", maxLength: 64) ?? me.id, kind: "request"))]
            },
        ]
    }

    static func profiles(_ venues: Directory) -> [Operation] {
        [
            Operation(name: "venue.register", opClass: .write, needsAuth: true) { session, r throws(ProtocolError) in
                let user = try await session.requireUser()
                let v = try await venues.register(owner: user.id, fields: try VenueFields(r.args))
                return ["venue": v.json]
            },
            Operation(name: "venue.get", opClass: .read, needsAuth: true) { _, r throws(ProtocolError) in
                let id = try r.args.string("venue", maxLength: 64)
                let v = try await venues.venue(id)
                return ["venue": v.json, "checkedIn": .int(try await venues.checkinCount(id))]
            },
            Operation(name: "venue.update", opClass: .write, needsAuth: true) { session, r throws(ProtocolError) in
                let user = try await session.requireUser()
                let v = try await venues.update(try r.args.string("venue", maxLength: 64), by: user.id, args: r.args)
                return ["venue": v.json]
            },
            Operation(name: "venue.remove", opClass: .write, needsAuth: true) { session, r throws(ProtocolError) in
                let user = try await session.requireUser()
                let id = try r.args.string("venue", maxLength: 64)
                try await venues.remove(id, by: user.id)
                return ["removed": .string(id)]
            },
            Operation(name: "venue.search", opClass: .read, needsAuth: true) { _, r throws(ProtocolError) in
                let found = try await venues.search(try r.args.string("q", maxLength: 200))
                return ["venues": .array(found.map(\.json))]
            },
            Operation(name: "venue.nearby", opClass: .read, needsAuth: true) { _, r throws(ProtocolError) in
                let found = try await venues.nearby(minLat: try r.args.double("minLat"), minLon: try r.args.double("minLon"),
                                                    maxLat: try r.args.double("maxLat"), maxLon: try r.args.double("maxLon"))
                return ["venues": .array(found.map(\.json))]
            },
            Operation(name: "venue.owner.add", opClass: .write, needsAuth: true) { session, r throws(ProtocolError) in
                let me = try await session.requireUser()
                let venue = try r.args.string("venue", maxLength: 64)
                let other = try r.args.string("user", maxLength: 64)
                let accounts = session.services.accounts
                try await venues.addOwner(other, to: venue, by: me.id) { id in ((try? await accounts.user(id)) ?? nil) != nil }
                return ["venue": .string(venue), "owner": .string(other)]
            },
            Operation(name: "venue.checkin", opClass: .write, needsAuth: true) { session, r throws(ProtocolError) in
                let user = try await session.requireUser()
                let n = try await venues.checkin(try r.args.string("venue", maxLength: 64), user: user.id)
                return ["checkedIn": .int(n)]
            },
            Operation(name: "user.checkins", opClass: .read, needsAuth: true) { session, r throws(ProtocolError) in
                let me = try await session.requireUser()
                let id = try r.args.optionalString("user", maxLength: 64) ?? me.id
                return ["checkins": .array(try await venues.checkins(of: id))]
            },
            Operation(name: "subscribe", opClass: .read, needsAuth: true) { session, r throws(ProtocolError) in
                let room = try r.args.string("room", maxLength: 200)
                var since: (seq: UInt64, epoch: String)?
                if let s = try r.args.optionalObject("since") {
                    let seq = try s.int("seq")
                    guard seq >= 0 else { throw .badRequest("field since.seq must not be negative") }
                    since = (UInt64(seq), try s.string("epoch", maxLength: 64))
                }
                guard let id = venueID(inRoom: room) else { throw .badRequest("field room: unknown room \(room)") }
                let venue = try await venues.actor(for: id)
                try await session.addRoom(room)
                try await venue.subscribe(session.handle, requestID: r.id, since: since)
                return nil // the venue sent the reply, ahead of any push
            },
            Operation(name: "unsubscribe", opClass: .read, needsAuth: true) { session, r throws(ProtocolError) in
                let room = try r.args.string("room", maxLength: 200)
                guard let id = venueID(inRoom: room) else { throw .badRequest("field room: unknown room \(room)") }
                await session.removeRoom(room)
                // Only a live venue has subscribers; loading one from disk to leave it would be waste.
                await venues.liveActor(id)?.unsubscribe(session.handle)
                return ["room": .string(room)]
            },
        ]
    }
}
