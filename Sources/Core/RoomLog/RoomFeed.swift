import Foundation
import Logging
import Metrics
import Realtime
import Synchronization
import WebSocket

/// Where this node's subscribers get their rooms' pushes: the room log's entries, handed to each
/// room's members here in `seq` order, from whichever source brings them first — the commit of
/// the change they report (when this node owns the room), a notification from the node that does,
/// or a catch-up read of the log. A push arriving twice is delivered once; a push arriving after a
/// gap waits while the gap is read from the log.
///
/// Only rooms with members (or members about to join) on this node are tracked; pushes of others
/// are ignored. Each tracked room keeps a bounded history (`Room.HistoryLimits`) for recovery;
/// older positions are read from the log.
public final class RoomFeed: Sendable {
    /// Limits of the feed.
    public struct Configuration: Sendable {
        /// Each tracked room's recent pushes kept in memory.
        public var history: Room.HistoryLimits
        /// Most pushes a recovery reads from the log (beyond it, a snapshot is cheaper).
        public var maxRecovered: Int
        /// Pushes read per catch-up query.
        public var catchUpBatch: Int
        /// How long a room behind the log waits without moving before members waiting on a
        /// snapshot the log never reached are closed (to subscribe again).
        public var giveUpSeconds: Double = 10
        public init(history: Room.HistoryLimits = .init(), maxRecovered: Int = 1000, catchUpBatch: Int = 500) {
            self.history = history
            self.maxRecovered = maxRecovered
            self.catchUpBatch = catchUpBatch
        }
    }

    /// A member whose snapshot is ahead of what this node has delivered: it joins once the room
    /// gets there (its pushes up to `seq` are in its snapshot).
    private struct Waiting {
        var member: ConnectionID
        var seq: UInt64
        var language: String?
        /// The subscribe's answer, held until the room gets to `seq`: a snapshot may hold changes
        /// of its owner that are not durable yet, and must not be seen before they are.
        var reply: (@Sendable () -> Void)?
        /// The `PushMark` the push at `seq` must have for the held answer to be true.
        var mark: UInt64?
    }

    /// One room watched from this node.
    private struct Tracked {
        var room: Room
        var waiting: [Waiting] = []
        /// Pushes that came after a gap, by seq, until a catch-up fills it.
        var ahead: [UInt64: LoggedPush] = [:]
        /// A catch-up read is under way (one per room at a time).
        var catchingUp = false
        /// The last seq the log is known to hold (a notification said so), and in which epoch.
        var known: (seq: UInt64, epoch: String)?
        /// Whoever on this node reads the room's log rather than a connection (`follow`).
        var follower: LogFollower?
        /// The epoch of the room's load, when it is made on this node and has no log (`host`,
        /// `LocalRoom`): tracked while it is loaded, its pushes come only from its owner here (a
        /// push of an earlier load is not one), and nothing is read for it.
        var hosted: String?
        var isEmpty: Bool { room.memberCount == 0 && waiting.isEmpty && follower == nil && hosted == nil }
        /// Members or members about to join.
        var watched: Bool { room.memberCount > 0 || !waiting.isEmpty }
        /// Whether the log holds pushes this node still needs.
        var behind: Bool {
            !ahead.isEmpty || waiting.contains { $0.seq > room.seq }
                || known.map { $0.epoch != room.epoch || $0.seq > room.seq } ?? false
        }
        /// The epoch to read the log in (a newer one, once a notification told of it).
        var readEpoch: String { known?.epoch ?? room.epoch }
    }

