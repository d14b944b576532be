import ArgumentParser
import Foundation
import Histogram
import HubbubClient
import Realtime
import Synchronization
import Transport
import WebSocket

/// `venue`: V venues × P patrons, each a real client that signs up, logs in and subscribes to
/// its venue; votes are sent at R per second per venue; every `playlist.reordered` push is timed
/// from the vote that caused it (the push's `cause`) to its arrival at each subscriber.
struct VenueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "venue", abstract: "Vote → push latency and fan-out at venues.")

    @Option(help: "Server (ws:// or wss://, no path).") var url = "ws://127.0.0.1:8080"
    @Option(help: "Venues.") var venues = 1
    @Option(help: "Patrons per venue (each a connection).") var patrons = 100
    @Option(help: "Tracks per playlist.") var tracks = 50
    @Option(help: "Votes per second per venue.") var rate = 20.0
    @Option(name: .shortAndLong, help: "Measured seconds.") var duration = 10.0
    @Option(help: "Client event loops (threads).") var loops = 1
    @Option(help: "The server's pid, to read its RSS per subscribed patron.") var serverPid: Int?
    @Option(help: "Write the JSON result here too.") var json: String?
    @Option(help: "Connections opened at once while connecting.") var connectConcurrency = 200
    @Flag(help: "Offer permessage-deflate (as mobile clients do).") var compression = false

    func run() async throws {
        _ = clinuxRaiseFileLimit()
        let target = try ClientURL(url + "/ws")
        var tls: TLSContext?
        if target.secure { tls = try TLSContext.client(verify: false) }
        var config = TransportConfiguration()
        config.maxOutboundBytes = 1 << 30
        config.spinMicros = 50
        let eventLoops = try (0..<loops).map { try EventLoop.makeClientLoop(index: $0, configuration: config) }
        let stats = eventLoops.map { _ in PushStats() }
        let timing = VoteTiming()
        let options = ClientOptions(host: target.host, port: target.port, path: "/ws", tls: tls, offerDeflate: compression)
        let run = String(Int(Date().timeIntervalSince1970) % 100_000)

        // The owner and the venues.
        let owner = try await Patron.open(eventLoops[0], options, stats: stats[0], timing: timing)
        try await owner.signup("owner\(run)")
        var venueIDs: [String] = []
        for v in 0..<venues {
            let r = try await owner.ok("venue.register", ["name": .string("Load Bar \(v)"), "address": "1 Load St", "postcode": "1",
                                                           "city": "Loadville", "country": "XX", "lat": 1.0, "lon": 1.0])
            let id = r["venue"]?["id"].flatMap { if case .string(let s) = $0 { s } else { nil } } ?? ""
            let list = JSON.array((0..<tracks).map { ["uri": .string("t\($0)"), "title": .string("Track \($0)"), "artist": "Load", "explicit": false] })
            _ = try await owner.ok("venue.playlist.set", ["venue": .string(id), "playlistUri": .string("p\(id)"), "creator": "load", "tracks": list])
            venueIDs.append(id)
        }
        let before = serverPid.flatMap(ServerSampler.rssKB)
        let ids = venueIDs

        // Patrons: connect, sign up, subscribe.
        let total = venues * patrons
        let opened = Mutex<[[Patron]]>(Array(repeating: [], count: venues))
        let (count, failures) = await openPatrons(total, eventLoops, stats, timing, options) { i, p in
            try await p.signup("p\(run)x\(i)")
            _ = try await p.ok("subscribe", ["room": .string("venue:\(ids[i % ids.count])")])
            opened.withLock { $0[i % ids.count].append(p) }
        }
        let after = serverPid.flatMap(ServerSampler.rssKB)
        let crowds = opened.withLock { $0 }

        // Vote at the rate for the duration, then wait a moment for the last pushes.
        for (loop, s) in zip(eventLoops, stats) { loop.execute { _ in s.begin() } }
        let start = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (v, crowd) in crowds.enumerated() where !crowd.isEmpty {
                let id = venueIDs[v]
                group.addTask {
                    var voted = Set<String>()
                    var n = 0
                    let interval = 1.0 / rate
                    while Date().timeIntervalSince(start) < duration {
                        let p = crowd[Int.random(in: 0..<crowd.count)]
                        let track = "t\(Int.random(in: 0..<tracks))"
                        guard voted.insert(p.user + "|" + track).inserted else { continue }
                        p.vote(venue: id, track: track)
                        n += 1
                        let due = start.addingTimeInterval(Double(n) * interval)
                        let wait = due.timeIntervalSinceNow
                        if wait > 0 { try await Task.sleep(nanoseconds: UInt64(wait * 1e9)) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let measured = Date().timeIntervalSince(start)
        try await Task.sleep(nanoseconds: 1_000_000_000)
        var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        var pushes = 0, acks = 0
        var errors = failures
        for (loop, s) in zip(eventLoops, stats) {
            let snap = await withCheckedContinuation { done in loop.execute { _ in done.resume(returning: s.finish()) } }
            histogram.add(snap.histogram)
            pushes += snap.pushes
            acks += snap.acks
            for (k, v) in snap.errors { errors[k, default: 0] += v }
        }
        for loop in eventLoops { loop.shutdownClientLoop() }

        func p(_ q: Double) -> UInt64 { histogram.totalCount == 0 ? 0 : histogram.valueAtPercentile(q) }
        var object: [String: Any] = [
            "mode": "venue", "venues": venues, "patrons_per_venue": patrons, "connected": count, "seconds": measured,
            "votes_acked": acks, "votes_acked_per_s": (Double(acks) / measured).rounded(), "pushes": pushes,
            "pushes_per_s": (Double(pushes) / measured).rounded(), "p50_us": p(50), "p90_us": p(90), "p99_us": p(99),
            "p999_us": p(99.9), "max_us": histogram.totalCount == 0 ? 0 : histogram.max, "errors": errors,
        ]
        if let before, let after, count > 0 {
            object["rss_before_kb"] = before
            object["rss_after_kb"] = after
            object["kb_per_patron"] = (Double(after - before) / Double(count) * 100).rounded() / 100
        }
        let line = String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        FileHandle.standardError.write(Data("""
            venues \(venues) × patrons \(patrons) (\(count) connected), \(String(format: "%.1f", measured)) s
            votes acknowledged \(acks) (\(object["votes_acked_per_s"]!)/s), pushes delivered \(pushes) (\(object["pushes_per_s"]!)/s)
            vote → push latency µs: p50 \(p(50)) p90 \(p(90)) p99 \(p(99)) p99.9 \(p(99.9)) max \(object["max_us"]!)
            errors \(errors.isEmpty ? "none" : "\(errors)")\n
            """.utf8))
        print(line)
        if let json { try (line + "\n").write(toFile: json, atomically: true, encoding: .utf8) }
    }

    private func openPatrons(_ n: Int, _ loops: [EventLoop], _ stats: [PushStats], _ timing: VoteTiming, _ options: ClientOptions,
                             setup: @escaping @Sendable (Int, Patron) async throws -> Void) async -> (Int, [String: Int]) {
        await runBounded(count: n, concurrency: connectConcurrency, label: "patrons") { i in
            do {
                let p = try await Patron.open(loops[i % loops.count], options, stats: stats[i % loops.count], timing: timing)
                try await setup(i, p)
                return nil
            } catch {
                return String("\(error)".prefix(80))
            }
        }
    }
}

/// When each vote was sent, by "user|track", shared by all loops.
final class VoteTiming: Sendable {
    private let sent = Mutex<[String: UInt64]>([:])
    func record(_ key: String) { let now = Clock.nanos(); sent.withLock { $0[key] = now } }
    func sentAt(_ key: String) -> UInt64? { sent.withLock { $0[key] } }
}

/// Measurements of one client loop (touched only on its thread).
final class PushStats: @unchecked Sendable {
    var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
    var pushes = 0, acks = 0
    var errors: [String: Int] = [:]
    var measuring = false

    struct Snapshot: @unchecked Sendable { var histogram: Histogram<UInt64>; var pushes, acks: Int; var errors: [String: Int] }
    func begin() { histogram.reset(); pushes = 0; acks = 0; errors = [:]; measuring = true }
    func finish() -> Snapshot { measuring = false; return Snapshot(histogram: histogram, pushes: pushes, acks: acks, errors: errors) }
}

/// One simulated patron: a real WebSocket client speaking the JSON protocol.
final class Patron: WebSocketHandler, @unchecked Sendable {
    let loop: EventLoop
    let stats: PushStats
    let timing: VoteTiming
    var connection: WebSocketConnection?
    private var waiting: [Int: CheckedContinuation<JSON, Never>] = [:]
    private var nextID = 1
    private(set) var user = ""

    init(loop: EventLoop, stats: PushStats, timing: VoteTiming) {
        self.loop = loop
        self.stats = stats
        self.timing = timing
    }

    static func open(_ loop: EventLoop, _ options: ClientOptions, stats: PushStats, timing: VoteTiming) async throws -> Patron {
        let p = Patron(loop: loop, stats: stats, timing: timing)
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, Error>) in
            loop.connect(options, makeHandler: { _ in p }) { result in
                switch result {
                case .success(let c):
                    p.connection = c // on the loop thread, before any message can arrive
                    done.resume()
                case .failure(let e):
                    done.resume(throwing: e)
                }
            }
        }
        return p
    }

    /// Sends a request and waits for its reply.
    func call(_ op: String, _ args: JSON) async -> JSON {
        await withCheckedContinuation { done in
            loop.execute { _ in
                let id = self.nextID
                self.nextID += 1
                self.waiting[id] = done
                self.connection?.send(text: JSON.object([("id", .int(id)), ("op", .string(op)), ("args", args)]).encoded)
            }
        }
    }

    func ok(_ op: String, _ args: JSON) async throws -> JSON {
        let r = await call(op, args)
        guard r["ok"] == .bool(true), let result = r["result"] else { throw LoadError("\(op): \(r.encoded)") }
        return result
    }

    func signup(_ name: String) async throws {
        let r = try await ok("account.signup", ["username": .string(name), "email": .string("\(name)@load.test"), "password": "load-pass-1"])
        _ = try await ok("auth", ["token": r["token"] ?? .null])
        if case .string(let id)? = r["user"]?["id"] { user = id }
    }

    /// Sends a vote without waiting (its reply is counted when it comes).
    func vote(venue: String, track: String) {
        timing.record(user + "|" + track)
        loop.execute { _ in
            let id = -self.nextID // negative ids: fire-and-forget votes
            self.nextID += 1
            self.connection?.send(text: JSON.object([("id", .int(id)), ("op", "venue.vote"),
                                                     ("args", ["venue": .string(venue), "track": .string(track)])]).encoded)
        }
    }

    func onMessage(_ message: Message, connection: WebSocketConnection) {
        let now = Clock.nanos()
        // Pushes are the bulk: time them from a byte scan, without parsing the whole message.
        if message.data.first == UInt8(ascii: "{"), message.data.count > 8, message.data[2] == UInt8(ascii: "r") {
            guard stats.measuring, let cause = Patron.cause(message.data) else { return }
            stats.pushes += 1
            if let sent = timing.sentAt(cause) { _ = stats.histogram.record((now &- sent) / 1000) }
            return
        }
        guard let m = try? JSONParser.parse(message.data) else { return }
        if case .int(let id)? = m["id"] {
            if id < 0 {
                guard stats.measuring else { return }
                if m["ok"] == .bool(true) { stats.acks += 1 } else if case .string(let code)? = m["error"]?["code"] { stats.errors[code, default: 0] += 1 }
            } else if let w = waiting.removeValue(forKey: id) {
                w.resume(returning: m)
            }
        }
    }

    private static let causeMarker = Array(#""cause":{"action":""#.utf8)

    /// "user|track" from a push's `"cause":{"action":"…","by":"…","track":"…"}` (nil when it has none).
    static func cause(_ bytes: [UInt8]) -> String? {
        // The cause is the last field of the push: look for it from the end (memrchr-style), which
        // keeps the load client cheap per push however long the order list is.
        let m = causeMarker
        var start = bytes.count - m.count
        var found = -1
        while start >= 0 {
            if bytes[start] == m[0] && bytes[start + 1] == m[1] && bytes[start..<(start + m.count)].elementsEqual(m) {
                found = start
                break
            }
            start -= 1
        }
        guard found >= 0 else { return nil }
        var fields: [String] = []
        var i = found + m.count
        while fields.count < 3, i < bytes.count {
            // each value is a JSON string without escapes (ids and uris of the load test)
            guard let end = bytes[i...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            fields.append(String(decoding: bytes[i..<end], as: UTF8.self))
            guard let next = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: ":")) else { break }
            i = next + 2
        }
        return fields.count == 3 ? fields[1] + "|" + fields[2] : nil
    }

    func onClose(code: CloseCode, reason: String, connection: WebSocketConnection) {
        if stats.measuring { stats.errors["close_\(code.rawValue)", default: 0] += 1 }
        for (_, w) in waiting { w.resume(returning: ["ok": false, "error": ["code": "closed"]]) }
        waiting = [:]
    }
}

struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
