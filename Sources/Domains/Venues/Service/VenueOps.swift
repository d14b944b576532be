import DomainSeam
import Realtime
import Venues

/// The venue ops of protocol.md: profiles, search, check-ins, and the jukebox of each venue.
/// Ops on a live venue find its actor and hand it the request with its `Replier`: writes are
/// answered from the store's completion once durable, without coming back through here.
extension VenuesDomain {
    /// An op handed to the venue's live actor, which answers through the call's `Replier` (writes
    /// once they are durable).
    private func onVenue<A: VenueScoped>(_ name: String, _ rateClass: RateClass, _ arguments: A.Type,
                                         _ body: @escaping @Sendable (VenueActor, UserCall<A>) async throws(ProtocolError) -> Void) -> Op {
        let venues = directory
        return Op.user(name, rateClass, A.self) { c throws(ProtocolError) in
            try await body(try await venues.actor(for: c.args.venue), c)
            return .sent
        }.homed(VenuesDomain.home)
    }

    /// The room of the venue an op names (`venue`): its actor lives on that room's owner node.
    static let home: @Sendable (Args) -> String? = { args in
        (try? args.optionalString("venue", maxLength: 64)).flatMap { $0.map { VenuePush.room($0) } }
    }

    var jukeboxOps: [Op] {
        let venues = directory
        let capabilities = self.capabilities
        return [
            onVenue("venue.vote", .write, VenueTrackArgs.self) { v, c throws(ProtocolError) in
                try await v.vote(by: c.user, uri: c.args.track, reply: c.reply)
            },
            onVenue("venue.unvote", .write, VenueTrackArgs.self) { v, c throws(ProtocolError) in
                try await v.unvote(by: c.user, uri: c.args.track, reply: c.reply)
            },
            onVenue("venue.request", .write, RequestArgs.self) { v, c throws(ProtocolError) in
                try await v.request(by: c.user, track: c.args.track, reply: c.reply)
            },
            onVenue("venue.playlist.set", .write, SetPlaylistArgs.self) { v, c throws(ProtocolError) in
                try await v.setPlaylist(by: c.user, uri: c.args.uri, creator: c.args.creator, tracks: c.args.tracks, reply: c.reply)
            },
            onVenue("venue.playlist.reset", .write, VenueArgs.self) { v, c throws(ProtocolError) in
                try await v.resetPlaylist(by: c.user, reply: c.reply)
            },
            onVenue("venue.playlist.clearVotes", .write, VenueArgs.self) { v, c throws(ProtocolError) in
                try await v.clearVotes(by: c.user, reply: c.reply)
            },
            onVenue("venue.playlist.remove", .write, VenueArgs.self) { v, c throws(ProtocolError) in
                try await v.removePlaylist(by: c.user, reply: c.reply)
            },
            onVenue("venue.explicit.set", .write, ExplicitArgs.self) { v, c throws(ProtocolError) in
                try await v.setExplicitAllowed(by: c.user, c.args.allowed, reply: c.reply)
            },
            onVenue("venue.settings.set", .write, SettingsArgs.self) { v, c throws(ProtocolError) in
                try await v.changeSettings(by: c.user, c.args.patch, reply: c.reply)
            },
            onVenue("venue.nowPlaying", .write, NowPlayingArgs.self) { v, c throws(ProtocolError) in
                try await v.nowPlaying(by: c.user, uri: c.args.track, reply: c.reply)
            },
            onVenue("venue.track.ended", .write, VenueTrackArgs.self) { v, c throws(ProtocolError) in
                try await v.trackEnded(by: c.user, uri: c.args.track, reply: c.reply)
            },
            .user("venue.track.voters", .read, VenueTrackArgs.self) { c throws(ProtocolError) in
                let (voters, requester) = try await venues.actor(for: c.args.venue).voters(of: c.args.track)
                // Who hides their votes (or requests) is left out for everyone but themselves, and counted.
                let hides = venues.hides
                let hidden = Set(voters.filter { $0 != c.user && hides(.votes, $0) })
                let shownRequester = requester.flatMap { $0 != c.user && hides(.requests, $0) ? nil : $0 }
                return .reply(["track": .string(c.args.track), "voters": .array(voters.filter { !hidden.contains($0) }.map { .string($0) }),
                               "hiddenVoters": .int(hidden.count), "requester": shownRequester.map { .string($0) } ?? .null])
            }.homed(VenuesDomain.home),
            .user("venue.playlist.get", .read, VenueArgs.self) { c throws(ProtocolError) in
                .reply(["playlist": try await venues.actor(for: c.args.venue).playlistJSON])
            }.homed(VenuesDomain.home),
            .user("user.votes", .read, UserArgument.self) { c throws(ProtocolError) in
                let user = c.args.user ?? c.user
                try capabilities.resolve(UserDirectory.self)?.requireVisible(.votes, of: user, to: c.user)
                return .reply(["votes": .array(try await venues.trackActions(of: user, .vote))])
            },
            .user("user.requests", .read, UserArgument.self) { c throws(ProtocolError) in
                let user = c.args.user ?? c.user
                try capabilities.resolve(UserDirectory.self)?.requireVisible(.requests, of: user, to: c.user)
                return .reply(["requests": .array(try await venues.trackActions(of: user, .request))])
            },
        ]
    }