    private let rooms = Mutex<[String: Tracked]>([:])
    private let sink: any PushSink
    /// Where room logs are read back: the store's room log, or a domain's own for its prefix.
    private let source: PrefixedRoomLog
    private let configuration: Configuration
    private let logger: Logger
    /// Held in a class: a closure kept directly in a `Mutex` is re-wrapped in a reabstraction
    /// thunk by every `withLock { $0 }` (its value goes back through `inout`), so the chain of
    /// thunks, and each call through it, grew with every push.
    private let readerLanguage = Mutex(LanguageLookup { _ in nil })
    /// Catch-up reads done and pushes they brought (also `hubbub_room_catchup_reads_total`,
    /// `hubbub_room_catchup_pushes_total`).
    public let catchUps = Atomic<Int>(0)
    public let caughtUp = Atomic<Int>(0)
    private let catchUpReads = Counter(label: "hubbub_room_catchup_reads_total")
    private let catchUpPushes = Counter(label: "hubbub_room_catchup_pushes_total")

    public init(sink: any PushSink, source: any RoomLogSource, configuration: Configuration = .init(),
                logger: Logger = Logger(label: "hubbub.rooms")) {
        self.sink = sink
        self.source = PrefixedRoomLog(source)
        self.configuration = configuration
        self.logger = logger
    }

    /// Rooms of `prefix` keep their log in `source` (a domain that keeps a room's pushes longer than
    /// the room log's retention, in its own table: `user:` streams).
    public func use(_ source: any RoomLogSource, for prefix: String) { self.source.use(source, for: prefix) }

    /// How a member's language is found (for localized pushes); set once the core knows it.
    public func setReaderLanguage(_ language: @escaping @Sendable (ConnectionID) -> String?) {
        readerLanguage.withLock { $0 = LanguageLookup(language) }
    }

    // MARK: Delivering

    /// Hands `pushes` (committed; any rooms, each room's in seq order) to this node's members.
    public func deliver(_ pushes: [LoggedPush]) {
        let languageOf = readerLanguage.withLock { $0 }.lookup
        var gaps: [String] = []
        rooms.withLock { rooms in
            for push in pushes {
                let gap = rooms.inPlace(push.room) { t -> Bool in
                    guard apply(push, to: &t, languageOf: languageOf) && !t.catchingUp else { return false }
                    t.catchingUp = true
                    return true
                }
                if gap == true { gaps.append(push.room) }
            }
        }
        for room in gaps { catchUp(room) }
    }

    /// Whether `room` is tracked here (it has members, members about to join, a follower, or is made here).
    public func watches(_ room: String) -> Bool { rooms.withLock { $0[room] != nil } }

    /// Whether `room` has members here, or members about to join.
    public func isWatched(_ room: String) -> Bool { rooms.withLock { $0[room]?.watched ?? false } }

    /// What another node committed (a notification): its pushes are delivered if it carries them;
    /// otherwise a room watched here that is behind them reads them from the log. Returns whether
    /// the room is watched here (every node hears every room's notifications; the others are
    /// dropped before their pushes are made).
    @discardableResult
    public func notice(_ note: RoomNotification) -> Bool {
        // A room made here has no log: whatever claims to be its pushes is not.
        guard let tracked = rooms.withLock({ $0[note.room].map { $0.hosted == nil } }), tracked else { return false }
        if !note.payloads.isEmpty {
            deliver(note.pushes)
            return true
        }
        let start = rooms.withLock { rooms -> Bool in
            guard var t = rooms[note.room], t.hosted == nil else { return false }
            if note.epoch != t.room.epoch || note.last > t.room.seq { t.known = (note.last, note.epoch) }
            let start = t.behind && !t.catchingUp
            if start { t.catchingUp = true }
            rooms[note.room] = t
            return start
        }
        if start { catchUp(note.room) }
        return true
    }

