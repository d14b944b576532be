import DomainSeam
import Foundation
import Realtime
import RoomLog
import Routes
import Storage

/// The routes' ops (protocol.md, "Routes and intel"): the list, then one method per op. An op on
/// an item runs on the owner of the item's shard (homed by the shard its id names, or a post by
/// the shard of its point); `intel.query` reads the store on any node. The node ops run a
/// shard's part of a change that spans shards on that shard's owner (`ShardOp`).
extension RoutesDomain {
    public var ops: [Op] {
        [
            .user("route.subscribe", .read, RouteSubscribeArgs.self, subscribe),
            .user("route.track", .write, TrackArgs.self, track),
            .user("intel.post", .write, IntelPostArgs.self, post).homed { [shards = hub.configuration.shards] a in
                (try? Args.point(a, "")).map { CorridorHost.logRoom(shards.shard(of: $0)) }
            },
            .user("intel.get", .read, ItemArgs.self, get).homed(Self.itemHome),
            .user("intel.comment", .write, CommentArgs.self, comment).homed(Self.itemHome),
            .user("intel.link", .write, LinkArgs.self, link).homed(Self.itemHome),
            .user("intel.query", .read, QueryArgs.self, query),
            .user("destinations.list", .read, NoArguments.self, destinations),
            .user("destination.forget", .write, DestinationArgs.self, forget),
            .user("user.karma", .read, UserArgument.self, karma),
            .user("intel.like", .write, ItemArgs.self, like).homed(Self.itemHome),
            .node(ShardOp.post, ShardPostArgs.self) { [hub] (a: ShardPostArgs) throws(ProtocolError) -> OpOutcome in
                .reply(ShardOp.results(try await hub.shard(a.shard).post(a.drafts, now: a.now)))
            }.homed { a in (try? a.string("shard", maxLength: 64)).map(CorridorHost.logRoom) },
            .node(ShardOp.apply, ShardApplyArgs.self) { [hub] (a: ShardApplyArgs) throws(ProtocolError) -> OpOutcome in
                let (changes, unchanged) = try await hub.apply(a.items, scope: a.scope, ending: a.ending, now: a.now)
                return .reply(ShardOp.outcome(NamedIntelFeed.Outcome(changes, unchanged: unchanged)))
            }.homed { _ in Self.namedHome },
            .node(ShardOp.linkHalf, ShardLinkArgs.self) { [hub] (a: ShardLinkArgs) throws(ProtocolError) -> OpOutcome in
                let half = try await hub.linkHalf(a.item, to: a.to, side: a.side, by: a.by, now: a.now)
                return .reply(["item": half.item.json(aliases: half.aliases), "made": .bool(half.made)])
            }.homed(Self.itemHome),
        ]
    }

    /// The log (and lease) of the shard the op's `item` names; nil for an id no item can have
    /// (the op runs where it arrived and finds nothing).
    static func itemHome(_ a: Args) -> String? {
        (try? a.string("item", maxLength: 64)).flatMap(IntelShards.shard(ofID:)).map(CorridorHost.logRoom)
    }

    /// The language the caller reads, for the items in a reply.
    private func language(_ user: String) -> String? { capabilities.resolve(UserDirectory.self)?.language(of: user) }

