import Foundation
import HubbubClient
import LoadHarness
import Realtime
import Synchronization
import Transport
import WebSocket

/// When each guest action was sent, by its cause (who, what, which track): how the push it causes
/// (`track.moved`, or fair mode's `playlist.reordered` after a request) is timed at every
/// subscriber that receives it.
final class ActionTiming: Sendable {
    private let sent = Mutex<[PushCause: (nanos: UInt64, node: Int)]>([:])
    /// The action `cause` was sent at `nanos`, to server `node` (its index among the URLs).
    func record(_ cause: PushCause, at nanos: UInt64, node: Int = 0) { sent.withLock { $0[cause] = (nanos, node) } }
    func sentAt(_ cause: PushCause) -> UInt64? { sent.withLock { $0[cause]?.nanos } }
    func sent(_ cause: PushCause) -> (nanos: UInt64, node: Int)? { sent.withLock { $0[cause] } }
}

/// One simulated client speaking Hubbub's JSON protocol over a real WebSocket: requests with
/// replies, and every push of its room validated (seq, epoch, queue order and counts) and timed.
/// Loop-confined: everything but `connect` and `call` runs on its loop's thread.
final class SimClient: WebSocketHandler, @unchecked Sendable {
    let index: Int
    let fleet: ClientFleet
    let loop: EventLoop
    let meter: LoopMeter
    let timing: ActionTiming
    private(set) var connection: WebSocketConnection?
    private var waiting: [Int: (JSON) -> Void] = [:]
    private var nextID = 1
    /// Set when the harness closes or drops the connection itself (not counted as a failure).
    var closingOnPurpose = false
    /// How many times this client moved on to the next server (several URLs) after one closed it.
    var hop = 0
    var onClose: ((SimClient) -> Void)?
    /// Sees each live push of the room after it was validated and counted, with when it arrived
    /// (a traveller's checks). Loop thread.
    var onRoomPush: ((ScannedPush, UInt64) -> Void)?
    /// Every push of the room (not replayed), with its bytes (tonight's users read their data).
    var onRawPush: (([UInt8], UInt64) -> Void)?

    var token = ""
    var userID = ""
    var userHash: UInt64 = 0
    /// The room subscribed to (nil: none yet) and what is known about it.
    private(set) var room: String?
    private var roomHash: UInt64 = 0
    var validator = PushValidator()
    var subscribed = false
    /// After a recovered re-subscribe: pushes up to this seq are replays of missed ones.
    private var replayUntil = 0
    /// Tracks this client voted for (it never votes twice for one).
    var voted: Set<UInt64> = []

    init(index: Int, fleet: ClientFleet, timing: ActionTiming) {
        self.index = index
        self.fleet = fleet
        loop = fleet.loop(index)
        meter = fleet.meter(index)
        self.timing = timing
    }

    /// The server this client's connection goes to (its index among the URLs).
    var node: Int { fleet.node(index, hop: hop) }

    /// Opens the WebSocket (from this client's source address). With several servers, one that
    /// refuses the connection (a node that died) is passed over for the next, as a load balancer
    /// would; the error is the last one's when none takes it.
    func connect() async throws {
        closingOnPurpose = false
        subscribed = false
        // A previous connection still closing (a seed's, left just before) is no longer this
        // client's: its close must not count as this one's.
        connection = nil
        var tries = 1
        while true {
            do {
                return try await connectOnce()
            } catch where tries < fleet.targetCount {
                tries += 1
                hop += 1
            }
        }
    }