    /// Applies one push to a tracked room; returns whether the room is now behind the log.
    private func apply(_ push: LoggedPush, to t: inout Tracked, languageOf: (ConnectionID) -> String?) -> Bool {
        let now = Date().timeIntervalSince1970
        if let load = t.hosted, push.epoch != load { return false }
        if push.epoch != t.room.epoch {
            // The log began a new epoch (its writer reloaded after a failed change). Members get
            // its pushes, whose epoch tells them to take a snapshot.
            guard push.seq > t.room.seq else { return t.behind }
            restart(&t, epoch: push.epoch, seq: push.seq - 1)
        }
        if let k = t.known, k.epoch == t.room.epoch, k.seq <= push.seq { t.known = nil }
        if push.seq > t.room.seq + 1 {
            t.ahead[push.seq] = push
            return true
        }
        if push.seq == t.room.seq + 1 {
            checkMarks(push, &t)
            t.room.publish(prepared: push.message, translated: push.translated, seq: push.seq, now: now, languageOf: languageOf, sink: sink)
            t.follower?.receive(push)
            while let next = t.ahead.removeValue(forKey: t.room.seq + 1) {
                checkMarks(next, &t)
                t.room.publish(prepared: next.message, translated: next.translated, seq: next.seq, now: now, languageOf: languageOf, sink: sink)
                t.follower?.receive(next)
            }
            admitWaiting(&t, now: now)
        }
        return t.behind
    }

    /// The room goes on in a new epoch after `seq`: members get its pushes, whose epoch tells them
    /// to take a snapshot; those waiting for a snapshot's seq in the old epoch will never get there.
    private func restart(_ t: inout Tracked, epoch: String, seq: UInt64) {
        t.room.restart(epoch: epoch, seq: seq)
        t.ahead = [:]
        t.known = nil
        for w in t.waiting where w.reply != nil {
            sink.close(w.member, code: .goingAway, reason: "resubscribe to \(t.room.name)")
        }
        t.waiting.removeAll { $0.reply != nil }
    }

    /// Members holding an answer whose snapshot expected another push at this seq (its owner lost
    /// that one, and the seq went to the next writer's): closed, to subscribe again.
    private func checkMarks(_ push: LoggedPush, _ t: inout Tracked) {
        guard t.waiting.contains(where: { $0.seq == push.seq && $0.mark != nil }) else { return }
        let mark = PushMark.of(push.message.payload)
        let stale = t.waiting.filter { $0.seq == push.seq && $0.reply != nil && $0.mark != nil && $0.mark != mark }
        guard !stale.isEmpty else { return }
        t.waiting.removeAll { w in stale.contains { $0.member == w.member } }
        logger.notice("a snapshot's last push was lost; closing its subscribers", metadata: ["room": "\(t.room.name)", "members": "\(stale.count)"])
        for w in stale { sink.close(w.member, code: .goingAway, reason: "resubscribe to \(t.room.name)") }
    }

    /// Members whose snapshot the room has now reached join it (with what came after their snapshot).
    private func admitWaiting(_ t: inout Tracked, now: Double) {
        guard !t.waiting.isEmpty else { return }
        var still: [Waiting] = []
        for w in t.waiting {
            guard w.seq <= t.room.seq else { still.append(w); continue }
            w.reply?()
            join(w.member, at: w.seq, language: w.language, &t, now: now)
        }
        t.waiting = still
    }

    /// Joins a member whose view stands at `seq` of the room's epoch and sends what followed.
    private func join(_ member: ConnectionID, at seq: UInt64, language: String?, _ t: inout Tracked, now: Double) {
        switch t.room.join(member, since: Since(seq: seq, epoch: t.room.epoch), now: now, language: language) {
        case .recovered(let missed):
            for m in missed { sink.deliver(m, to: member) }
        case .snapshotNeeded:
            // Pushes after its view already left the history (far smaller than the limits would
            // allow): it must resubscribe rather than miss them.
            t.room.leave(member)
            logger.warning("a member's pushes left the history before it joined; closing it", metadata: ["room": "\(t.room.name)"])
            sink.close(member, code: .goingAway, reason: "resubscribe to \(t.room.name)")
        }
    }

    // MARK: Subscribing