    var profileOps: [Op] {
        let venues = directory
        let capabilities = self.capabilities
        return [
            .user("venue.register", .write, VenueRegisterArgs.self) { c throws(ProtocolError) in
                .reply(["venue": try await venues.register(owner: c.user, fields: c.args.fields).json])
            },
            .user("venue.get", .read, VenueArgs.self) { c throws(ProtocolError) in
                let v = try await venues.venue(c.args.venue)
                return .reply(["venue": v.json, "checkedIn": .int(try await venues.checkinCount(c.args.venue))])
            },
            .user("venue.update", .write, VenueUpdateArgs.self) { c throws(ProtocolError) in
                .reply(["venue": try await venues.update(c.args.venue, by: c.user, args: c.args.args).json])
            }.homed(VenuesDomain.home),
            .user("venue.remove", .write, VenueArgs.self) { c throws(ProtocolError) in
                try await venues.remove(c.args.venue, by: c.user)
                return .reply(["removed": .string(c.args.venue)])
            }.homed(VenuesDomain.home),
            .user("venue.search", .read, SearchArgs.self) { c throws(ProtocolError) in
                .reply(["venues": .array(try await venues.search(c.args.q).map(\.json))])
            },
            .user("venue.nearby", .read, BoxArgs.self) { c throws(ProtocolError) in
                let b = c.args
                return .reply(["venues": .array(try await venues.nearby(minLat: b.minLat, minLon: b.minLon, maxLat: b.maxLat, maxLon: b.maxLon)
                    .map(\.json))])
            },
            .user("venue.owner.add", .write, OwnerArgs.self) { c throws(ProtocolError) in
                let exists = await capabilities.resolve(UserDirectory.self)?.exists(c.args.user) ?? false
                try await venues.addOwner(c.args.user, to: c.args.venue, by: c.user, userExists: exists)
                return .reply(["venue": .string(c.args.venue), "owner": .string(c.args.user)])
            },
            .user("venue.checkin", .write, VenueArgs.self) { c throws(ProtocolError) in
                .reply(["checkedIn": .int(try await venues.checkin(c.args.venue, user: c.user))])
            }.homed(VenuesDomain.home),
            .user("user.checkins", .read, UserArgument.self) { c throws(ProtocolError) in
                let user = c.args.user ?? c.user
                try capabilities.resolve(UserDirectory.self)?.requireVisible(.checkins, of: user, to: c.user)
                return .reply(["checkins": .array(try await venues.checkins(of: user))])
            },
        ]
    }
}
