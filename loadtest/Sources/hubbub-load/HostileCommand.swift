import ArgumentParser
import Foundation
import HubbubClient
import Histogram
import Realtime
import WebSocket

/// `hostile`: does anyone starve the others? A bystander, logged in, sends one cheap op every
/// `--interval-ms` and times each round trip, while either `--attackers` connections that never log
/// in send the most expensive messages the limits allow (many keys, deep nesting, numbers,
/// escapes; a new connection whenever one is closed), or `--logins` connections each sign up an
/// account of their own and then log in over and over, all at once (each one a password hash;
/// the server must let that many sign-ups and in-flight log-ins come from one address). Prints the bystander's percentiles; with
/// `--max-p99-ms` exits 1 when its p99 is over it.
struct HostileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "hostile", abstract: "A bystander's latency while others attack.")

    @Option(help: "Server base URL (ws://host:port).") var url: String
    @Option(help: "Connections sending expensive messages without logging in.") var attackers = 4
    @Option(help: "Connections logging in over and over instead (0: none).") var logins = 0
    @Option(help: "Seconds to run.") var duration = 15.0
    @Option(help: "Seconds at the start not counted (connections opening).") var warmup = 2.0
    @Option(help: "Milliseconds between the bystander's requests.") var intervalMs = 50
    @Option(help: "Bytes of each hostile message (the server's limits.maxMessageBytesBeforeLogin or less).") var messageBytes = 16_000
    @Option(help: "Keys in the many-keys message (limits.maxJsonKeysPerObject is 1000).") var keys = 999
    @Option(help: "Only the message shapes whose name contains this (keys, deep, numbers, escapes).") var shape = ""
    @Option(help: "Fail when the bystander's p99 is over this many ms (0: report only).") var maxP99Ms = 0.0

    func run() async throws {
        let bystander = try await RequestClient(url: url)
        let name = "bystander-\(UInt32.random(in: 0...UInt32.max))"
        _ = try await bystander.ok("account.signup", ["username": .string(name), "email": .string("\(name)@load.test"), "password": "load-pass-1"])

        let deadline = ContinuousClock.now + .seconds(duration)
        let stats = AttackStats()
        var attacks: [Task<Void, Never>] = []
        if logins > 0 {
            for n in 0..<logins {
                attacks.append(Task { await Self.logInRepeatedly(url: url, login: "\(name)-\(n)", until: deadline, stats: stats) })
            }
        } else {
            let messages = Self.hostileMessages(bytes: messageBytes, keys: keys).filter { shape.isEmpty || $0.name.contains(shape) }.map(\.text)
            guard !messages.isEmpty else { throw ValidationError("no message shape is named like \(shape)") }
            for n in 0..<attackers {
                attacks.append(Task { await Self.attack(url: url, messages: messages, offset: n, until: deadline, stats: stats) })
            }
        }

        var histogram = Histogram<UInt64>(highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: .three)
        let counted = ContinuousClock.now + .seconds(warmup)
        var sent = 0
        while ContinuousClock.now < deadline {
            let started = ContinuousClock.now
            _ = try await bystander.ok("profile.get", [:])
            let took = ContinuousClock.now - started
            if started >= counted {
                histogram.record(UInt64(QueryCommand.seconds(took) * 1e6))
                sent += 1
            }
            let pause = Duration.milliseconds(intervalMs) - took
            if pause > .zero { try await Task.sleep(for: pause) }
        }
        for a in attacks { a.cancel() }
        for a in attacks { await a.value }
        let s = stats.snapshot()
        let what = logins > 0
            ? "\(logins) connections signing up, then logging in: \(s.loginsDone) sign-ups and log-ins done, \(s.refused) refused busy (rate_limited), log-in "
              + QueryCommand.percentiles(s.loginLatency)
            : "\(attackers) attackers: \(s.messages) hostile messages answered, \(s.connections) connections opened, \(s.closes) closed by the server"
        print(what)
        print("bystander: \(sent) requests, " + QueryCommand.percentiles(histogram))
        let p99 = Double(histogram.valueAtPercentile(99)) / 1000
        if maxP99Ms > 0 && p99 > maxP99Ms {
            throw ValidationError(String(format: "the bystander's p99 %.1f ms is over %.1f ms", p99, maxP99Ms))
        }
        if sent == 0 { throw ValidationError("the bystander got no reply in time") }
    }

    /// Requests within every limit that cost the parser the most per byte, one of each shape.
    static func hostileMessages(bytes: Int, keys: Int) -> [(name: String, text: String)] {
        func request(_ args: String) -> String { #"{"id":1,"op":"auth","args":"# + args + "}" }
        func fill(_ open: String, _ item: (Int) -> String, _ close: String, most: Int = .max) -> String {
            var out = open, n = 0
            while n < most {
                let next = (n == 0 ? "" : ",") + item(n)
                guard request(out + next + close).utf8.count <= bytes else { break }
                out += next
                n += 1
            }
            return request(out + close)
        }
        return [
            ("keys", fill("{", { "\"\(String($0, radix: 36))\":0" }, "}", most: keys)),
            ("deep", fill("{\"deep\":[", { _ in String(repeating: "[", count: 29) + "0" + String(repeating: "]", count: 29) }, "]}")),
            ("numbers", fill("{\"n\":[", { "-\($0).\($0)e-\($0 % 300)" }, "]}")),
            ("escapes", fill("{\"s\":[", { _ in #""\u00e9\ud83c\udfb5\n\"""# }, "]}")),
        ]
    }

    /// One attacker: sends its messages, each answered before the next, and opens a new
    /// connection whenever the server closes one.
    static func attack(url: String, messages: [String], offset: Int, until deadline: ContinuousClock.Instant, stats: AttackStats) async {
        var n = offset
        while ContinuousClock.now < deadline && !Task.isCancelled {
            var options = WebSocketClient.Options()
            options.subprotocols = ["hubbub.v1"]
            guard let ws = try? await WebSocketClient.connect(to: url + "/ws", options: options) else { continue }
            stats.add(connections: 1)
            var open = true
            while open && ContinuousClock.now < deadline && !Task.isCancelled {
                ws.send(text: messages[n % messages.count])
                n += 1
                switch await ws.nextEvent() {
                case .message?: stats.add(messages: 1)
                default:
                    stats.add(closes: 1)
                    open = false
                }
            }
            ws.close()
        }
    }

    /// One connection signing up as `login`, then logging in again and again, waiting as told when refused.
    static func logInRepeatedly(url: String, login: String, until deadline: ContinuousClock.Instant, stats: AttackStats) async {
        guard let client = try? await RequestClient(url: url) else { return }
        var signedUp = false
        while ContinuousClock.now < deadline && !Task.isCancelled {
            let started = ContinuousClock.now
            let request: (String, JSON) = signedUp
                ? ("account.login", ["login": .string(login), "password": "load-pass-1"])
                : ("account.signup", ["username": .string(login), "email": .string("\(login)@load.test"), "password": "load-pass-1"])
            guard let reply = try? await client.pipelined([request])[0] else { return }
            if reply["ok"] == .bool(true) {
                signedUp = true
                stats.loggedIn(after: ContinuousClock.now - started)
            } else if case .int(let wait)? = reply["error"]?["retryAfterMs"] {
                if case .string(let m)? = reply["error"]?["message"], m.contains("busy") { stats.add(refused: 1) }
                try? await Task.sleep(for: .milliseconds(wait))
            } else {
                return
            }
        }
    }
}

/// What the attackers did, counted from their tasks.
final class AttackStats: @unchecked Sendable {
    struct Snapshot {
        var messages = 0, connections = 0, closes = 0, loginsDone = 0, refused = 0
        var loginLatency = Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    }
    private let lock = NSLock()
    private var s = Snapshot()

    func add(messages: Int = 0, connections: Int = 0, closes: Int = 0, refused: Int = 0) {
        lock.withLock {
            s.messages += messages
            s.connections += connections
            s.closes += closes
            s.refused += refused
        }
    }

    func loggedIn(after d: Duration) {
        lock.withLock {
            s.loginsDone += 1
            s.loginLatency.record(UInt64(QueryCommand.seconds(d) * 1e6))
        }
    }

    func snapshot() -> Snapshot { lock.withLock { s } }
}