    private func connectOnce() async throws {
        let options = fleet.options(index, hop: hop)
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, Error>) in
            loop.connect(options, makeHandler: { _ in self }) { result in
                switch result {
                case .success(let c):
                    self.connection = c // on the loop thread, before any message can arrive
                    self.fleet.open.add(1, ordering: .relaxed)
                    done.resume()
                case .failure(let e): done.resume(throwing: e)
                }
            }
        }
    }

    /// Sends a request and waits for its reply (a closed connection replies `closed`).
    func call(_ op: String, _ args: JSON) async -> JSON {
        await withCheckedContinuation { done in
            loop.execute { _ in self.send(op, args) { done.resume(returning: $0) } }
        }
    }

    /// The reply's result, or a LoadError naming the op and the error.
    func ok(_ op: String, _ args: JSON) async throws -> JSON {
        let r = await call(op, args)
        guard r["ok"] == .bool(true), let result = r["result"] else {
            throw LoadError("\(op): \(r["error"]?["code"]?.encoded ?? r.encoded)")
        }
        return result
    }

    /// Sends a request; `reply` runs on the loop with the reply. Loop thread only.
    func send(_ op: String, _ args: JSON, reply: @escaping (JSON) -> Void) {
        guard let connection else { return reply(Self.closedReply) }
        let id = nextID
        nextID += 1
        waiting[id] = reply
        connection.send(text: JSON.object([("id", .int(id)), ("op", .string(op)), ("args", args)]).encoded)
    }

    /// Sends an action whose outcome is measured: counted as sent, then as acknowledged (`acked`
    /// runs then, with the result) or as an error by op and code (`failed` runs then). Loop thread only.
    func sendCounted(_ op: String, _ args: JSON, acked: @escaping (JSON) -> Void = { _ in }, failed: @escaping () -> Void = {}) {
        meter.now.sent += 1
        send(op, args) { reply in
            if reply["ok"] == .bool(true) {
                self.meter.now.acked += 1
                acked(reply["result"] ?? .null)
            } else {
                let code: String = if case .string(let c)? = reply["error"]?["code"] { c } else { "unknown" }
                self.meter.now.errors["\(op): \(code)", default: 0] += 1
                failed()
            }
        }
    }

    /// `sendCounted` from any thread, awaiting the result (nil: refused, counted as an error).
    func counted(_ op: String, _ args: JSON) async -> JSON? {
        await withCheckedContinuation { done in
            loop.execute { _ in self.sendCounted(op, args, acked: { done.resume(returning: $0) }, failed: { done.resume(returning: nil) }) }
        }
    }

    static let closedReply: JSON = ["ok": false, "error": ["code": "closed", "message": "connection closed"]]

    /// Signs up (through the protocol) and keeps the token and user id.
    func signup(_ name: String) async throws {
        let args: JSON = ["username": .string(name), "email": .string("\(name)@load.test"), "password": "load-pass-1"]
        var reply = await call("account.signup", args)
        // While the server's password hashing is full it answers rate_limited: wait as told, as an app would.
        for _ in 0..<20 where reply["error"]?["code"] == "rate_limited" {
            guard case .int(let wait)? = reply["error"]?["retryAfterMs"] else { break }
            try await Task.sleep(for: .milliseconds(wait))
            reply = await call("account.signup", args)
        }
        guard reply["ok"] == .bool(true), let r = reply["result"] else {
            throw LoadError("account.signup: \(reply["error"]?["code"]?.encoded ?? reply.encoded)")
        }
        guard case .string(let t)? = r["token"], case .string(let id)? = r["user"]?["id"] else { throw LoadError("account.signup: no token") }
        token = t
        userID = id
        userHash = nameHash(id)
    }

    func auth() async throws { _ = try await ok("auth", ["token": .string(token)]) }

    /// Subscribes to `room`, with `since` when this client knew it already and `withSince`.
    /// Returns whether the server recovered the missed pushes (nil: no `since` was sent).
    @discardableResult
    func subscribe(_ name: String, withSince: Bool) async throws -> Bool? {
        let knows = room == name && validator.epoch != nil
        var args: [(String, JSON)] = [("room", .string(name))]
        if withSince && knows, let epoch = validator.epoch {
            args.append(("since", ["seq": .int(validator.seq), "epoch": .string(epoch)]))
        }
        let sentSince = args.count == 2
        let result = try await join(name, op: "subscribe", args: JSON.object(args), sentSince: sentSince)
        return sentSince ? result["recovered"] == .bool(true) : nil
    }

    /// Joins `room` with `op` (`subscribe`, or `route.subscribe`, whose room the harness knows from
    /// the corridor's id) and starts validating its pushes; returns the reply's result.
    /// `joined` runs on the loop with the result before any push that follows the reply.
    @discardableResult
    func join(_ name: String, op: String, args: JSON, sentSince: Bool = false,
              joined: @escaping @Sendable (JSON) -> Void = { _ in }) async throws -> JSON {
        // The reply and the missed pushes are handled on the loop, in arrival order: the reply's
        // handler must run before the first push after it, so it is applied there, not here.
        let r: JSON = await withCheckedContinuation { done in
            loop.execute { _ in
                self.room = name
                self.roomHash = nameHash(name)
                self.send(op, args) { reply in
                    self.applySubscribe(reply, sentSince: sentSince)
                    if reply["ok"] == .bool(true), let result = reply["result"] { joined(result) }
                    done.resume(returning: reply)
                }
            }
        }
        guard r["ok"] == .bool(true), let result = r["result"] else { throw LoadError("\(op): \(r["error"]?["code"]?.encoded ?? r.encoded)") }
        return result
    }

    private func applySubscribe(_ reply: JSON, sentSince: Bool) {
        guard reply["ok"] == .bool(true), let result = reply["result"], case .string(let epoch)? = result["epoch"],
              case .int(let seq)? = result["seq"] else { return }
        subscribed = true
        if sentSince && result["recovered"] == .bool(true) {
            replayUntil = seq
            meter.now.violations += validator.recovered(epoch: epoch)
            return
        }
        replayUntil = 0
        let state = result["snapshot"]?["playlist"].flatMap(QueueState.from(playlistState:))
        validator.reset(epoch: epoch, seq: seq, queue: state?.queue, nowPlaying: state?.nowPlaying)
    }

    // MARK: WebSocketHandler (loop thread)

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        let data = message.data
        // A push starts with {"room": a reply with {"id": (the server's field order).
        if data.count > 8, data[2] == UInt8(ascii: "r") {
            // An earlier connection of this client, still closing, is not this client's any more:
            // a push it still brings would be counted against the new connection's view. (Its
            // replies still answer their requests: ids are the client's, not the connection's.)
            guard connection === self.connection else { return }
            return onPush(data)
        }
        guard let m = try? JSONParser.parse(data), case .int(let id)? = m["id"], let w = waiting.removeValue(forKey: id) else {
            meter.now.errors["unreadable_message", default: 0] += 1
            return
        }
        w(m)
    }

    private func onPush(_ data: [UInt8]) {
        let now = Clock.nanos()
        guard let push = PushScanner.scan(data) else {
            meter.now.errors["unreadable_push", default: 0] += 1
            return
        }
        guard subscribed, push.room == roomHash else { return }
        meter.now.violations += validator.receive(push)
        if push.event == .playlistSnapshot, let parsed = try? JSONParser.parse(Array(data[push.data])),
           let state = QueueState.from(playlistState: parsed) {
            validator.adoptSnapshot(queue: state.queue, nowPlaying: state.nowPlaying)
        }
        if push.seq <= replayUntil {
            meter.now.replayed += 1
            return
        }
        meter.now.received += 1
        // A request's `track.requested` carries no cause: it is the `track.moved` after it that is timed.
        if let cause = push.cause, let sent = timing.sent(cause), now > sent.nanos {
            meter.now.recordLatency(nanos: now - sent.nanos)
            if sent.node != node { meter.now.recordCrossLatency(nanos: now - sent.nanos) }
        }
        onRoomPush?(push, now)
        onRawPush?(data, now)
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
        fleet.open.subtract(1, ordering: .relaxed)
        guard connection === self.connection else { return } // an earlier connection of this client
        if !closingOnPurpose { meter.now.closes["\(code.rawValue)", default: 0] += 1 }
        self.connection = nil
        subscribed = false
        let w = waiting
        waiting = [:]
        for (_, r) in w { r(Self.closedReply) }
        onClose?(self)
    }

    /// Closes normally (a patron leaving). Loop thread only.
    func leave() {
        closingOnPurpose = true
        connection?.close(code: .normal, reason: "bye")
    }

    /// Drops the TCP connection without a close handshake (a lost network). Loop thread only.
    func dropConnection() {
        closingOnPurpose = true
        connection?.drop()
    }
}

struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