    /// Subscribes `member` to `room` from a snapshot taken at `head`: `reply` (the subscribe's
    /// answer, with that snapshot) goes first, then every push after `head.seq`, in order. The
    /// snapshot may be ahead of what this node delivered: it may hold its owner's changes not yet
    /// durable, so the answer waits until the room gets there (or, if it never does, the member is
    /// closed to subscribe again). Or it is behind: the member gets what followed from the history.
    public func subscribe(_ member: ConnectionID, room name: String, at head: RoomHead, mark: UInt64? = nil, language: String? = nil,
                          reply: @escaping @Sendable () -> Void) {
        let now = Date().timeIntervalSince1970
        let language = language ?? readerLanguage.withLock { $0 }.lookup(member)
        let start = rooms.withLock { rooms -> Bool in
            var t = rooms[name] ?? Tracked(room: Room(name: name, epoch: head.epoch, seq: head.seq, limits: configuration.history))
            if t.room.epoch != head.epoch {
                // The snapshot is newer than this node's view (or this node had none).
                t.room.restart(epoch: head.epoch, seq: head.seq)
                t.ahead = [:]
            }
            if t.room.seq >= head.seq {
                reply()
                join(member, at: head.seq, language: language, &t, now: now)
            } else {
                t.waiting.append(Waiting(member: member, seq: head.seq, language: language, reply: reply, mark: mark))
            }
            let start = t.behind && !t.catchingUp
            if start { t.catchingUp = true }
            rooms[name] = t
            return start
        }
        if start { catchUp(name) }
    }

    /// Subscribes `member` to `room` where it says it stood (`since`), if every push after it can
    /// still be had (from this node's history or the log): then `reply(head)` goes first and those
    /// pushes follow, and this returns true. Returns false, having done nothing, when the epoch
    /// changed or the pushes are gone (the caller then sends a snapshot). `readsLog` false: the room
    /// has no log (`RoomPlacement.local`), only this node's history counts.
    public func resume(_ member: ConnectionID, room name: String, since: Since, language: String? = nil, readsLog: Bool = true,
                       reply: (RoomHead) -> Void) async -> Bool {
        let now = Date().timeIntervalSince1970
        let language = language ?? readerLanguage.withLock { $0 }.lookup(member)
        enum Local { case done, catchUp, refused, readLog }
        let local: Local = rooms.withLock { rooms in
            guard var t = rooms[name] else { return .readLog }
            guard t.room.epoch == since.epoch else { return .refused }
            if since.seq > t.room.seq {
                guard readsLog else { return .refused }
                // The client saw more than this node delivered yet (it came from another node):
                // it waits while the room catches up from the log.
                reply(RoomHead(seq: since.seq, epoch: since.epoch))
                t.waiting.append(Waiting(member: member, seq: since.seq, language: language))
                let start = !t.catchingUp
                t.catchingUp = true
                rooms[name] = t
                return start ? .catchUp : .done
            }
            switch t.room.join(member, since: since, now: now, language: language) {
            case .recovered(let missed):
                reply(RoomHead(seq: t.room.seq, epoch: t.room.epoch))
                for m in missed { sink.deliver(m, to: member) }
                rooms[name] = t
                return .done
            case .snapshotNeeded:
                t.room.leave(member)
                rooms[name] = t
                return .readLog
            }
        }
        switch local {
        case .done: return true
        case .catchUp:
            catchUp(name)
            return true
        case .refused: return false
        case .readLog: guard readsLog else { return false }
        }
        // Older than this node's history: the log has it, if retention kept it.
        let read: [LoggedPush]
        do {
            guard let head = try await source.heads(of: [name])[name], head.epoch == since.epoch, since.seq <= head.seq else { return false }
            guard head.seq - since.seq <= UInt64(configuration.maxRecovered) else { return false } // a snapshot is cheaper
            read = head.seq == since.seq ? [] : try await source.read(name, epoch: head.epoch, after: since.seq, limit: configuration.maxRecovered)
            guard head.seq == since.seq || read.first?.seq == since.seq + 1 else { return false } // dropped by retention
            guard read.count < configuration.maxRecovered || read.last?.seq == head.seq else { return false } // a snapshot is cheaper
            counted(read.count)
        } catch {
            logger.warning("could not read the room log for a recovery", metadata: ["room": "\(name)", "error": "\(error)"])
            return false
        }
        let languageOf = readerLanguage.withLock { $0 }.lookup
        let (recovered, start, untracked): (Bool, Bool, Bool) = rooms.withLock { rooms in
            let untracked = rooms[name] == nil
            var t = rooms[name] ?? Tracked(room: Room(name: name, epoch: since.epoch, seq: since.seq, limits: configuration.history))
            guard t.room.epoch == since.epoch else { return (false, false, false) }
            for push in read where push.seq > t.room.seq { _ = apply(push, to: &t, languageOf: languageOf) }
            // What the log gave that this room had already moved past goes to the member directly;
            // what came after must still be in the history (another subscriber may have moved the
            // room on meanwhile), or the member takes a snapshot instead.
            let upTo = read.last?.seq ?? since.seq
            guard t.room.seq <= upTo || t.room.covers(after: upTo) else {
                if !t.isEmpty { rooms[name] = t }
                return (false, false, false)
            }
            reply(RoomHead(seq: max(t.room.seq, upTo), epoch: t.room.epoch))
            for push in read { sink.deliver(push.message(for: language), to: member) }
            if t.room.seq >= upTo {
                join(member, at: upTo, language: language, &t, now: now)
            } else {
                t.waiting.append(Waiting(member: member, seq: upTo, language: language))
            }
            let start = t.behind && !t.catchingUp
            if start { t.catchingUp = true }
            rooms[name] = t
            return (true, start, untracked)
        }
        if start {
            catchUp(name)
        } else if untracked {
            // Pushes committed between the log read above and now were delivered while nobody
            // here tracked the room, so they were dropped: the head is read again, and a room
            // behind it catches up (a quiet room would otherwise leave the member behind until its
            // next push, or forever: a corridor's replay, staged just before its watcher resumed).
            await checkHeads([name])
        }
        return recovered
    }