    /// `route.subscribe`: the corridor along the route (UC1: without `via`, along the caller's
    /// recorded path to that destination when one starts near `from`; that corridor is the
    /// caller's alone), remembered as a destination, then joined: the reply is its snapshot.
    func subscribe(_ c: UserCall<RouteSubscribeArgs>) async throws(ProtocolError) -> OpOutcome {
        let a = c.args, user = c.user
        let width = a.widthMeters ?? directory.configuration.defaultWidthMeters
        var corridor: Corridor
        do throws(Corridor.Refusal) {
            corridor = try Corridor(from: a.from, via: a.via, to: a.to, widthMeters: width, limits: directory.configuration.limits)
        } catch {
            throw .badRequest("field \(error.field): \(error.message)")
        }
        var owner: CorridorOwner?
        let destination = Destinations.id(of: a.to)
        if a.via.isEmpty {
            let recorded: [GeoPoint]
            do {
                recorded = try await store.read { db in try RecordedPaths.path(user: user, destination: destination, db) }
            } catch {
                throw ProtocolError(.unavailable, "could not read the recorded path; try again")
            }
            if let along = RecordedPath.corridor(from: a.from, to: a.to, recorded: recorded, widthMeters: width, rules: following,
                                                 limits: directory.configuration.limits) {
                corridor = along
                owner = CorridorOwner(user: user, destination: destination)
            }
        }
        let room = RoomName(prefix: RoutePush.roomPrefix, id: CorridorDirectory.id(of: corridor, owner: owner))
        guard let rooms = capabilities.resolve(LoggedRooms.self) else { throw ProtocolError(.internal, "no room log") }
        // The subscription limit is checked before a corridor is made for it (`join` counts it once).
        try await c.session.addSubscription(room.name)
        do {
            _ = try await store.write { db in
                try Destinations.remember(user: user, to: a.to, label: a.label, filter: a.filter, now: Date().timeIntervalSince1970, db)
            }
        } catch {
            await c.session.removeSubscription(room.name)
            throw ProtocolError(.unavailable, "could not save the destination; try again")
        }
        do throws(ProtocolError) { try await directory.save(corridor, owner: owner) } catch {
            await c.session.removeSubscription(room.name)
            throw error
        }
        // The corridor's owner node takes the snapshot with the caller's filter and order.
        try await rooms.join(room, user: user, session: c.session, reply: c.reply, view: a.view.json) { s in
            ["room": .string(room.name), "seq": .int(Int(s.head.seq)), "epoch": .string(s.head.epoch),
             "corridor": s.data["corridor"] ?? .null, "items": s.data["items"] ?? .array([])]
        }
        return .sent // the corridor answered, ahead of any push
    }

    /// `route.track`: points of the caller's journey to a destination, appended to its recording.
    func track(_ c: UserCall<TrackArgs>) async throws(ProtocolError) -> OpOutcome {
        let user = c.user, a = c.args, limits = recording
        let now = Date().timeIntervalSince1970
        if let late = a.fixes.firstIndex(where: { $0.at > now + 300 || $0.at < now - 86_400 }) {
            throw .badRequest("field points[\(late)].at must be a time (seconds since 1970) within the last day and not in the future")
        }
        let recorded: Int
        do {
            recorded = try await store.write { db in
                guard try Destinations.exists(user: user, id: a.destination, db) else {
                    throw ProtocolError.notFound("no destination \(a.destination): route.subscribe to it first")
                }
                return try RecordedPaths.append(user: user, destination: a.destination, fixes: a.fixes, limits: limits, db)
            }
        } catch let refusal as ProtocolError {
            throw refusal
        } catch {
            throw ProtocolError(.unavailable, "could not save the points; try again")
        }
        return .reply(["destination": .string(a.destination), "recorded": .int(recorded)])
    }

    /// `intel.post`: the item, pushed with it to every live corridor containing it, once each
    /// (the reply shows it as the pushes do: looked up and encoded once).
    func post(_ c: UserCall<IntelPostArgs>) async throws(ProtocolError) -> OpOutcome {
        .reply(["item": try await hub.post(c.args.draft, by: .user(c.user), now: Date().timeIntervalSince1970).json])
    }

    /// `intel.get`: a live item with its newest comments and the items it links to.
    func get(_ c: UserCall<ItemArgs>) async throws(ProtocolError) -> OpOutcome {
        guard let item = try await hub.item(c.args.item) else { throw .notFound("no live item \(c.args.item)") }
        let (comments, truncated) = try await hub.comments(of: item.id, limit: commentsShown)
        // Linked items may be other shards', kept on other nodes: read as the store has them.
        let linked = try await hub.stored(item.links)
        let names = await directory.aliases(([item] + linked).compactMap(\.user) + comments.compactMap(\.user))
        let commentsJSON = comments.map { comment -> JSON in
            ["by": comment.user.map { author($0, names) } ?? ["alias": "deleted user"], "text": .string(comment.text), "at": .double(comment.at)]
        }
        let reader = language(c.user)
        return .reply(["item": item.json(aliases: names, language: reader), "comments": .array(commentsJSON),
                       "commentsTruncated": .bool(truncated), "linked": .array(linked.map { $0.json(aliases: names, language: reader) })])
    }

