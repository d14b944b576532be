import DomainSeam
import Foundation
import Logging
import Realtime
import RoomLog
import Routes
import Storage

/// What the hub needs to keep corridor rooms: the feed that delivers their pushes on this node,
/// and the corridors' definitions and names (`CorridorDirectory`).
public struct CorridorPublishing: Sendable {
    let feed: RoomFeed
    let directory: CorridorDirectory
    let logger: Logger
}

/// The live corridors: which are live, loading them, snapshots and retirement. Only the holder of
/// the routes' lease calls these (the core sends every `route:` snapshot and resume there).
extension IntelHub {
    /// Room `route:<id>` for a new subscriber: `{corridor, items}`, the items as `view` asks, in
    /// `language`, and the room's head at that point (its staged pushes included: the feed holds
    /// the answer until they are delivered). A private corridor is `not_found` to everyone but its
    /// owner.
    func snapshot(_ id: String, for user: String, view: CorridorView, language: String?) async throws(ProtocolError) -> RoomSnapshot {
        try current()
        try await load([id])
        guard let found = corridors.byID[id], found.owner.map({ $0.user == user }) ?? true else { throw .notFound("no corridor \(id)") }
        let now = Date().timeIntervalSince1970
        guard let at = writer.snapshot(of: RoutePush.room(id)) else { throw ProtocolError(.unavailable, "the routes are reloading; try again") }
        let items = items(in: found.corridor)
        corridors.touch(id, at: now)
        // The items and the head are taken together; the names may be looked up after.
        let names = await rooms?.directory.aliases(items.compactMap(\.user)) ?? [:]
        let list = view.list(items, to: found.corridor.to, aliases: names, language: language)
        return RoomSnapshot(head: at.head, data: ["corridor": found.json, "items": .array(list)], mark: at.mark)
    }

    /// A member resumed room `route:<id>` on some node: it is live here from now on (loaded in a
    /// new epoch if it was not, so the resume gives way to a snapshot: pushes it missed while it
    /// was not live were never made).
    func resumed(_ id: String) async throws(ProtocolError) {
        try current()
        try await load([id])
        guard corridors.byID[id] != nil else { throw .notFound("no corridor \(id)") }
        corridors.touch(id, at: Date().timeIntervalSince1970)
    }

    /// After a reload (this node took the lease, or a write failed): loads the corridors someone
    /// used within `window` seconds, on any node (their `last_used`), so their watchers hear of
    /// changes again. One refresh at a time: every caller waits for the one under way, so no
    /// change is decided before the corridors it concerns are live.
    func refresh(now: Double, window: Double) async {
        guard (try? current()) != nil else { return }
        if let running = refreshing {
            await running.value
            return
        }
        guard corridorsUnknown else { return }
        let task = Task { await self.refreshNow(now: now, window: window) }
        refreshing = task
        await task.value
        refreshing = nil
    }

    private func refreshNow(now: Double, window: Double) async {
        let generation = reloads
        do {
            let recent = try await store.read { db in try CorridorDirectory.used(since: now - window, db) }
            try await load(recent)
            // A reload meanwhile dropped them again: the next caller refreshes.
            if generation == reloads { corridorsUnknown = false }
        } catch {
            rooms?.logger.warning("routes: could not load the corridors in use", metadata: ["error": "\(error)"])
        }
    }

    /// Loads the corridors someone used within `window` seconds that are not live here, and
    /// retires live ones nobody used for that long (here or, by their `last_used`, on any node).
    func sweep(now: Double, window: Double) async {
        await refresh(now: now, window: window)
        let recent: [String]
        do {
            recent = try await store.read { db in try CorridorDirectory.used(since: now - window, db) }
        } catch {
            return
        }
        try? await load(recent)
        let used = Set(recent)
        for (id, c) in corridors.byID where !used.contains(id) && now - c.lastActivity > window && loading[id] == nil {
            drop(id)
        }
    }

    /// Drops the live private corridors of `user` (to `destination`, or all): their recording or
    /// account is gone.
    func dropPrivate(of user: String, destination: String? = nil) {
        for (id, c) in corridors.byID {
            guard let owner = c.owner, owner.user == user, destination.map({ $0 == owner.destination }) ?? true else { continue }
            drop(id)
        }
    }

    /// Corridor `id` is no longer live: its definition and its room leave memory.
    private func drop(_ id: String) {
        corridors.drop(id)
        writer.drop(RoutePush.room(id))
    }

    /// Makes corridors `ids` live, those stored and not live yet: their definitions are read and
    /// their rooms moved to new epochs in one write (their watchers' positions in an older epoch
    /// may have missed pushes never made while they were not live). Many callers of one corridor
    /// wait for one load.
    func load(_ ids: [String]) async throws(ProtocolError) {
        guard rooms != nil else { throw ProtocolError(.internal, "this hub keeps no corridor rooms") }
        var waits: [Task<Void, Never>] = [], fresh: [String] = []
        for id in Set(ids) where corridors.byID[id] == nil {
            if let running = loading[id] { waits.append(running) } else { fresh.append(id) }
        }
        if !fresh.isEmpty {
            let task = Task { await self.loadNow(fresh) }
            for id in fresh { loading[id] = task }
            waits.append(task)
        }
        for wait in waits { await wait.value }
        if ids.contains(where: { corridors.byID[$0] == nil && loading[$0] == nil && failedLoads.contains($0) }) {
            throw ProtocolError(.unavailable, "could not load the corridor; try again")
        }
    }

    private func loadNow(_ ids: [String]) async {
        defer { for id in ids { loading[id] = nil } }
        failedLoads.subtract(ids)
        let loaded: [(CorridorDefinition, RoomHead)]
        do {
            loaded = try await store.write { db in
                try CorridorDirectory.definitions(ids, db).map { d in (d, try RoomLogRows.renewEpoch(of: RoutePush.room(d.id), db)) }
            }
        } catch {
            failedLoads.formUnion(ids)
            rooms?.logger.warning("routes: could not load corridors", metadata: ["error": "\(error)"])
            return
        }
        let now = Date().timeIntervalSince1970
        for (d, head) in loaded where corridors.byID[d.id] == nil {
            corridors.adopt(LiveCorridor(id: d.id, corridor: d.corridor, owner: d.owner, lastActivity: now))
            writer.adopt(RoutePush.room(d.id), head: head)
        }
    }
}