    /// Removes `member` from `room` here; a room nobody here watches is no longer tracked.
    public func leave(_ member: ConnectionID, room name: String) {
        rooms.withLock { rooms in
            guard var t = rooms[name] else { return }
            t.room.leave(member)
            t.waiting.removeAll { $0.member == member }
            rooms[name] = t.isEmpty ? nil : t
        }
    }

    // MARK: Hosting

    /// Tracks `room`, made on this node (`LocalRoom`), from now until `unhost`, whether or not
    /// anyone watches it, so a member subscribing from a snapshot finds every push after it here.
    /// The room starts `epoch`; returns its head: `seq` 0, or, when the feed still tracks the room
    /// (members of an earlier load), its `seq` going on, so those members get the new epoch's
    /// pushes and take a snapshot (the client recipe).
    public func host(_ room: String, epoch: String) -> RoomHead {
        rooms.withLock { rooms in
            if let head = rooms.inPlace(room, { t -> RoomHead in
                restart(&t, epoch: epoch, seq: t.room.seq)
                t.hosted = epoch
                return RoomHead(seq: t.room.seq, epoch: epoch)
            }) {
                return head
            }
            var t = Tracked(room: Room(name: room, epoch: epoch, seq: 0, limits: configuration.history))
            t.hosted = epoch
            rooms[room] = t
            return RoomHead(seq: 0, epoch: epoch)
        }
    }

    /// `room`'s load in `epoch` is no longer made here: tracked only while members remain. A
    /// later load (another epoch) is left as it is.
    public func unhost(_ room: String, epoch: String) {
        rooms.withLock { rooms in
            guard var t = rooms[room], t.hosted == epoch else { return }
            t.hosted = nil
            rooms[room] = t.isEmpty ? nil : t
        }
    }

    // MARK: Following