    /// `intel.comment`: a comment on a live item.
    func comment(_ c: UserCall<CommentArgs>) async throws(ProtocolError) -> OpOutcome {
        let now = Date().timeIntervalSince1970
        let shown = try await hub.comment(c.args.item, by: c.user, text: c.args.text, now: now)
        return .reply(["item": shown.item.json(aliases: shown.aliases, language: language(c.user)),
                       "comment": ["by": author(c.user, shown.aliases), "text": .string(c.args.text), "at": .double(now)]])
    }

    /// `intel.link`: two live items linked, both returned.
    func link(_ c: UserCall<LinkArgs>) async throws(ProtocolError) -> OpOutcome {
        let (a, b, names) = try await hub.link(c.args.item, to: c.args.to, by: c.user, now: Date().timeIntervalSince1970)
        let reader = language(c.user)
        return .reply(["item": a.json(aliases: names, language: reader), "to": b.json(aliases: names, language: reader)])
    }

    /// `intel.query`: live items in a box, newest first, read from the store on this node (the
    /// box is bounded by `routes.maxQueryDegrees`; the read stops at the limit).
    func query(_ c: UserCall<QueryArgs>) async throws(ProtocolError) -> OpOutcome {
        let q = c.args
        let lonSpan = q.minLon <= q.maxLon ? q.maxLon - q.minLon : 360 - (q.minLon - q.maxLon)
        guard q.maxLat - q.minLat <= maxQueryDegrees, lonSpan <= maxQueryDegrees else {
            throw .badRequest("the box may span at most \(maxQueryDegrees)° of latitude and of longitude")
        }
        let (items, truncated) = try await hub.query(minLat: q.minLat, minLon: q.minLon, maxLat: q.maxLat, maxLon: q.maxLon,
                                                     since: q.since, until: q.until, filter: q.filter)
        let names = await directory.aliases(items.compactMap(\.user))
        let reader = language(c.user)
        return .reply(["items": .array(items.map { $0.json(aliases: names, language: reader) }), "truncated": .bool(truncated)])
    }

    /// `intel.like`: a like, which also extends the item's life.
    func like(_ c: UserCall<ItemArgs>) async throws(ProtocolError) -> OpOutcome {
        let shown = try await hub.like(c.args.item, by: c.user, now: Date().timeIntervalSince1970)
        return .reply(["item": shown.item.json(aliases: shown.aliases, language: language(c.user))])
    }

    /// `destinations.list`: the caller's destinations, most recent first.
    func destinations(_ c: UserCall<NoArguments>) async throws(ProtocolError) -> OpOutcome {
        let user = c.user
        do {
            return .reply(["destinations": .array(try await store.read { db in try Destinations.list(user: user, limit: 100, db) })])
        } catch {
            throw ProtocolError(.unavailable, "could not read destinations")
        }
    }

    /// `destination.forget`: a destination, its recorded path and the private corridor along it.
    func forget(_ c: UserCall<DestinationArgs>) async throws(ProtocolError) -> OpOutcome {
        let user = c.user, id = c.args.destination
        let forgotten: Bool
        do {
            forgotten = try await store.write { db in
                try RecordedPaths.forget(user: user, destination: id, db)
                return try Destinations.forget(user: user, id: id, db)
            }
        } catch {
            throw ProtocolError(.unavailable, "could not forget the destination; try again")
        }
        host.dropPrivate(of: user, destination: id)
        capabilities.resolve(ClusterEvents.self)?.publish(PrivateCorridorsGone(user: user, destination: id))
        guard forgotten else { throw .notFound("no destination \(id)") }
        return .reply(["forgotten": .string(id)])
    }

    /// `user.karma`: a user's karma and level (the caller's without `user`).
    func karma(_ c: UserCall<UserArgument>) async throws(ProtocolError) -> OpOutcome {
        let user = c.args.user ?? c.user
        if user != c.user, await capabilities.resolve(UserDirectory.self)?.exists(user) == false {
            throw .notFound("no user \(user)")
        }
        let points = try await hub.karma(of: user)
        return .reply(["user": .string(user), "karma": .int(points), "level": .string(Karma.level(for: points))])
    }
}