    /// Hands `follower` every push of `room` after `head` (read by the follower with its own state),
    /// in `seq` order, each once, from whichever source brings it first, as members get them: the
    /// feed reads gaps from the log. A push in a new epoch is handed over as it comes (the follower
    /// sees the epoch change). One follower per room: a new one takes the place of the last (whose
    /// `unfollow` then does nothing); false if connections watch the room here. `receive` runs under
    /// the feed's lock: it must only hand the push on.
    public func follow(_ room: String, at head: RoomHead, _ follower: LogFollower) -> Bool {
        let taken = rooms.withLock { rooms -> Bool in
            if let t = rooms[room], t.watched || t.hosted != nil { return false }
            var t = Tracked(room: Room(name: room, epoch: head.epoch, seq: head.seq, limits: configuration.history))
            t.follower = follower
            rooms[room] = t
            return true
        }
        // Pushes committed between the follower's read and now came to nobody: the log has them.
        if taken { Task { await checkHeads([room]) } }
        return taken
    }

    /// `follower` no longer reads `room`.
    public func unfollow(_ room: String, _ follower: LogFollower) {
        rooms.withLock { rooms in
            guard var t = rooms[room], t.follower === follower else { return }
            t.follower = nil
            rooms[room] = t.isEmpty ? nil : t
        }
    }

    // MARK: Catching up

    /// Reads what `room` misses from the log and delivers it, until it is level with what the
    /// log holds. While the log does not have it yet (a change of the owner's still committing,
    /// slowly under load), it asks again, less and less often, and gives up only after
    /// `Configuration.giveUpSeconds` in which the room did not move at all.
    private func catchUp(_ name: String) {
        Task {
            var still = 0.0, pause = 0.025
            var last: UInt64?
            while true {
                // Stop once level (or given up): checked under the lock that clears `catchingUp`,
                // so a gap opened meanwhile is not left waiting.
                let next = rooms.withLock { rooms -> (epoch: String, seq: UInt64)? in
                    guard var t = rooms[name] else { return nil }
                    guard t.behind, still < configuration.giveUpSeconds else {
                        t.catchingUp = false
                        if t.behind { giveUp(&t) }
                        rooms[name] = t.isEmpty ? nil : t
                        return nil
                    }
                    return (t.readEpoch, t.room.seq)
                }
                guard let (epoch, seq) = next else { return }
                if seq != last {
                    // The room moved (deliveries or the last read): wait afresh.
                    last = seq
                    still = 0
                    pause = 0.025
                }
                do {
                    let read = try await source.read(name, epoch: epoch, after: seq, limit: configuration.catchUpBatch)
                    counted(read.count)
                    if !read.isEmpty {
                        deliverCaughtUp(name, read)
                        continue
                    }
                } catch {
                    logger.warning("could not read the room log to catch up", metadata: ["room": "\(name)", "error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(pause))
                still += pause
                pause = min(pause * 2, 0.4)
            }
        }
    }

    private func counted(_ pushes: Int) {
        catchUps.add(1, ordering: .relaxed)
        caughtUp.add(pushes, ordering: .relaxed)
        catchUpReads.increment()
        catchUpPushes.increment(by: pushes)
    }

    /// The log never got to where waiting members stand (their snapshot held changes of an owner
    /// that died before they were durable): they are closed, to subscribe again.
    private func giveUp(_ t: inout Tracked) {
        let stuck = t.waiting.filter { $0.seq > t.room.seq }
        guard !stuck.isEmpty else { return }
        t.waiting.removeAll { $0.seq > t.room.seq }
        logger.warning("the room log never reached some subscribers' snapshots; closing them", metadata: ["room": "\(t.room.name)", "members": "\(stuck.count)"])
        for w in stuck { sink.close(w.member, code: .goingAway, reason: "resubscribe to \(t.room.name)") }
    }

    private func deliverCaughtUp(_ name: String, _ pushes: [LoggedPush]) {
        let languageOf = readerLanguage.withLock { $0 }.lookup
        rooms.withLock { rooms in
            _ = rooms.inPlace(name) { t in for push in pushes { _ = apply(push, to: &t, languageOf: languageOf) } }
        }
    }

    /// Every tracked room checked against the log's heads and caught up where behind (after this
    /// node may have missed notifications: its link to the database was down). Returns how many
    /// rooms were behind.
    @discardableResult
    public func catchUpAll() async -> Int {
        await checkHeads(nil)
    }

    /// Rooms `names` (nil: every tracked room) checked against the log's heads, and caught up where
    /// behind; how many were.
    @discardableResult
    private func checkHeads(_ names: [String]?) async -> Int {
        let current = rooms.withLock { rooms in
            names.map { names in Dictionary(uniqueKeysWithValues: names.compactMap { n in rooms[n].flatMap { $0.hosted != nil ? nil : (n, ($0.room.epoch, $0.room.seq)) } }) }
                ?? rooms.filter { $0.value.hosted == nil }.mapValues { ($0.room.epoch, $0.room.seq) }
        }
        guard !current.isEmpty else { return 0 }
        let heads: [String: RoomHead]
        do { heads = try await source.heads(of: Array(current.keys)) } catch {
            logger.warning("could not read the room heads to catch up", metadata: ["error": "\(error)"])
            return 0
        }
        var behind = 0
        for (name, (epoch, seq)) in current {
            guard let head = heads[name], head.epoch != epoch || head.seq > seq else { continue }
            behind += 1
            notice(RoomNotification(room: name, epoch: head.epoch, first: head.seq, last: head.seq, at: 0, payloads: []))
        }
        return behind
    }

    // MARK: Housekeeping

    /// Trims every tracked room's history (rooms that went quiet give it back).
    public func trim(now: Double) {
        rooms.withLock { rooms in
            for name in rooms.keys { rooms[name]!.room.trimHistory(now: now) }
        }
    }

    /// Pushes a tracked room keeps for recovery and their bytes (tests and metrics).
    public func historySize(of name: String) -> (count: Int, bytes: Int) {
        rooms.withLock { rooms in rooms[name].map { ($0.room.historyCount, $0.room.historyBytes) } ?? (0, 0) }
    }

    /// The ids of the rooms of `prefix` watched here (members or waiting subscribers): a corridor
    /// is kept loaded on a node while it is watched there.
    public func watched(prefix: String) -> [String] {
        let start = prefix + ":"
        return rooms.withLock { rooms in
            rooms.compactMap { name, t in name.hasPrefix(start) && t.watched ? String(name.dropFirst(start.count)) : nil }
        }
    }

    /// Rooms tracked here and their members (metrics, tests).
    public var size: (rooms: Int, members: Int) {
        rooms.withLock { rooms in (rooms.count, rooms.values.reduce(0) { $0 + $1.room.memberCount }) }
    }
}

extension LoggedPush {
    /// The version a reader of `language` gets.
    func message(for language: String?) -> OutboundMessage {
        guard !translated.isEmpty, let language, let tag = LanguageTag.match(language, in: translated.keys) else { return message }
        return translated[tag] ?? message
    }
}

/// Something on this node that reads a room's log as it grows, not a connection (a node's copy of
/// an intel shard): `RoomFeed.follow`.
public final class LogFollower: Sendable {
    /// Each push, in order; runs under the feed's lock, so it only hands the push on.
    let receive: @Sendable (LoggedPush) -> Void
    public init(_ receive: @escaping @Sendable (LoggedPush) -> Void) { self.receive = receive }
}

/// How a member's language is found (`RoomFeed.setReaderLanguage`).
final class LanguageLookup: Sendable {
    let lookup: @Sendable (ConnectionID) -> String?
    init(_ lookup: @escaping @Sendable (ConnectionID) -> String?) { self.lookup = lookup }
}

extension Dictionary {
    /// Runs `body` on the value for `key` where it is stored, if there is one. Taken out with
    /// `var t = rooms[key]` and put back, a tracked room shared its buffers with the stored one
    /// until put back, so the first push it recorded copied the room's whole history and members.
    mutating func inPlace<R>(_ key: Key, _ body: (inout Value) -> R) -> R? {
        guard let i = index(forKey: key) else { return nil }
        return body(&values[i])
    }
}
